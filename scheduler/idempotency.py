"""Expiry of idempotency records (the ``idempotency.purge`` job's work), and what an
erasure does to them.

Expired records are already ignored by the API; deleting them only keeps the table
small. Runs per tenant, under that tenant's context, in batches.

A record keeps the answer of a command sent with an ``Idempotency-Key`` (a ticket's
document, requester included). Erasing a contact withholds every answer that names
the contact or one of its tickets (``withhold_answers``): the record stays, so a
replay does not run the command afresh, and answers 410 ``subject_erased``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

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


ERASED_ANSWER: dict[str, Any] = {
    "status": 410, "code": "subject_erased", "extra": {},
    "detail": "the answer to this request named a contact erased since, and is not kept"}
"""What a replay answers once its recorded answer was withheld by an erasure."""


async def withhold_answers(conn: asyncpg.Connection, tenant_id: TenantId,
                           names: Iterable[str]) -> int:
    """Drop every recorded answer of the tenant that holds one of ``names`` (ids and
    e-mails, compared regardless of case), keeping its record with the refusal
    ``ERASED_ANSWER`` to replay; returns how many. Scans the tenant's unexpired
    records (a day's worth)."""
    texts = sorted({n.lower() for n in names if n})
    status: str = await conn.execute(Q["withhold_idempotency_answers"], tenant_id, texts,
                                     ERASED_ANSWER)
    return int(status.split()[-1])


KIND = "idempotency.purge"


def register(registry: Registry, every: timedelta = timedelta(hours=1)) -> None:
    """Add the per-tenant periodic ``idempotency.purge`` to ``registry``."""

    async def handle(ctx: JobContext, job: Job) -> None:
        if job.tenant_id is None:
            raise ValueError("idempotency.purge needs a tenant")
        while True:
            async with ctx.store.unit_of_work(job.tenant_id, SYSTEM) as s:
                deleted = await purge_expired(s.conn, job.tenant_id)
            if deleted < 1000:
                return

    registry.periodic(KIND, every, handle, per_tenant=True)
