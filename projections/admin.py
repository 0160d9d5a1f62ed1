"""Operating projections: lag per (projection, tenant), freshness, and rebuilds.

A rebuild runs into the live tables while the API keeps answering: one transaction
locks the checkpoint (waiting for a batch in flight), deletes the tenant's rows and
sets the checkpoint to 0 with ``rebuilding = true``; batches then catch up from seq 0
(any running projector helps). Answers meanwhile say ``rebuilding: true`` and show
the lag; the flag clears when the checkpoint reaches the head.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import arm
from projections.projector import Projector

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class Freshness:
    """How current a tenant's read model is."""

    as_of_seq: int
    head: int
    rebuilding: bool

    @property
    def lag(self) -> int:
        """Events appended but not yet applied."""
        return max(0, self.head - self.as_of_seq)


@dataclass(frozen=True, slots=True)
class Status:
    projection: str
    tenant_id: TenantId
    tenant_name: str
    last_seq: int
    head: int
    rebuilding: bool
    updated_at: datetime

    @property
    def lag(self) -> int:
        return max(0, self.head - self.last_seq)


async def freshness(conn: asyncpg.Connection, projection: str, tenant_id: TenantId) -> Freshness:
    """The checkpoint of ``projection`` for the tenant armed on ``conn``."""
    row = await conn.fetchrow(Q["checkpoint"], projection, tenant_id)
    if row is None:
        return Freshness(0, 0, False)
    return Freshness(row["last_seq"] or 0, row["head"], bool(row["rebuilding"]))


async def status(pool: asyncpg.Pool) -> list[Status]:
    """Every checkpoint with its tenant head (worker-armed read)."""
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await conn.execute(Q["arm_worker"])
        rows = await conn.fetch(Q["status"])
    return [Status(r["projection"], TenantId(r["tenant_id"]), r["tenant_name"], r["last_seq"],
                   r["head"], r["rebuilding"], r["updated_at"]) for r in rows]


async def heads(pool: asyncpg.Pool) -> dict[TenantId, int]:
    """Every tenant's head seq (worker-armed read)."""
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await conn.execute(Q["arm_worker"])
        return {TenantId(r["tenant_id"]): r["seq"] for r in await conn.fetch(Q["heads"])}


async def tenant_ids(pool: asyncpg.Pool) -> list[TenantId]:
    """Every tenant (worker-armed read)."""
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await conn.execute(Q["arm_worker"])
        return [TenantId(r["id"]) for r in await conn.fetch(Q["tenant_ids"])]


async def reset(projector: Projector, name: str, tenant_id: TenantId) -> int:
    """Delete the tenant's rows and set its checkpoint to 0, rebuilding; returns the head."""
    projection = projector.projections[name]
    await projector.ensure_checkpoints()
    async with projector.pool.acquire() as conn, conn.transaction():
        await arm(conn, tenant_id, None)
        # Checkpoint first: its row lock waits out a batch in flight, so the DELETE
        # below (a fresh snapshot) sees that batch's rows and removes them too.
        moved = await conn.fetchval(Q["reset"], name, tenant_id)
        if moved is None:
            raise LookupError(f"no checkpoint for {name} and tenant {tenant_id}")
        await projection.reset(conn, tenant_id)
        head: int = (await freshness(conn, name, tenant_id)).head
    return head


async def rebuild(
    projector: Projector,
    name: str,
    tenant_id: TenantId,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Rebuild ``name`` for one tenant from seq 0; ``progress(done_seq, head)`` after
    each batch. Returns the seq reached."""
    head = await reset(projector, name, tenant_id)
    if progress is not None:
        progress(0, head)
    reached = 0
    # Read the next batch while this one is applied: a rebuild is bound by the round
    # trips, and events already committed cannot change under the read-ahead.
    ahead = asyncio.create_task(projector.read_ahead(tenant_id, 0))
    try:
        while True:
            rows = await ahead
            ahead = asyncio.create_task(
                projector.read_ahead(tenant_id, rows[-1]["seq"] if rows else reached))
            batch = await projector.run_once(tenant_id=tenant_id, names=[name],
                                             prefetched=rows)
            if batch is not None:
                reached = batch.to_seq
                if progress is not None:
                    progress(reached, batch.head)
                continue
            fresh = await _freshness(projector, name, tenant_id)
            if not fresh.rebuilding:
                return fresh.as_of_seq
            # Another worker holds the checkpoint right now; take turns with it.
            await asyncio.sleep(0.05)
    finally:
        ahead.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await ahead


async def _freshness(projector: Projector, name: str, tenant_id: TenantId) -> Freshness:
    async with projector.pool.acquire() as conn, conn.transaction(readonly=True):
        await arm(conn, tenant_id, None)
        return await freshness(conn, name, tenant_id)


async def lag_totals(pool: asyncpg.Pool, projections: list[str]) -> dict[str, int]:
    """Events each projection has yet to apply, summed over every tenant."""
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await conn.execute(Q["arm_worker"])
        rows = await conn.fetch(Q["lag_totals"], projections)
    return {r["projection"]: int(r["lag"]) for r in rows}
