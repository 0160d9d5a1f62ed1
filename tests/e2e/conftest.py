"""Fixtures for the HTTP surface: the app over the test's pool, called in-process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from starlette.types import Receive, Scope, Send

from api.app import create_app
from api.bootstrap import Services
from api.settings import Settings
from domain.clock import SystemClock
from eventstore.store import EventStore


@asynccontextmanager
async def in_process_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client calling ``app`` in-process with its lifespan run around it
    (ASGITransport alone neither runs the lifespan nor passes its state)."""
    async with app.router.lifespan_context(app) as state:
        lifespan_state: dict[str, Any] = dict(state or {})

        async def with_state(scope: Scope, receive: Receive, send: Send) -> None:
            scope["state"] = dict(lifespan_state)
            await app(scope, receive, send)

        transport = httpx.ASGITransport(app=with_state)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http


@pytest.fixture
def services(pool: asyncpg.Pool) -> Services:
    """Services over the test's runtime-role pool (the app does not close them)."""
    settings = Settings(database_url="postgresql://unused.invalid/helpdesk")
    return Services(settings=settings, pool=pool, store=EventStore(pool), clock=SystemClock())


@pytest.fixture
async def http(services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """A client for the app built on ``services``; pass ``headers=bearer(key)``."""
    async with in_process_client(create_app(services.settings, services=services)) as client:
        yield client


def bearer(secret: str) -> dict[str, str]:
    """The Authorization header for an API key secret."""
    return {"Authorization": f"Bearer {secret}"}
