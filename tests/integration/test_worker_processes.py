"""Separate worker processes: draining together, SIGKILL mid-job, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from tests.support import jobkinds
from tests.support.wait import until

ROOT = Path(__file__).parents[2]
# Each test spawns worker processes.
pytestmark = pytest.mark.slow
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
STARTED = jobkinds.STARTED


@pytest.fixture
async def admin(db) -> AsyncIterator[asyncpg.Connection]:
    async for conn in jobkinds.admin_connection(db.admin_url):
        yield conn


@pytest.fixture
def spawn(db) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(*, module: str = "tests.support.job_worker", args: tuple[str, ...] = (),
              **env: str) -> subprocess.Popen[bytes]:
        environ = {k: v for k, v in os.environ.items()
                   if not k.startswith(("SCHEDULER_", "HOLD_", "RUN_"))}
        environ.update(DATABASE_URL=db.runtime_url, LOG_LEVEL="warning",
                       SCHEDULER_POLL_INTERVAL="0.5", **env)
        p = subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=environ,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)
        for stream in (p.stdout, p.stderr):
            if stream is not None:
                stream.close()


async def wait_exit(p: subprocess.Popen[bytes], timeout: float = 20.0) -> int:
    await until(lambda: p.poll() is not None, timeout=timeout, interval=0.05,
                what=f"worker {p.pid} to exit")
    return p.returncode


async def add_jobs(admin: asyncpg.Connection, n: int) -> list[int]:
    rows = await admin.fetch("INSERT INTO jobs (kind, run_at) SELECT 'test.record', now() "
                             "FROM generate_series(1, $1) RETURNING id", n)
    return [r["id"] for r in rows]


async def test_three_worker_processes_drain_2000_jobs_each_exactly_once(admin, spawn):
    ids = await add_jobs(admin, 2000)
    workers = [spawn(SCHEDULER_CONCURRENCY="8") for _ in range(3)]

    async def drained() -> bool:
        return await admin.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = 'test.record' AND status = 'done'") == 2000

    await until(drained, timeout=180, interval=0.05)
    for p in workers:
        p.send_signal(signal.SIGTERM)
    assert [await wait_exit(p) for p in workers] == [0, 0, 0]
    finished = await admin.fetch("SELECT job_id, count(*) AS n FROM job_runs "
                                 "WHERE phase = 'finished' GROUP BY job_id")
    assert sorted(r["job_id"] for r in finished) == sorted(ids)
    assert {r["n"] for r in finished} == {1}
    assert await admin.fetchval(STARTED) == 2000
    assert await admin.fetchval("SELECT count(DISTINCT worker) FROM job_runs") >= 2


async def test_jobs_of_a_killed_worker_run_elsewhere_after_the_lease(admin, spawn):
    ids = await add_jobs(admin, 5)
    victim = spawn(HOLD_JOBS="1", SCHEDULER_LEASE_SECONDS="1.5", SCHEDULER_CONCURRENCY="5")

    async def all_held() -> bool:
        return await admin.fetchval(STARTED) == 5

    await until(all_held, timeout=60, interval=0.05)
    victim_id = await admin.fetchval("SELECT DISTINCT worker FROM job_runs")
    victim.send_signal(signal.SIGKILL)
    assert await wait_exit(victim) == -signal.SIGKILL
    held = await admin.fetch("SELECT status, locked_by FROM jobs WHERE kind = 'test.record'")
    assert {(r["status"], r["locked_by"]) for r in held} == {("running", victim_id)}

    survivor = spawn(SCHEDULER_LEASE_SECONDS="1.5")

    async def done() -> bool:
        return await admin.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = 'test.record' AND status = 'done'") == 5

    await until(done, timeout=60, interval=0.05)
    survivor.send_signal(signal.SIGTERM)
    assert await wait_exit(survivor) == 0
    rows = await admin.fetch("SELECT id, attempts, locked_by FROM jobs "
                             "WHERE kind = 'test.record' ORDER BY id")
    assert [r["id"] for r in rows] == sorted(ids)
    assert {r["attempts"] for r in rows} == {2}
    assert victim_id not in {r["locked_by"] for r in rows}
    finished = await admin.fetch("SELECT job_id, worker FROM job_runs WHERE phase = 'finished'")
    assert sorted(r["job_id"] for r in finished) == sorted(ids)  # once each
    assert victim_id not in {r["worker"] for r in finished}


async def test_sigterm_finishes_running_jobs_releases_slow_ones_and_exits_0(admin, spawn):
    quick = await admin.fetchval("INSERT INTO jobs (kind, run_at, payload) VALUES "
                                 "('test.record', now(), '{\"sleep\": 0.3}') RETURNING id")
    slow = await admin.fetchval("INSERT INTO jobs (kind, run_at, payload) VALUES "
                                "('test.record', now(), '{\"sleep\": 600}') RETURNING id")
    worker = spawn(SCHEDULER_GRACE_SECONDS="1.5")

    async def both_started() -> bool:
        return await admin.fetchval(STARTED) == 2

    await until(both_started, timeout=60, interval=0.05)
    worker.send_signal(signal.SIGTERM)
    assert await wait_exit(worker, timeout=10) == 0
    status = dict(await admin.fetch("SELECT id, status FROM jobs WHERE kind = 'test.record'"))
    assert status == {quick: "done", slow: "ready"}
    row = await admin.fetchrow("SELECT attempts, locked_by, locked_until FROM jobs "
                               "WHERE id = $1", slow)
    assert dict(row) == {"attempts": 0, "locked_by": None, "locked_until": None}


async def test_helpdesk_worker_command_runs_the_loop_and_stops_on_sigterm(admin, spawn):
    worker = spawn(module="api.cli.main", args=("worker",))

    async def seeded() -> bool:
        return await admin.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = 'jobs.purge' AND status IN ('ready', 'done')"
        ) >= 1

    await until(seeded, timeout=60, interval=0.05)
    worker.send_signal(signal.SIGTERM)
    assert await wait_exit(worker) == 0
