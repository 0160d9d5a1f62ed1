"""The composition root: builds the pool, the store and the services of one process.

Nothing else creates long-lived objects; they travel to the routes through the
lifespan state (``request.state.services``), never through module globals.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from api.settings import Settings
from domain.clock import Clock, SystemClock
from domain.ids import TenantId
from eventstore.errors import StoreUnavailable
from eventstore.pool import create_pool
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from eventstore.types import RecordedEvent
from scheduler.webhooks import enqueue_for

Q = load_queries(Path(__file__).with_name("queries.sql"))
log = logging.getLogger("helpdesk")


class UnsafeRole(Exception):
    """The runtime role would bypass row-level security, or the schema is missing."""


@dataclass
class Services:
    """Everything a process's routes and loops share."""

    settings: Settings
    pool: asyncpg.Pool
    store: EventStore
    clock: Clock
    extras: dict[str, Any] = field(default_factory=dict)

    async def close(self, timeout: float = 10.0) -> None:
        """Close the pool; connections still held after ``timeout`` are cut, so a
        stuck task can never keep the process from exiting."""
        try:
            await asyncio.wait_for(self.pool.close(), timeout)
        except TimeoutError:
            log.warning("pool close timed out after %.0f s; terminating connections", timeout)
            self.pool.terminate()


async def check_runtime_role(conn: asyncpg.Connection) -> None:
    """Refuse a role for which row-level security would silently not apply."""
    if not await conn.fetchval(Q["migrated"]):
        raise UnsafeRole("the database is not migrated: run `helpdesk migrate` first")
    row = await conn.fetchrow(Q["role_safety"])
    assert row is not None
    reasons = []
    if row["superuser"]:
        reasons.append("is a superuser")
    if row["bypassrls"]:
        reasons.append("has BYPASSRLS")
    if row["owner_member"] or row["owns"]:
        reasons.append("owns the tables (or is a member of helpdesk_owner)")
    if reasons:
        raise UnsafeRole(
            f"refusing to run as role {row['role']!r}: it {' and '.join(reasons)}, so "
            "row-level security would not isolate tenants. Point DATABASE_URL at the "
            "runtime role that `helpdesk migrate` creates."
        )


async def build_services(settings: Settings, *, clock: Clock | None = None) -> Services:
    """Create the pool and services for a process and check the role is safe."""
    if not settings.database_url:
        raise StoreUnavailable("DATABASE_URL is not set")
    pool = await create_pool(
        settings.database_url,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        connect_timeout=settings.db_connect_timeout,
        command_timeout=settings.db_command_timeout,
        pgbouncer=settings.pgbouncer,
    )
    try:
        async with pool.acquire() as conn:
            await check_runtime_role(conn)
    except BaseException:
        await pool.close()
        raise
    store = EventStore(pool, acquire_timeout=settings.db_acquire_timeout)
    services = Services(settings=settings, pool=pool, store=store, clock=clock or SystemClock())
    wire_append_observers(services)
    return services


def wire_append_observers(services: Services) -> None:
    """What every append does inside its own transaction, whoever makes it.

    Webhook deliveries are scheduled atomically with the events they announce (one
    cheap read when the tenant has none), and appends are counted for /metrics.
    """
    settings = services.settings

    async def webhooks(conn: asyncpg.Connection, tenant_id: TenantId,
                       events: list[RecordedEvent]) -> None:
        await enqueue_for(conn, tenant_id, events,
                          max_attempts=settings.webhook_max_attempts,
                          now=services.clock.now())

    async def count(_conn: asyncpg.Connection, _tenant_id: TenantId,
                    events: list[RecordedEvent]) -> None:
        metrics = services.extras.get("metrics")
        if metrics is not None:
            metrics.appends.inc(len(events))

    services.store.observers[:] = [webhooks, count]
