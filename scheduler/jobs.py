"""Scheduling and cancelling jobs inside the caller's transaction.

A command schedules its timers in the same transaction as its events, so a timer
exists exactly when the events that call for it committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.types import Write

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def schedule(
    conn: asyncpg.Connection,
    tenant_id: TenantId | None,
    kind: str,
    run_at: datetime,
    *,
    dedupe_key: str | None = None,
    payload: dict[str, Any] | None = None,
    max_attempts: int = 10,
    write: Write | None = None,
) -> int | None:
    """Add a job, or move the live job with the same dedupe key to ``run_at``.

    Returns the job id, or None when a job with that key is running right now (always
    None by ``write``, which runs or defers the statement: ``eventstore.types.Write``).
    """
    if write is not None:
        await write(Q["schedule"], tenant_id, kind, dedupe_key, payload or {}, run_at,
                    max_attempts)
        return None
    job_id: int | None = await conn.fetchval(
        Q["schedule"], tenant_id, kind, dedupe_key, payload or {}, run_at, max_attempts
    )
    return job_id


async def schedule_many(conn: asyncpg.Connection, tenant_id: TenantId, kind: str,
                        due: Sequence[tuple[str, datetime, dict[str, Any]]], *,
                        max_attempts: int = 10, write: Write | None = None) -> None:
    """``schedule`` for several jobs of one ``kind``, each (dedupe key, run_at,
    payload), in one statement; by ``write`` when given. Keys must differ."""
    if not due:
        return
    args = (tenant_id, kind, [key for key, _, _ in due],
            [orjson.dumps(payload).decode() for _, _, payload in due],
            [run_at.isoformat() for _, run_at, _ in due], max_attempts)
    await (write or conn.execute)(Q["schedule_many"], *args)


async def cancel(conn: asyncpg.Connection, tenant_id: TenantId, dedupe_key: str, *,
                 write: Write | None = None) -> bool:
    """Remove a ready job by its dedupe key; True if there was one (always False by
    ``write``, which runs or defers the statement)."""
    if write is not None:
        await write(Q["cancel"], tenant_id, dedupe_key)
        return False
    status: str = await conn.execute(Q["cancel"], tenant_id, dedupe_key)
    return status != "DELETE 0"
