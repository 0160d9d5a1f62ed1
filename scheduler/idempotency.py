"""Expiry of idempotency records (the ``idempotency.purge`` job's work).

Expired records are already ignored by the API; deleting them only keeps the table
small. Runs per tenant, under that tenant's context, in batches.
"""

from __future__ import annotations

from pathlib import Path

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def purge_expired(conn: asyncpg.Connection, tenant_id: TenantId, batch: int = 1000) -> int:
    """Delete up to ``batch`` expired records of the tenant; returns how many went."""
    status: str = await conn.execute(Q["purge_expired_idempotency"], tenant_id, batch)
    return int(status.split()[-1])
