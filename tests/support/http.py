"""The one in-process HTTP client of the tests: httpx over the app, with the app's
lifespan running (ASGITransport alone does not run the lifespan or pass its state)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send


@asynccontextmanager
async def asgi_client(app: FastAPI, *, client: tuple[str, int] = ("127.0.0.1", 40000),
                      ) -> AsyncIterator[httpx.AsyncClient]:
    """Run the lifespan, then hand out a client whose requests see its state and come
    from ``client`` (the address rate limits count against)."""
    async with app.router.lifespan_context(app) as state:
        lifespan_state: dict[str, Any] = dict(state or {})

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope["state"] = dict(lifespan_state)
            await app(scope, receive, send)

        transport = httpx.ASGITransport(app=with_state, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http
