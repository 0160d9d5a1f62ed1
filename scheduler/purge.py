"""``jobs.purge``: delete finished jobs once they are no longer worth keeping.

Done jobs go after ``done_retention``; dead ones are kept longer (``dead_retention``)
because their last error is what an operator reads when something keeps failing.
Deletes run in bounded batches so a large backlog never becomes one long transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from scheduler.jobs import Q
from scheduler.queue import Job, worker_transaction
from scheduler.registry import JobContext, Registry

KIND = "jobs.purge"


@dataclass(frozen=True, slots=True)
class PurgePolicy:
    done_retention: timedelta = timedelta(days=1)
    dead_retention: timedelta = timedelta(days=14)
    every: timedelta = timedelta(hours=1)
    batch: int = 5000


async def purge_finished(ctx: JobContext, policy: PurgePolicy) -> int:
    """Delete finished jobs past their retention; returns how many went."""
    now = ctx.clock.now()
    total = 0
    while True:
        async with worker_transaction(ctx.pool) as conn:
            status: str = await conn.execute(
                Q["purge_finished"], now - policy.done_retention, now - policy.dead_retention,
                policy.batch,
            )
        deleted = int(status.rsplit(" ", 1)[1])
        total += deleted
        if deleted < policy.batch:
            return total


def register(registry: Registry, policy: PurgePolicy | None = None) -> None:
    """Add the periodic ``jobs.purge`` kind to ``registry``."""
    chosen = policy or PurgePolicy()

    async def handle(ctx: JobContext, _job: Job) -> None:
        await purge_finished(ctx, chosen)

    registry.periodic(KIND, chosen.every, handle)
