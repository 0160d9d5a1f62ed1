"""Reads that tolerate lag, on a streaming replica when it is fit, else on the primary.

``Replica`` owns the pool on ``READ_DATABASE_URL`` and measures how far the replica is
behind, every ``probe_seconds``:

1. the primary's flushed WAL position (``pg_current_wal_flush_lsn()``; a replica can
   only receive what the primary has flushed), remembered with the moment it was read;
2. then the replica's replayed position (``pg_last_wal_replay_lsn()``).

The delay is how long ago the primary had first flushed WAL the replica has not
replayed yet: ``now`` less the moment of the oldest remembered sample beyond the
replayed position (0 when the replica has replayed the latest sample). This is the
walsender's own way of measuring lag, at the resolution of the probe. It never
counts idle time as delay, which ``now() - pg_last_xact_replay_timestamp()`` would:
on a primary that was idle for ten minutes, one commit not yet replayed reads as ten
minutes behind that way.

States: ``ok`` (reads go there), ``lagging`` (more than ``max_lag`` seconds behind),
``degraded`` (unreachable, refused, not a standby, or a read there just failed).
``Reads.run`` sends a read to the replica only while it is ``ok``, and runs it again on
the primary if the replica fails it, so a replica never makes a read fail; a read
that failed there marks the replica degraded at once, until the next probe finds it
well, so later reads do not wait on it. Connections to it are bounded by the pool's
connect timeout and the store's acquire timeout.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

import asyncpg

from eventstore.background import cancel_and_wait
from eventstore.errors import UNAVAILABLE, StoreUnavailable
from eventstore.store import EventStore

log = logging.getLogger("helpdesk.replica")
T = TypeVar("T")

PRIMARY_POSITION = "SELECT (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint"
REPLICA_POSITION = ("SELECT pg_is_in_recovery() AS standby, "
                    "(pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint AS replayed")
# Errors a standby gives a read that the primary would have answered: a query
# cancelled by a conflict with recovery (snapshot or buffer-pin conflicts).
RECOVERY_CONFLICTS = frozenset({"40001", "40P01"})

State = Literal["ok", "lagging", "degraded"]


class ReplicaRefused(StoreUnavailable):
    """The replica answered, but a connection to it was refused by the caller's own
    check (a role that would bypass row-level security)."""


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """The replica as last measured."""

    state: State
    delay_seconds: float | None  # None: not measured (degraded)
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class Source:
    """Where a lag-tolerant read was answered, and the replica's delay then."""

    name: Literal["primary", "replica"]
    lag_seconds: float

    @property
    def replica(self) -> bool:
        return self.name == "replica"


PRIMARY = Source("primary", 0.0)


class Replica:
    """A streaming replica's pool, its store, and the measure of its delay."""

    def __init__(self, pool: asyncpg.Pool, primary: EventStore, *, max_lag: float,
                 probe_seconds: float = 1.0, acquire_timeout: float | None = 5.0,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.store = EventStore(pool, acquire_timeout=acquire_timeout,
                                keyring=primary.keyring)
        self.primary = primary
        self.max_lag = max_lag
        self.probe_seconds = probe_seconds
        self._now = now
        self._samples: deque[tuple[float, int]] = deque()  # (when, primary flushed LSN)
        self._status = ReplicaStatus("degraded", None, "not measured yet")
        self._task: asyncio.Task[None] | None = None
        self.error: BaseException | None = None  # why the last probe failed

    @property
    def status(self) -> ReplicaStatus:
        return self._status

    @property
    def usable(self) -> bool:
        return self._status.state == "ok"

    async def start(self) -> None:
        """Measure once (bounded), then keep measuring in the background."""
        await self.probe()
        self._task = asyncio.create_task(self._loop(), name="replica-probe")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None

    def failed(self, exc: BaseException) -> None:
        """A read on the replica just failed: send reads to the primary until a probe
        finds the replica well again."""
        if self._status.state != "degraded":
            log.warning("replica read failed, reading from the primary: %s", exc)
        self._status = ReplicaStatus("degraded", None, _describe(exc))

    async def probe(self) -> ReplicaStatus:
        """Measure the delay now (at most about one connect timeout)."""
        try:
            async with self.primary.connection() as conn:
                flushed = int(await conn.fetchval(PRIMARY_POSITION))
            seen = self._now()
            self._remember(seen, flushed)
            async with self.store.connection() as conn:
                row = await conn.fetchrow(REPLICA_POSITION)
        except Exception as exc:  # any failure: cannot measure, so do not read there
            self.error = exc
            self._status = ReplicaStatus("degraded", None, _describe(exc))
            return self._status
        assert row is not None
        self.error = None
        if not row["standby"]:
            self._status = ReplicaStatus(
                "degraded", None, "READ_DATABASE_URL is not a standby (pg_is_in_recovery() "
                "is false): a promoted or separate server may have diverged")
            return self._status
        delay = round(self.delay(int(row["replayed"])), 3)
        state: State = "ok" if delay <= self.max_lag else "lagging"
        self._status = ReplicaStatus(state, delay,
                                     None if state == "ok" else f"{delay:.1f} s behind")
        return self._status

    def delay(self, replayed: int) -> float:
        """Seconds since the primary first flushed WAL past ``replayed``, as far as the
        remembered samples tell (0: the replica has replayed the latest one)."""
        for when, flushed in self._samples:
            if flushed > replayed:
                return max(0.0, self._now() - when)
        return 0.0

    def _remember(self, when: float, flushed: int) -> None:
        # Keep what can tell a delay up to twice the limit; older samples only matter
        # to say "more than that", which the oldest kept one still says.
        self._samples.append((when, flushed))
        horizon = when - 2 * self.max_lag - 5 * self.probe_seconds
        while len(self._samples) > 1 and self._samples[1][0] < horizon:
            self._samples.popleft()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.probe_seconds)
            before = self._status.state
            status = await self.probe()
            if status.state != before:
                log.info("replica is %s%s", status.state,
                         f" ({status.detail})" if status.detail else "")


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:200]


def _replica_trouble(exc: BaseException) -> bool:
    """An error that says the replica could not answer, not that the read is wrong."""
    if isinstance(exc, (StoreUnavailable, *UNAVAILABLE)):
        return True
    return isinstance(exc, asyncpg.PostgresError) and exc.sqlstate in RECOVERY_CONFLICTS


class Reads:
    """Where reads that tolerate lag go: analytics, audit verification, export,
    history and as-of, projection status (and ``/v1/changes`` when it exists).

    Writes, idempotency records and ticket reads never come here: they use the
    primary's store, so a client reads its own writes.
    """

    def __init__(self, primary: EventStore, replica: Replica | None) -> None:
        self.primary = primary
        self.replica = replica

    def choose(self) -> tuple[EventStore, Source]:
        """The store to read from now, for a read that cannot be run twice (an export
        already streaming its lines): the replica while it is ``ok``."""
        r = self.replica
        if r is not None and r.usable:
            return r.store, Source("replica", r.status.delay_seconds or 0.0)
        return self.primary, PRIMARY

    async def run(self, read: Callable[[EventStore], Awaitable[T]]) -> tuple[T, Source]:
        """``read`` on the replica while it is ``ok``; on the primary otherwise, or
        again on the primary if the replica could not answer it."""
        store, source = self.choose()
        if source.replica:
            assert self.replica is not None
            try:
                return await read(store), source
            except Exception as exc:
                if not _replica_trouble(exc):
                    raise
                self.replica.failed(exc)
        return await read(self.primary), PRIMARY
