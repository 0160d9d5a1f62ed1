"""Dump read-model rows (as the superuser, every tenant) and reset them for a refold."""

from __future__ import annotations

from typing import Any

import asyncpg

from projections import admin
from projections.projector import Projector

TABLES = {
    "analytics_tickets": "tenant_id, ticket_id",
    "analytics_daily": "tenant_id, day, priority, source",
    "analytics_agent_daily": "tenant_id, day, agent_id",
    "analytics_summary_cells": "tenant_id, dim, span, start_day, key",
}
NONZERO = {"analytics_summary_cells": "tickets <> 0"}
"""Cells a ticket left stay at 0, and histograms keep the length they had: how the work
was split decides which remain, so those are left out and histograms trimmed."""


async def dump(admin_url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every analytics row of every tenant, in key order."""
    conn = await asyncpg.connect(admin_url)
    try:
        return {t: [tuple(_trimmed(v) for v in r) for r in await conn.fetch(
                    f"SELECT * FROM {t} WHERE {NONZERO.get(t, 'true')} ORDER BY {k}")]
                for t, k in TABLES.items()}
    finally:
        await conn.close()


def _trimmed(value: Any) -> Any:
    """A histogram without its trailing zeros; any other value as it is."""
    if isinstance(value, list):
        while value and value[-1] == 0:
            value = value[:-1]
    return value


async def checkpoints(admin_url: str) -> dict[Any, tuple[int, int]]:
    """(tenant) -> (analytics last_seq, tenant head)."""
    conn = await asyncpg.connect(admin_url)
    try:
        rows = await conn.fetch(
            "SELECT h.tenant_id, coalesce(c.last_seq, 0) AS last_seq, h.seq AS head"
            "  FROM tenant_heads h LEFT JOIN projection_checkpoints c"
            "    ON c.tenant_id = h.tenant_id AND c.projection = 'analytics'")
        return {r["tenant_id"]: (r["last_seq"], r["head"]) for r in rows}
    finally:
        await conn.close()


async def refold_alone(pool: Any, tenants: list[Any], batch_size: int) -> None:
    """Reset every tenant and fold its events from seq 0 with one projector alone."""
    single = Projector(pool, batch_size=batch_size)
    for t in tenants:
        await admin.reset(single, "analytics", t)
    await single.drain()
