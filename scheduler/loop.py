"""The scheduler loop, top to bottom.

    seed periodic jobs
    repeat until stopped:
        complete the jobs that finished and claim up to the free slots (one transaction)
        start a task per claimed job (its handler runs under the job's tenant)
        beat the heartbeat
        sleep until: a NOTIFY, a job finishing, the next run_at, or the poll interval
    stop: claim nothing more, let running jobs finish within the grace period, release
    the rest (ready again, unlocked) so another worker takes them at once

A side task renews the lease of running jobs. Due-ness comes from the injected clock
(tests move a ManualClock and call ``wake()``); leases and sleeps are real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass

from domain.clock import Clock
from eventstore.listener import Listener
from eventstore.store import EventStore
from scheduler.queue import Backoff, Job, Queue
from scheduler.registry import JobContext, Registry

JOBS_CHANNEL = "helpdesk_jobs"
EVENTS_CHANNEL = "helpdesk_events"

log = logging.getLogger("helpdesk.scheduler")


@dataclass(frozen=True, slots=True)
class LoopConfig:
    """Tuning of one loop; the defaults suit an API process with a pool of 10."""

    concurrency: int = 8
    poll_interval: float = 5.0
    lease_seconds: float = 30.0
    grace_seconds: float = 10.0
    retry_base_seconds: float = 5.0
    retry_cap_seconds: float = 3600.0

    @property
    def stall_after(self) -> float:
        """A heartbeat older than this means the loop is stuck."""
        return max(3 * self.poll_interval, 15.0)


def new_worker_id() -> str:
    """Unique per loop instance: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Scheduler:
    """Claims jobs and runs their handlers, at most ``concurrency`` at a time."""

    def __init__(
        self,
        store: EventStore,
        clock: Clock,
        registry: Registry,
        *,
        config: LoopConfig | None = None,
        listen_dsn: str | None = None,
        worker_id: str | None = None,
    ) -> None:
        self.config = config or LoopConfig()
        self.clock = clock
        self.registry = registry
        self.worker_id = worker_id or new_worker_id()
        self.queue = Queue(
            store.pool, self.worker_id, lease_seconds=self.config.lease_seconds,
            backoff=Backoff(self.config.retry_base_seconds, self.config.retry_cap_seconds),
        )
        self.ctx = JobContext(store=store, pool=store.pool, clock=clock, queue=self.queue)
        # The payload is the earliest run_at among new ready rows; empty means none.
        # helpdesk_events as well: jobs inserted with the events they follow (webhook
        # deliveries) are announced after commit by the events' own notice, not by
        # a NOTIFY inside the appending transaction (migration 0112 says why).
        self.listener = Listener(
            listen_dsn, (JOBS_CHANNEL, EVENTS_CHANNEL),
            lambda payload: self.wake() if payload else None,
            self.wake,  # after a (re)connect: anything added while not listening
        ) if listen_dsn else None
        self.heartbeat: float | None = None  # time.monotonic() of the last good round
        self._wake = asyncio.Event()
        self._stopping = False
        self._finished = asyncio.Event()
        self._running: dict[int, asyncio.Task[None]] = {}
        self._succeeded: list[int] = []
        self._seeded = False

    # -- control ---------------------------------------------------------------

    def wake(self) -> None:
        """Look for due work now (a NOTIFY, a finished job, a test that moved the clock)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop claiming, finish or release running jobs, and wait for the loop to end."""
        self._stopping = True
        self.ctx.stopping.set()
        self.wake()
        await self._finished.wait()

    def status(self) -> str:
        """``ok`` while the heartbeat is fresh, else ``stalled``."""
        if self.heartbeat is None:
            return "stalled"
        age = time.monotonic() - self.heartbeat
        return "ok" if age <= self.config.stall_after else "stalled"

    # -- the loop ----------------------------------------------------------------

    async def run(self) -> None:
        """Run until ``stop()``."""
        if self.listener is not None:
            self.listener.start()
        renewer = asyncio.create_task(self._renew_leases(), name="scheduler-renew")
        failures = 0
        try:
            while not self._stopping:
                try:
                    if not self._seeded:
                        await self._seed_periodic()
                    claimed, free = await self._settle_and_claim()
                    for job in claimed:
                        self._start(job)
                    idle = await self._idle_time(len(claimed), free)
                    self.heartbeat = time.monotonic()
                    failures = 0
                except Exception as exc:  # Postgres down or a bad round: back off, retry
                    failures += 1
                    log.warning("scheduler round failed (%s): %s", type(exc).__name__, exc)
                    idle = min(0.2 * 2**failures, self.config.poll_interval)
                await self._sleep(idle)
        finally:
            await self._drain()
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
            if self.listener is not None:
                await self.listener.stop()
            self._finished.set()

    async def _seed_periodic(self) -> None:
        now = self.clock.now()
        for p in self.registry.periods.values():
            if not p.per_tenant:
                await self.queue.ensure(None, p.kind, p.dedupe_key, now)
        self._seeded = True

    async def _settle_and_claim(self) -> tuple[list[Job], int]:
        done, self._succeeded = self._succeeded, []
        free = self.config.concurrency - len(self._running)
        try:
            _, claimed = await self.queue.complete_and_claim(
                done, self.clock.now(), free, periodic=self.registry.every()
            )
        except BaseException:
            self._succeeded[:0] = done  # not completed: try again next round
            raise
        return claimed, free

    async def _idle_time(self, claimed: int, free: int) -> float:
        """How long to sleep before the next round (a wake-up cuts it short)."""
        if self._succeeded:
            return 0.0
        if free <= 0 or claimed == free:
            # Full, or there may be more due: a finishing job wakes us.
            return 0.0 if free > 0 else self.config.poll_interval
        next_run = await self.queue.next_due()
        if next_run is None:
            return self.config.poll_interval
        wait = (next_run - self.clock.now()).total_seconds()
        # Due but not claimed: another worker holds it; look again shortly.
        return min(max(wait, 0.01), self.config.poll_interval)

    async def _sleep(self, seconds: float) -> None:
        if seconds > 0 and not self._wake.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=seconds)
        self._wake.clear()

    # -- running one job -----------------------------------------------------------

    def _start(self, job: Job) -> None:
        job = self.registry.budget(job)
        self._running[job.id] = asyncio.create_task(self._execute(job),
                                                    name=f"job-{job.kind}-{job.id}")

    async def _execute(self, job: Job) -> None:
        try:
            handler = self.registry.handler(job.kind)
            await handler(self.ctx, job)
        except asyncio.CancelledError:
            raise  # released (shutdown) or lost its lease: not a failure of the job
        except Exception as exc:
            log.info("job %s (%s) attempt %s failed: %s", job.id, job.kind, job.attempts, exc)
            try:
                await self.queue.fail(job, f"{type(exc).__name__}: {exc}", self.clock.now())
            except Exception as db_exc:  # the lease runs out and the job is retried
                log.warning("could not record the failure of job %s: %s", job.id, db_exc)
        else:
            self._succeeded.append(job.id)
        finally:
            self._running.pop(job.id, None)
            self.wake()

    async def _renew_leases(self) -> None:
        """Keep the lease of running jobs; a job whose lease was lost is cancelled,
        since another worker may already be running it."""
        while True:
            await asyncio.sleep(self.config.lease_seconds / 3)
            running = list(self._running)
            held = running + self._succeeded
            try:
                kept = await self.queue.renew(held)
            except Exception as exc:
                log.warning("lease renewal failed: %s", exc)
                continue
            # Only the jobs asked about: one started while the renewal was on its way
            # holds a fresh lease, and is not in the answer.
            for job_id in {j for j in running if j in self._running} - kept:
                log.warning("lost the lease of job %s; cancelling it here", job_id)
                self._running[job_id].cancel()

    async def _drain(self) -> None:
        """Graceful stop: wait for running jobs up to the grace period, release the rest."""
        tasks = {task: job_id for job_id, task in self._running.items()}
        pending: set[asyncio.Task[None]] = set()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.config.grace_seconds)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        try:
            if self._succeeded:
                await self.queue.complete(self._succeeded, self.clock.now(),
                                          periodic=self.registry.every())
                self._succeeded = []
            if pending:
                released = await self.queue.release([tasks[t] for t in pending])
                log.info("released %d unfinished job(s)", len(released))
        except Exception as exc:  # their leases run out and another worker takes them
            log.warning("could not settle jobs at shutdown: %s", exc)
