"""Expiry of idempotency records (the ``idempotency.purge`` job's work).

Expired records are already ignored by the API; deleting them only keeps the table
small. Runs per tenant, under that tenant's context, in batches.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.types import SYSTEM
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def purge_expired(conn: asyncpg.Connection, tenant_id: TenantId, batch: int = 1000) -> int:
    """Delete up to ``batch`` expired records of the tenant; returns how many went."""
    status: str = await conn.execute(Q["purge_expired_idempotency"], tenant_id, batch)
    return int(status.split()[-1])


KIND = "idempotency.purge"


def register(registry: Registry, every: timedelta = timedelta(hours=1)) -> None:
    """Add the per-tenant periodic ``idempotency.purge`` to ``registry``."""

    async def handle(ctx: JobContext, job: Job) -> None:
        if job.tenant_id is None:
            raise ValueError("idempotency.purge needs a tenant")
        while True:
            async with ctx.store.session(job.tenant_id, SYSTEM) as s:
                deleted = await purge_expired(s.conn, job.tenant_id)
            if deleted < 1000:
                return

    registry.periodic(KIND, every, handle, per_tenant=True)
