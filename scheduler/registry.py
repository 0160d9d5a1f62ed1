"""Job kinds and their handlers.

A handler is ``async def handle(ctx: JobContext, job: Job) -> None``. It returns to
complete the job and raises to fail it (retried with backoff, ``dead`` after
``max_attempts``). Handlers must be idempotent: a job whose worker died is run again
after its lease, so re-check the condition instead of trusting that it still holds.

Another module adds a kind with::

    registry.register("webhook.deliver", deliver)

and a periodic one (re-scheduled under its dedupe key one period after each run)
with ``registry.periodic("jobs.purge", timedelta(hours=1), purge)``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

import asyncpg

from domain.clock import Clock
from eventstore.store import EventStore
from scheduler.queue import Job, Queue


@dataclass(frozen=True, slots=True)
class JobContext:
    """What a handler may use: the store (units of work of a tenant), the pool, the clock, and
    ``stopping``, set when the loop stops: a handler that waits for minutes (an IMAP
    IDLE) ends on it instead of holding up the grace period."""

    store: EventStore
    pool: asyncpg.Pool
    clock: Clock
    queue: Queue
    stopping: asyncio.Event = field(default_factory=asyncio.Event)


Handler = Callable[[JobContext, Job], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Periodic:
    """A global job kind that runs every ``every`` once seeded."""

    kind: str
    every: timedelta
    dedupe_key: str
    per_tenant: bool = False


class UnknownKind(Exception):
    """A claimed job has a kind no handler is registered for."""


@dataclass
class Registry:
    """``{kind: handler}`` plus the periodic kinds and their periods."""

    handlers: dict[str, Handler] = field(default_factory=dict)
    periods: dict[str, Periodic] = field(default_factory=dict)
    budgets: dict[str, int] = field(default_factory=dict)

    def register(self, kind: str, handler: Handler, *, max_attempts: int | None = None) -> None:
        """Run ``handler`` for jobs of ``kind``; registering a kind twice is an error.

        ``max_attempts`` gives every job of the kind that many tries, whatever its row
        says (the row's own budget otherwise): for kinds whose jobs are inserted where
        the process's settings are not known (a trigger, say).
        """
        if kind in self.handlers:
            raise ValueError(f"job kind {kind!r} is already registered")
        if max_attempts is not None and max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.handlers[kind] = handler
        if max_attempts is not None:
            self.budgets[kind] = max_attempts

    def periodic(self, kind: str, every: timedelta, handler: Handler,
                 *, dedupe_key: str | None = None, per_tenant: bool = False) -> None:
        """Register a kind that re-schedules itself ``every`` after each run.

        The scheduler seeds one global job (no tenant) of the kind at start unless one
        is already live. A ``per_tenant`` kind gets one job per tenant instead, seeded
        by the periodic ``jobs.seed_tenants`` job (``scheduler.tenant_seed``).
        """
        if every <= timedelta(0):
            raise ValueError("a period must be positive")
        self.register(kind, handler)
        self.periods[kind] = Periodic(kind, every, dedupe_key or kind, per_tenant)

    def budget(self, job: Job) -> Job:
        """``job`` with its kind's registered attempt budget, if the kind has one."""
        attempts = self.budgets.get(job.kind)
        return job if attempts is None else dataclasses.replace(job, max_attempts=attempts)

    def handler(self, kind: str) -> Handler:
        try:
            return self.handlers[kind]
        except KeyError:
            raise UnknownKind(f"no handler for job kind {kind!r}") from None

    def every(self) -> dict[str, timedelta]:
        """Period per periodic kind, for re-scheduling at completion."""
        return {k: p.every for k, p in self.periods.items()}
