"""The projector loop: claim a (projection, tenant) that is behind, apply a batch, commit.

One batch is one transaction, read top to bottom in ``run_once``:

1. arm ``app.worker`` and claim one checkpoint row behind its tenant head with
   ``FOR UPDATE SKIP LOCKED`` (other workers skip it; the lock lasts to commit);
2. disarm the worker setting and arm the claimed tenant, so events are read and read
   models written under that tenant's own row-level security;
3. read up to ``batch_size`` events after the checkpoint in seq order, parse them
   through the mapper, hand those the projection handles to ``apply_batch``;
4. move the checkpoint with a compare-and-set from the value claimed, and commit.

A crash anywhere before the commit rolls the batch and the checkpoint back together,
so an event's effect lands exactly once. Within a tenant, events commit in seq order
(the head row lock), so reading ``seq > last_seq`` never skips a later commit.

Wake-ups: LISTEN ``helpdesk_events`` on a dedicated, self-reconnecting connection
(``eventstore.listener``); a poll every ``poll_interval`` seconds covers lost
notifications.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import asyncpg

from domain.ids import TenantId
from domain.mapper import from_stored
from eventstore.listener import Listener
from eventstore.notifier import CHANNEL
from eventstore.sqlfile import load_queries
from eventstore.store import arm
from projections.analytics import AnalyticsProjection
from projections.base import Envelope, Projection

Q = load_queries(Path(__file__).with_name("queries.sql"))
log = logging.getLogger("helpdesk.projector")



def default_projections() -> list[Projection]:
    """Every async projection of the service."""
    return [AnalyticsProjection()]


class CheckpointMoved(Exception):
    """The compare-and-set found the checkpoint elsewhere than where the batch began."""


@dataclass(frozen=True, slots=True)
class Batch:
    """What one ``run_once`` did."""

    projection: str
    tenant_id: TenantId
    from_seq: int
    to_seq: int
    head: int
    applied: int


BatchHook = Callable[[Batch], Awaitable[None]]


class Projector:
    """Runs projections for every tenant; any number of these may share a database."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        projections: Sequence[Projection] | None = None,
        *,
        batch_size: int = 500,
        poll_interval: float = 1.0,
        listen_dsn: str | None = None,
        concurrency: int = 1,
        before_commit: BatchHook | None = None,
        after_commit: BatchHook | None = None,
    ) -> None:
        self.pool = pool
        self.projections = {p.name: p for p in projections or default_projections()}
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.listen_dsn = listen_dsn
        self.concurrency = concurrency
        # before_commit runs with the batch applied and the checkpoint moved but not
        # committed (tests kill a worker there); after_commit once it is durable.
        self.before_commit = before_commit
        self.after_commit = after_commit
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._listener: Listener | None = None
        self._known: set[str] = set()  # tenants whose checkpoints exist
        self._unknown: set[str] = set()  # tenants notified since the last ensure

    # --- one unit of work ------------------------------------------------------------

    async def ensure_checkpoints(self) -> None:
        """Create the missing checkpoint rows (one per projection and tenant)."""
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(Q["arm_worker"])
            await conn.execute(Q["ensure_checkpoints"], list(self.projections))

    async def run_once(
        self, *, tenant_id: TenantId | None = None, names: Sequence[str] | None = None,
        prefetched: Sequence[asyncpg.Record] | None = None,
    ) -> Batch | None:
        """Claim one (projection, tenant) behind its head and apply one batch.

        ``prefetched`` (a rebuild's read-ahead of ``read_events``) is used only when it
        starts right after the claimed checkpoint. Returns what was done, or None when
        nothing claimable is behind.
        """
        wanted = list(names) if names is not None else list(self.projections)
        claim = None
        async with self.pool.acquire() as conn:
            try:
                async with conn.transaction():
                    await conn.execute(Q["arm_worker"])
                    claim = await conn.fetchrow(Q["claim"], wanted, tenant_id)
                    if claim is None:
                        return None
                    tenant = TenantId(claim["tenant_id"])
                    await conn.execute(Q["arm_tenant"], str(tenant))
                    batch = await self._apply(conn, self.projections[claim["projection"]],
                                              tenant, claim["last_seq"], claim["head"],
                                              prefetched)
                    if self.before_commit is not None:
                        await self.before_commit(batch)
            except Exception:
                if claim is not None:
                    await self._defer(conn, claim["projection"], claim["tenant_id"])
                raise
            if self.after_commit is not None:
                await self.after_commit(batch)
            return batch

    async def _defer(self, conn: asyncpg.Connection, projection: str, tenant: TenantId) -> None:
        with contextlib.suppress(Exception):
            async with conn.transaction():
                await conn.execute(Q["arm_worker"])
                await conn.execute(Q["defer"], projection, tenant)

    async def _apply(
        self, conn: asyncpg.Connection, projection: Projection, tenant: TenantId,
        last_seq: int, head: int, prefetched: Sequence[asyncpg.Record] | None = None,
    ) -> Batch:
        # Events are immutable and commit in seq order, so rows read ahead on another
        # connection are exactly what this read would return, if they start at our seq.
        if prefetched and prefetched[0]["seq"] == last_seq + 1:
            rows = list(prefetched)
        else:
            rows = await conn.fetch(Q["read_events"], tenant, last_seq, self.batch_size)
        envelopes = [
            Envelope(tenant, r["seq"], r["stream_id"],
                     from_stored(r["type"], r["schema_version"], r["data"]),
                     r["actor_kind"], r["actor_id"], r["version"])
            for r in rows if r["type"] in projection.handles
        ]
        through = await projection.apply_batch(conn, tenant, envelopes)
        if through is not None:
            envelopes = [e for e in envelopes if e.seq <= through]
        to_seq = through if through is not None else rows[-1]["seq"] if rows else last_seq
        moved = await conn.fetchval(Q["advance"], projection.name, tenant, last_seq, to_seq,
                                    head)
        if moved is None:
            raise CheckpointMoved(f"{projection.name}/{tenant} left {last_seq} under a batch")
        return Batch(projection.name, tenant, last_seq, to_seq, head, len(envelopes))

    async def read_ahead(self, tenant: TenantId, after_seq: int) -> list[asyncpg.Record]:
        """Read the batch after ``after_seq`` on a connection of its own."""
        async with self.pool.acquire() as conn, conn.transaction(readonly=True):
            await arm(conn, tenant, None)
            rows: list[asyncpg.Record] = await conn.fetch(Q["read_events"], tenant, after_seq,
                                                          self.batch_size)
        return rows

    async def drain(self, *, tenant_id: TenantId | None = None,
                    names: Sequence[str] | None = None) -> int:
        """Run batches until nothing claimable is behind; returns how many ran."""
        done = 0
        while await self.run_once(tenant_id=tenant_id, names=names) is not None:
            done += 1
        return done

    # --- the loop --------------------------------------------------------------------

    async def start(self) -> None:
        """Start the listener and ``concurrency`` worker tasks."""
        if self.listen_dsn is not None:
            # After a (re)connect, look at once: notifications in between were lost.
            self._listener = Listener(self.listen_dsn, CHANNEL, self._notified,
                                      self._wake.set)
            self._listener.start()
        self._tasks = [asyncio.create_task(self._loop(i), name=f"projector-{i}")
                       for i in range(self.concurrency)]

    async def stop(self) -> None:
        """Stop claiming; a batch in flight finishes (or rolls back) first."""
        self._stopping.set()
        self._wake.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None

    async def _loop(self, index: int) -> None:
        failures = 0
        timed_out = True
        while not self._stopping.is_set():
            self._wake.clear()
            try:
                # Checkpoints of new tenants: made on a poll, or when a notification
                # names a tenant this process has not yet made sure of.
                if index == 0 and (timed_out or self._unknown):
                    named, self._unknown = self._unknown, set()
                    await self.ensure_checkpoints()
                    self._known |= named
                while not self._stopping.is_set() and await self.run_once() is not None:
                    pass
                failures = 0
            except Exception as exc:  # the loop must outlive any one batch
                failures += 1
                log.warning("projector batch failed (%s); retrying", exc)
            timeout = self.poll_interval * min(2 ** failures, 30)
            try:
                await asyncio.wait_for(self._wake.wait(), timeout)
                timed_out = False
            except TimeoutError:
                timed_out = True

    def _notified(self, payload: str) -> None:
        # The payload names the tenant; any worker may take any tenant, so it is
        # enough to wake every task and let the claim query decide.
        tenant = payload.partition(":")[0]
        if tenant not in self._known:
            self._unknown.add(tenant)
        self._wake.set()


class HasPool(Protocol):
    pool: asyncpg.Pool
    settings: Any


async def start_projector(services: HasPool) -> Callable[[], Awaitable[None]]:
    """Start the projector loop of this process; returns the coroutine that stops it.

    Reads ``projector_batch_size``, ``projector_poll_interval`` and
    ``projector_concurrency`` from the settings when present.
    """
    settings = services.settings
    projector = Projector(
        services.pool,
        batch_size=getattr(settings, "projector_batch_size", 500),
        poll_interval=getattr(settings, "projector_poll_interval", 1.0),
        concurrency=getattr(settings, "projector_concurrency", 1),
        listen_dsn=settings.listen_database_url or settings.database_url,
    )
    await projector.start()
    log.info("projector started: %s", ", ".join(projector.projections))
    return projector.stop


__all__ = ["Batch", "CheckpointMoved", "Projector", "default_projections", "start_projector"]
