"""Group commit of one-shot appends, per tenant.

Within a tenant, appends commit one at a time (the tenant head row lock is held until
the commit's WAL flush). When several one-shot appends for the same tenant arrive
while one is in flight, the next transaction carries all of them, so the flush is
paid once per batch rather than once per append. Each append keeps its own meaning:
its own expected version, all of its events or none, its own actor, its own error.

Callers wait for their own result only; the batch runs in a task of its own so a
caller that is cancelled never leaves the others without an answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.errors import ConcurrencyError
from eventstore.sqlfile import load_queries
from eventstore.types import NewEvent, RecordedEvent, StoreActor

Q = load_queries(Path(__file__).with_name("queries.sql"))

MAX_BATCH = 256


@dataclass(eq=False)
class Pending:
    """One caller's append, waiting for its batch."""

    actor: StoreActor
    stream_id: UUID
    expected_version: int | None
    events: Sequence[NewEvent]
    result: asyncio.Future[list[RecordedEvent]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class TenantBatcher:
    """Collects one-shot appends per tenant and runs them as group commits."""

    def __init__(self, run_one: Any, record: Any) -> None:
        # run_one(tenant, pending) -> list[RecordedEvent]: the single-append path.
        # record(row) -> RecordedEvent.
        self._run_one = run_one
        self._record = record
        self._queues: dict[TenantId, list[Pending]] = {}
        self._locks: dict[TenantId, asyncio.Lock] = {}

    async def append(self, pool: asyncpg.Pool, tenant_id: TenantId,
                     item: Pending) -> list[RecordedEvent]:
        self._queues.setdefault(tenant_id, []).append(item)
        lock = self._locks.setdefault(tenant_id, asyncio.Lock())
        async with lock:
            if not item.result.done():
                queue = self._queues.pop(tenant_id, [])
                batch, rest = queue[:MAX_BATCH], queue[MAX_BATCH:]
                if rest:
                    self._queues.setdefault(tenant_id, [])[:0] = rest
                if item not in batch:  # only if the queue was longer than a batch
                    batch.append(item)
                await asyncio.shield(asyncio.ensure_future(
                    self._run(pool, tenant_id, batch)))
        # The lock stays in the map: a released lock may still have waiters, and a
        # second lock for the same tenant would let two batches run side by side.
        return await item.result

    async def _run(self, pool: asyncpg.Pool, tenant_id: TenantId,
                   batch: list[Pending]) -> None:
        if len(batch) == 1:
            await self._settle_alone(tenant_id, batch[0])
            return
        try:
            async with pool.acquire() as conn:
                rows = await conn.fetch(Q["append_batch"], *_arguments(tenant_id, batch))
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
            # A failure of the whole batch could be one item's fault (a constraint,
            # an oversized payload): fall back to one transaction per item, so each
            # caller gets its own answer.
            for item in batch:
                await self._settle_alone(tenant_id, item)
            return
        by_item: dict[int, list[RecordedEvent]] = {}
        for row in rows:
            index = row["item"] - 1
            if row["actual"] is not None:
                item = batch[index]
                item.result.set_exception(
                    ConcurrencyError(item.stream_id, item.expected_version, row["actual"]))
            else:
                by_item.setdefault(index, []).append(self._record(row))
        for index, item in enumerate(batch):
            if not item.result.done():
                item.result.set_result(sorted(by_item.get(index, []), key=lambda e: e.version))

    async def _settle_alone(self, tenant_id: TenantId, item: Pending) -> None:
        try:
            item.result.set_result(await self._run_one(tenant_id, item))
        except BaseException as exc:  # the caller gets whatever went wrong
            item.result.set_exception(exc)


def _arguments(tenant_id: TenantId, batch: list[Pending]) -> tuple[Any, ...]:
    items, types, versions, data, metadata = [], [], [], [], []
    for i, p in enumerate(batch, start=1):
        for e in p.events:
            items.append(i)
            types.append(e.type)
            versions.append(e.schema_version)
            data.append(e.data)
            metadata.append(e.metadata)
    return (
        tenant_id, [p.actor.kind for p in batch], [p.actor.id for p in batch],
        [p.stream_id for p in batch], [p.expected_version for p in batch],
        items, types, versions, data, metadata,
    )
