"""``jobs.seed_tenants``: give every tenant its own job of each per-tenant periodic kind.

Per-tenant periodic kinds (``tickets.sweep``, ``idempotency.purge``) run under the
tenant's own context, one job per tenant. Creating a tenant gives it its jobs in the
same transaction (``handlers.tenants``, through ``ensure_tenant_jobs``); this global
job, itself periodic, makes sure each tenant keeps a live one, which covers tenants
created before a kind existed and a job removed by hand. Existing jobs are left where
they are (insert-if-absent on the dedupe key).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

import asyncpg

from domain.ids import TenantId
from scheduler.jobs import Q
from scheduler.queue import Job, worker_transaction
from scheduler.registry import JobContext, Registry

KIND = "jobs.seed_tenants"


async def ensure_tenant_jobs(conn: asyncpg.Connection, tenant_id: TenantId,
                             jobs: Iterable[tuple[str, str]], at: datetime) -> None:
    """Give the tenant a live job of each ``(kind, dedupe_key)``, due at ``at``, unless
    it has one; in the caller's transaction (armed for the tenant, or as the worker)."""
    for kind, dedupe_key in jobs:
        await conn.execute(Q["ensure"], tenant_id, kind, dedupe_key, {}, at, 10)


def register(registry: Registry, every: timedelta = timedelta(minutes=10)) -> None:
    """Add the seeder; it seeds the per-tenant kinds registered in ``registry``."""

    async def seed(ctx: JobContext, _job: Job) -> None:
        kinds = [p for p in registry.periods.values() if p.per_tenant]
        if not kinds:
            return
        now = ctx.clock.now()
        async with worker_transaction(ctx.pool) as conn:
            tenants = [r["id"] for r in await conn.fetch(Q["tenant_ids"])]
            for tenant_id in tenants:
                await ensure_tenant_jobs(conn, tenant_id,
                                         [(p.kind, p.dedupe_key) for p in kinds], now)

    registry.periodic(KIND, every, seed)
