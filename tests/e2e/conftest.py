"""Fixtures for the HTTP surface."""

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
    """An httpx client calling ``app`` in-process, with its lifespan run around it
    (ASGITransport alone does not run the lifespan or pass its state)."""
    async with app.router.lifespan_context(app) as state:
        lifespan_state: dict[str, Any] = dict(state or {})

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope["state"] = dict(lifespan_state)
            await app(scope, receive, send)

        transport = httpx.ASGITransport(app=with_state, client=client)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http
