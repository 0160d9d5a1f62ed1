"""``jobs.seed_tenants``: give every tenant its own job of each per-tenant periodic kind.

Per-tenant periodic kinds (``tickets.sweep``, ``idempotency.purge``) run under the
tenant's own context, one job per tenant. This global job, itself periodic, makes
sure each tenant has a live one, so a new tenant is covered within one period
without the code that creates tenants knowing about jobs. Existing jobs are left
where they are (insert-if-absent on the dedupe key).
"""

from __future__ import annotations

from datetime import timedelta

from scheduler.jobs import Q
from scheduler.queue import Job, worker_transaction
from scheduler.registry import JobContext, Registry

KIND = "jobs.seed_tenants"


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
                for p in kinds:
                    await conn.execute(Q["ensure"], tenant_id, p.kind, p.dedupe_key, {},
                                       now, 10)

    registry.periodic(KIND, every, seed)
