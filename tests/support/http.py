"""An httpx client over the app in-process, with the app's lifespan running."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send


@asynccontextmanager
async def asgi_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """Run the lifespan, then hand out a client whose requests see its state."""
    async with app.router.lifespan_context(app) as state:

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope = {**scope, "state": dict(state or {})}
            await app(scope, receive, send)

        transport = httpx.ASGITransport(app=with_state)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client
