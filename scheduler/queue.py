"""The queue client: claim, renew, complete, fail and release jobs across tenants.

Every call here runs in its own short transaction with ``app.worker`` armed, the one
setting under which row-level security lets a connection see every tenant's jobs.
Handlers never run under it: they open their tenant's own session.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import asyncpg

from domain.ids import TenantId
from scheduler.jobs import Q


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job, as its handler sees it."""

    id: int
    tenant_id: TenantId | None
    kind: str
    dedupe_key: str | None
    payload: dict[str, Any]
    run_at: datetime
    attempts: int
    max_attempts: int


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential backoff with jitter: attempt n waits ``base * 2**(n-1)`` capped at
    ``cap``, scaled by a random factor in [0.5, 1].

    Half of the delay is fixed so retries keep growing (attempt n+1 never waits less
    than attempt n), and the random half spreads a burst of failures apart.
    """

    base: float = 5.0
    cap: float = 3600.0

    def delay(self, attempt: int, rng: random.Random | None = None) -> timedelta:
        full = min(self.cap, self.base * 2 ** max(attempt - 1, 0))
        factor = 0.5 + 0.5 * (rng or random).random()
        return timedelta(seconds=full * factor)


@asynccontextmanager
async def worker_transaction(
    pool: asyncpg.Pool, *, claiming: bool = False
) -> AsyncIterator[asyncpg.Connection]:
    """One transaction with cross-tenant access to ``jobs`` (and only to jobs).

    ``claiming`` also pins the planner to the claim's index scan (see queries.sql).
    """
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(Q["arm_claimer" if claiming else "arm_worker"])
        yield conn


def _job(row: asyncpg.Record) -> Job:
    return Job(
        id=row["id"],
        tenant_id=TenantId(row["tenant_id"]) if row["tenant_id"] is not None else None,
        kind=row["kind"],
        dedupe_key=row["dedupe_key"],
        payload=row["payload"],
        run_at=row["run_at"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
    )


class Queue:
    """Queue operations of one worker (``worker_id`` marks the jobs it holds)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        worker_id: str,
        *,
        lease_seconds: float = 30.0,
        backoff: Backoff | None = None,
    ) -> None:
        self.pool = pool
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.backoff = backoff or Backoff()

    async def claim(self, now: datetime, limit: int) -> list[Job]:
        """Take up to ``limit`` jobs due at ``now`` (and jobs whose lease ran out)."""
        _, jobs = await self.complete_and_claim([], now, limit)
        return jobs

    async def complete_and_claim(
        self,
        done_ids: Sequence[int],
        now: datetime,
        limit: int,
        *,
        periodic: dict[str, timedelta] | None = None,
    ) -> tuple[list[int], list[Job]]:
        """Complete ``done_ids`` and claim up to ``limit`` more in one transaction.

        The loop's steady state is "finish some, take some": sharing one transaction
        halves the round trips per batch.
        """
        if not done_ids and limit <= 0:
            return [], []
        async with worker_transaction(self.pool, claiming=limit > 0) as conn:
            completed = await self._complete_in(conn, done_ids, now, periodic)
            rows = []
            if limit > 0:
                rows = await conn.fetch(Q["claim"], now, limit, self.lease_seconds,
                                        self.worker_id)
        return completed, sorted((_job(r) for r in rows), key=lambda j: (j.run_at, j.id))

    async def renew(self, job_ids: Sequence[int]) -> set[int]:
        """Extend the lease of jobs still held; returns the ids that are still ours."""
        if not job_ids:
            return set()
        async with worker_transaction(self.pool) as conn:
            rows = await conn.fetch(Q["renew"], list(job_ids), self.worker_id,
                                    self.lease_seconds)
        return {r["id"] for r in rows}

    async def complete(
        self, job_ids: Sequence[int], now: datetime, *, periodic: dict[str, timedelta] | None = None
    ) -> list[int]:
        """Mark jobs done in one statement; returns the ids that were ours to complete.

        A completed job whose kind is in ``periodic`` is scheduled again, under its
        dedupe key, one period after ``now``, in the same transaction: a periodic job
        can neither vanish (crash between the two) nor double.
        """
        if not job_ids:
            return []
        async with worker_transaction(self.pool) as conn:
            return await self._complete_in(conn, job_ids, now, periodic)

    async def _complete_in(
        self,
        conn: asyncpg.Connection,
        job_ids: Sequence[int],
        now: datetime,
        periodic: dict[str, timedelta] | None,
    ) -> list[int]:
        if not job_ids:
            return []
        rows = await conn.fetch(Q["complete"], list(job_ids), self.worker_id, now)
        for row in rows:
            every = (periodic or {}).get(row["kind"])
            if every is not None:
                await conn.execute(Q["ensure"], row["tenant_id"], row["kind"],
                                   row["dedupe_key"], row["payload"], now + every,
                                   row["max_attempts"])
        return [r["id"] for r in rows]

    async def fail(self, job: Job, error: str, now: datetime) -> str | None:
        """Record a failed attempt: retry later with backoff, or ``dead`` when used up.

        Returns the job's new status, or None if the job was no longer ours.
        """
        retry_at = now + self.backoff.delay(job.attempts)
        async with worker_transaction(self.pool) as conn:
            status: str | None = await conn.fetchval(
                Q["fail"], job.id, self.worker_id, now, retry_at, error[:4000],
                job.max_attempts)
        return status

    async def release(self, job_ids: Sequence[int]) -> list[int]:
        """Give unfinished jobs back (graceful stop): ready again, unlocked."""
        if not job_ids:
            return []
        async with worker_transaction(self.pool) as conn:
            rows = await conn.fetch(Q["release"], list(job_ids), self.worker_id)
        return [r["id"] for r in rows]

    async def next_due(self) -> datetime | None:
        """The earliest ready job's ``run_at`` (None if there is none)."""
        async with worker_transaction(self.pool) as conn:
            row = await conn.fetchrow(Q["next_due"])
        assert row is not None
        value: datetime | None = row["next_run_at"]
        return value

    async def ensure(
        self,
        tenant_id: TenantId | None,
        kind: str,
        dedupe_key: str,
        run_at: datetime,
        *,
        payload: dict[str, Any] | None = None,
        max_attempts: int = 10,
    ) -> int | None:
        """Add a job unless a live one with this key exists; returns the new id or None."""
        async with worker_transaction(self.pool) as conn:
            job_id: int | None = await conn.fetchval(
                Q["ensure"], tenant_id, kind, dedupe_key, payload or {}, run_at, max_attempts
            )
        return job_id
