"""Data upgrades that ``helpdesk migrate`` runs after the SQL migrations.

Some changes need Python to bring existing rows up to date (a read model rendered by
the domain's code, say). Each step runs per tenant, as the owner role under that
tenant's context with the operator as actor (so any event it appends is on the audit
trail), and is idempotent: it only touches what is not yet up to date, so running
``helpdesk migrate`` again changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from domain.ids import TenantId
from eventstore.pool import connect
from eventstore.sqlfile import load_queries
from eventstore.store import Session, arm
from handlers.tenants import operator_actor
from projections.inline import fill_views
from projections.search import index_missing

Q = load_queries(Path(__file__).with_name("queries.sql"))

Step = Callable[[Session], Awaitable[int]]


async def _ticket_views(uow: Session) -> int:
    return await fill_views(uow.conn, uow.tenant_id)


async def _search_index(uow: Session) -> int:
    return await index_missing(uow.conn, uow.tenant_id)


STEPS: tuple[tuple[str, Step], ...] = (
    ("ticket documents rendered", _ticket_views),
    ("tickets indexed for search", _search_index),
)
"""Every step, in the order they run; each returns how many rows it changed."""


async def upgrade(owner_dsn: str, *, log: Callable[[str], None] = lambda _m: None
                  ) -> dict[str, int]:
    """Run every step for every tenant; returns rows changed per step."""
    changed = {name: 0 for name, _ in STEPS}
    conn = await connect(owner_dsn)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await conn.execute(Q["arm_worker"])
            tenants = [TenantId(r["id"]) for r in await conn.fetch(Q["all_tenant_ids"])]
        for tenant in tenants:
            async with conn.transaction():
                await conn.execute("SET LOCAL ROLE helpdesk_owner")
                await arm(conn, tenant, operator_actor())
                session = Session(conn, tenant)
                for name, step in STEPS:
                    changed[name] += await step(session)
                await session.flush()
    finally:
        await conn.close()
    for name, n in changed.items():
        if n:
            log(f"{name}: {n}")
    return changed


__all__ = ["STEPS", "upgrade"]
