"""HTTP fixtures: the real app on the test's database, driven in-process by httpx.

``ASGITransport`` does not run the lifespan, so the app is wrapped to hand each
request the services the lifespan would have (built on the ``pool`` fixture).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from api.app import create_app
from api.bootstrap import Services, wire_append_observers
from api.keys import IssuedKey, insert_key
from api.operator import NewTenant, operator_actor
from api.settings import Settings
from domain.clock import SystemClock
from domain.ids import TenantId
from eventstore.pool import connect
from eventstore.store import EventStore, arm
from tests.support.pg import TestDatabase

TEST_SETTINGS = Settings(database_url="postgresql://unused/unused", max_body_bytes=65_536,
                         _env_file=None)  # type: ignore[call-arg]


def with_services(app: ASGIApp, services: Services) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = dict(scope)
            scope["state"] = {"services": services}
        await app(scope, receive, send)

    return wrapped


@pytest.fixture
def services(pool: asyncpg.Pool) -> Services:
    svc = Services(settings=TEST_SETTINGS, pool=pool, store=EventStore(pool),
                   clock=SystemClock())
    wire_append_observers(svc)
    return svc


@pytest.fixture
def app(services: Services) -> Any:
    return create_app(TEST_SETTINGS, services=services)


@pytest.fixture
async def http(app: Any, services: Services) -> AsyncIterator[httpx.AsyncClient]:
    """An unauthenticated client; pass ``headers=auth(key)`` per request."""
    transport = httpx.ASGITransport(app=with_services(app, services))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        yield client


def auth(key: IssuedKey | str, **extra: str) -> dict[str, str]:
    secret = key if isinstance(key, str) else key.secret
    return {"Authorization": f"Bearer {secret}", **extra}


@dataclass
class Owner:
    """Does what only the operator may: issue keys of any role, add agents, revoke."""

    db: TestDatabase

    async def _run(self, tenant_id: TenantId, fn: Callable[[asyncpg.Connection],
                   Awaitable[Any]]) -> Any:
        conn = await connect(self.db.admin_url)
        try:
            async with conn.transaction():
                await conn.execute("SET LOCAL ROLE helpdesk_owner")
                await arm(conn, tenant_id, operator_actor())
                return await fn(conn)
        finally:
            await conn.close()

    async def key(self, tenant_id: TenantId, role: str, agent_id: uuid.UUID | None = None
                  ) -> IssuedKey:
        return await self._run(tenant_id, lambda c: insert_key(
            c, tenant_id, name=f"{role} key", role=role, agent_id=agent_id))  # type: ignore[no-any-return]

    async def agent(self, tenant_id: TenantId, *, active: bool = True) -> uuid.UUID:
        agent_id = uuid.uuid4()
        await self._run(tenant_id, lambda c: c.execute(
            "INSERT INTO agents (tenant_id, id, email, name, active, created_at, updated_at) "
            "VALUES ($1, $2, $3, 'Agent', $4, now(), now())",
            tenant_id, agent_id, f"{agent_id}@example.com", active))
        return agent_id

    async def revoke(self, tenant_id: TenantId, key_id: uuid.UUID) -> None:
        await self._run(tenant_id, lambda c: c.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2",
            tenant_id, key_id))


@pytest.fixture
def owner(db: TestDatabase) -> Owner:
    return Owner(db)


@pytest.fixture
async def tenant(make_tenant: Callable[[str], Awaitable[NewTenant]]) -> NewTenant:
    return await make_tenant("Acme")


NEW_TICKET = {
    "subject": "Printer on fire",
    "body": "It is really on fire.",
    "requester": {"email": "ann@example.com", "name": "Ann"},
    "priority": "high",
    "source": "email",
    "tags": ["hardware"],
}


def bearer(secret: str) -> dict[str, str]:
    """The Authorization header for an API key secret."""
    return auth(secret)


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
