"""HTTP fixtures: the real app on the test's database, with its real lifespan, driven
in-process by httpx (``tests.support.http.asgi_client``).

The lifespan builds the process's parts through the composition root, connected as
the runtime role; ``services`` is what it built. ``owner`` does what only the
operator may, through the same handlers as the API, so every change it makes is on
the audit trail.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi import FastAPI

from api.app import create_app
from api.config import ProcessSettings
from api.root import Services
from domain.clock import SystemClock
from domain.ids import TenantId
from domain.values import Role
from eventstore.store import UnitOfWork
from handlers import agents, api_keys
from handlers.api_keys import IssuedKey
from handlers.tenants import NewTenant, operator_unit_of_work
from tests.support import browser as chromium
from tests.support.http import asgi_client
from tests.support.pg import TestDatabase

if TYPE_CHECKING:
    from playwright.async_api import Browser

__all__ = ["NEW_TICKET", "Owner", "app_settings", "asgi_client", "auth", "bearer"]


def app_settings(db: TestDatabase, **overrides: Any) -> ProcessSettings:
    """ProcessSettings of an app on ``db`` as the runtime role (no .env, small pool, cheap
    password hashes: tests that time hashing ask for the real parameters)."""
    values: dict[str, Any] = {"database_url": db.runtime_url, "max_body_bytes": 65_536,
                              "db_pool_min": 1, "password_hash_memory_kib": 1024,
                              "password_hash_time_cost": 1, **overrides}
    return ProcessSettings(_env_file=None, **values)  # type: ignore[call-arg]


@pytest.fixture
def settings(db: TestDatabase) -> ProcessSettings:
    return app_settings(db)


@pytest.fixture
def app(settings: ProcessSettings) -> FastAPI:
    return create_app(settings)


@pytest.fixture
async def http(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An unauthenticated client; pass ``headers=auth(key)`` per request."""
    async with asgi_client(app) as client:
        yield client


@pytest.fixture
def services(app: FastAPI, http: httpx.AsyncClient) -> Services:
    """The parts the running app's lifespan built."""
    built: Services = app.state.services
    return built


def auth(key: IssuedKey | str, **extra: str) -> dict[str, str]:
    secret = key if isinstance(key, str) else key.secret
    return {"Authorization": f"Bearer {secret}", **extra}


@dataclass
class Owner:
    """Does what only the operator may (issue keys of any role, add agents, revoke), as
    the owner role, through the handlers: each change is an event like over the API."""

    db: TestDatabase

    async def _run(self, tenant_id: TenantId, fn: Callable[[UnitOfWork], Awaitable[Any]]) -> Any:
        async with operator_unit_of_work(self.db.admin_url, tenant_id) as uow:
            return await fn(uow)

    async def key(self, tenant_id: TenantId, role: str, agent_id: uuid.UUID | None = None
                  ) -> IssuedKey:
        command = api_keys.IssueKey(name=f"{role} key", role=Role(role), agent_id=agent_id,
                                    at=SystemClock().now())
        issued: IssuedKey = await self._run(tenant_id,
                                            lambda uow: api_keys.issue_key(uow, command))
        return issued

    async def agent(self, tenant_id: TenantId, *, active: bool = True,
                    role: Role = Role.AGENT) -> uuid.UUID:
        agent_id = uuid.uuid4()
        now = SystemClock().now()

        async def add(uow: UnitOfWork) -> None:
            await agents.add_agent(uow, agents.AddAgent(
                email=f"{agent_id}@example.com", name="Agent", role=role, at=now,
                agent_id=agent_id))
            if not active:
                await agents.update_agent(uow, agents.UpdateAgent(
                    agent_id=agent_id, active=False, at=now))

        await self._run(tenant_id, add)
        return agent_id

    async def set_active(self, tenant_id: TenantId, agent_id: uuid.UUID, active: bool) -> None:
        command = agents.UpdateAgent(agent_id=agent_id, active=active,
                                     at=SystemClock().now())
        await self._run(tenant_id, lambda uow: agents.update_agent(uow, command))

    async def revoke(self, tenant_id: TenantId, key_id: uuid.UUID) -> None:
        await self._run(tenant_id, lambda uow: api_keys.revoke_key(uow, key_id,
                                                                     SystemClock().now()))


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


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests' screenshots go: a temporary folder unless
    ``scripts/screenshots`` asks (tests/support/browser.py)."""
    return chromium.screenshot_dir(tmp_path_factory.mktemp("screenshots"))


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """One headless Chromium for every browser test of the run (console and customer
    pages); each test opens its own contexts (profiles) in it."""
    from playwright.async_api import async_playwright  # only where a browser runs

    path = chromium.chromium()
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=str(path), args=chromium.ARGS)
        try:
            yield launched
        finally:
            await launched.close()
