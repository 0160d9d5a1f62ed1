"""Test-only job kinds that record every run in a table, and the table itself.

``test.record`` inserts a ``started`` row, then (when ``HOLD_JOBS`` is set in the
environment, or the payload asks for ``sleep`` seconds) waits, then inserts a
``finished`` row. ``test.fail`` always raises.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

import asyncpg

from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

TABLES = """
CREATE TABLE job_runs (
    job_id   bigint NOT NULL,
    worker   text NOT NULL,
    attempt  integer NOT NULL,
    phase    text NOT NULL,
    at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
GRANT SELECT, INSERT ON job_runs TO helpdesk_runtime;
"""

INSERT = "INSERT INTO job_runs (job_id, worker, attempt, phase) VALUES ($1, $2, $3, $4)"
STARTED = "SELECT count(*) FROM job_runs WHERE phase = 'started'"


async def admin_connection(admin_url: str) -> AsyncIterator[asyncpg.Connection]:
    """The job_runs table made, then a superuser connection to read it (a fixture body)."""
    await create_tables(admin_url)
    conn = await asyncpg.connect(admin_url)
    yield conn
    await conn.close()


async def create_tables(admin_url: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(TABLES)
    finally:
        await conn.close()


async def record(ctx: JobContext, job: Job) -> None:
    await ctx.pool.execute(INSERT, job.id, ctx.queue.worker_id, job.attempts, "started")
    seconds = float(job.payload.get("sleep", 0))
    if os.environ.get("HOLD_JOBS"):
        seconds = 3600.0
    if seconds:
        # The job's work, on purpose: it runs this long so that a test can stop or
        # kill a worker while the job is running.
        await asyncio.sleep(seconds)
    await ctx.pool.execute(INSERT, job.id, ctx.queue.worker_id, job.attempts, "finished")


async def fail(ctx: JobContext, job: Job) -> None:
    await ctx.pool.execute(INSERT, job.id, ctx.queue.worker_id, job.attempts, "started")
    raise RuntimeError(f"boom on attempt {job.attempts}")


def register(registry: Registry, _services: object = None) -> None:
    registry.register("test.record", record)
    registry.register("test.fail", fail)
