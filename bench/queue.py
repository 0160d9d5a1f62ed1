"""Queue throughput and due-to-start delay, beside pgqueuer on the same machine and run.

    python bench/queue.py            # quick: 4,000 jobs per drain, 200 delay samples
    python bench/queue.py --full     # 20,000 jobs per drain, 500 delay samples

Drain: N no-op jobs are inserted in one statement while 1, 2 or 4 worker processes
(each with its own connections) are already idle and listening; the time from the
insert's commit until the queue is empty gives jobs claimed and completed per second.
Delay: one worker, jobs added one at a time into an idle queue, due either at once
or 100 ms later; the delay is from the job's due time to its handler starting.

Each system gets its own fresh database, created here and dropped at the end
(``--dsn`` must be a superuser URL). Figures print as ratios ours / pgqueuer.
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file's name
# would shadow the standard library's ``queue`` (which asyncio and multiprocessing
# import). Put the repository root there instead.
_ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [str(_ROOT)] + [p for p in sys.path
                              if Path(p or ".").resolve() != _ROOT / "bench"]

import argparse
import asyncio
import multiprocessing as mp
import os
import statistics
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import quote, urlsplit, urlunsplit

import asyncpg

from bench.common import report

BENCH_USER, BENCH_PASSWORD = "helpdesk_bench", "helpdesk-bench"
BATCH = 32  # jobs one worker holds at once, for both systems


def db_url(url: str, database: str, user: str | None = None, password: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        netloc = f"{quote(user)}:{quote(password or '')}@{netloc.rpartition('@')[2]}"
    return urlunsplit((parts.scheme, netloc, "/" + database, parts.query, parts.fragment))


# -- worker processes ----------------------------------------------------------------


def ours_worker(dsn: str, results: mp.Queue, ready: mp.Event) -> None:  # type: ignore[type-arg]
    from domain.clock import SystemClock
    from eventstore.pool import create_pool
    from eventstore.store import EventStore
    from scheduler.loop import LoopConfig, Scheduler
    from scheduler.queue import Job
    from scheduler.registry import JobContext, Registry

    async def main() -> None:
        pool = await create_pool(dsn, min_size=2, max_size=4)
        registry = Registry()

        async def noop(_ctx: JobContext, _job: Job) -> None:
            return None

        async def timed(_ctx: JobContext, job: Job) -> None:
            results.put(time.time() - job.payload["due"])

        registry.register("bench.noop", noop)
        registry.register("bench.timed", timed)
        scheduler = Scheduler(EventStore(pool), SystemClock(), registry,
                              config=LoopConfig(concurrency=BATCH, poll_interval=1.0),
                              listen_dsn=dsn)
        task = asyncio.create_task(scheduler.run())
        assert scheduler.listener is not None
        await scheduler.listener.connected.wait()
        ready.set()
        await task

    asyncio.run(main())


def pgq_worker(dsn: str, results: mp.Queue, ready: mp.Event) -> None:  # type: ignore[type-arg]
    from pgqueuer.db import AsyncpgPoolDriver
    from pgqueuer.models import Job
    from pgqueuer.qm import QueueManager
    from pgqueuer.queries import Queries

    async def main() -> None:
        pool = await asyncpg.create_pool(dsn, min_size=2, max_size=4)
        qm = QueueManager(Queries(AsyncpgPoolDriver(pool)))

        @qm.entrypoint("bench.noop")
        async def noop(_job: Job) -> None:
            return None

        @qm.entrypoint("bench.timed")
        async def timed(job: Job) -> None:
            assert job.payload is not None
            results.put(time.time() - float(job.payload.decode()))

        async def mark_ready() -> None:
            await asyncio.sleep(1.0)  # its listener connects during run()'s start-up
            ready.set()

        ready_task = asyncio.create_task(mark_ready())
        await qm.run(batch_size=BATCH, dequeue_timeout=timedelta(seconds=1))
        ready_task.cancel()

    asyncio.run(main())


# -- one system's side of the bench --------------------------------------------------------


@dataclass
class System:
    name: str
    dsn: str  # the worker's URL
    admin_dsn: str
    worker: object

    async def enqueue(self, conn: asyncpg.Connection, n: int, kind: str,
                      delay: float = 0.0) -> float:
        """Add ``n`` jobs of ``kind``; returns the due time (epoch seconds)."""
        due = time.time() + delay
        if self.name == "ours":
            await conn.execute(
                "INSERT INTO jobs (kind, run_at, payload) "
                "SELECT $1, $2, jsonb_build_object('due', $3::float8) "
                "FROM generate_series(1, $4)",
                kind, datetime.fromtimestamp(due, UTC), due, n)
        else:
            from pgqueuer.db import AsyncpgDriver
            from pgqueuer.queries import Queries

            q = Queries(AsyncpgDriver(conn))
            payload = str(due).encode()
            await q.enqueue([kind] * n, [payload] * n, [0] * n,
                            [timedelta(seconds=delay)] * n)
        return due

    async def remaining(self, conn: asyncpg.Connection) -> int:
        table = "jobs WHERE status IN ('ready', 'running')" if self.name == "ours" \
            else "pgqueuer"
        count: int = await conn.fetchval(f"SELECT count(*) FROM {table}")
        return count


def start_workers(system: System, k: int, results: mp.Queue) -> list[mp.Process]:  # type: ignore[type-arg]
    ctx = mp.get_context("spawn")
    procs, events = [], []
    for _ in range(k):
        ready = ctx.Event()
        p = ctx.Process(target=system.worker, args=(system.dsn, results, ready), daemon=True)
        p.start()
        procs.append(p)
        events.append(ready)
    for e in events:
        if not e.wait(60):
            raise RuntimeError(f"{system.name} worker did not start")
    return procs


def stop_workers(procs: list[mp.Process]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.join(10)


async def drain(system: System, k: int, n: int) -> float:
    """Jobs per second for ``k`` workers draining ``n`` no-op jobs."""
    results: mp.Queue = mp.get_context("spawn").Queue()  # type: ignore[type-arg]
    procs = start_workers(system, k, results)
    conn = await asyncpg.connect(system.admin_dsn)
    try:
        started = time.perf_counter()
        await system.enqueue(conn, n, "bench.noop")
        # Polling the table is the measurement itself: nothing else says "drained".
        while await system.remaining(conn):  # noqa: ASYNC110
            await asyncio.sleep(0.02)
        elapsed = time.perf_counter() - started
        if system.name == "ours":
            await conn.execute("DELETE FROM jobs")
    finally:
        await conn.close()
        stop_workers(procs)
    return n / elapsed


async def delays(system: System, samples: int, delay: float) -> list[float]:
    """Due-to-start delays (seconds) for jobs added one by one to an idle worker."""
    results: mp.Queue = mp.get_context("spawn").Queue()  # type: ignore[type-arg]
    procs = start_workers(system, 1, results)
    conn = await asyncpg.connect(system.admin_dsn)
    out: list[float] = []
    try:
        for _ in range(samples):
            await system.enqueue(conn, 1, "bench.timed", delay)
            out.append(await asyncio.to_thread(results.get, True, 30))
            await asyncio.sleep(0.01)
    finally:
        await conn.close()
        stop_workers(procs)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


# -- setup and report ---------------------------------------------------------------------


async def setup(admin_url: str) -> tuple[System, System, list[str]]:
    from pgqueuer.db import AsyncpgDriver
    from pgqueuer.queries import Queries

    from migrations.runner import migrate

    suffix = uuid.uuid4().hex[:8]
    ours_db, pgq_db = f"bench_ours_{suffix}", f"bench_pgqueuer_{suffix}"
    conn = await asyncpg.connect(admin_url)
    try:
        for name in (ours_db, pgq_db):
            await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    await migrate(db_url(admin_url, ours_db), runtime_user=BENCH_USER,
                  runtime_password=BENCH_PASSWORD)
    conn = await asyncpg.connect(db_url(admin_url, pgq_db))
    try:
        await Queries(AsyncpgDriver(conn)).install()
    finally:
        await conn.close()
    ours = System("ours", db_url(admin_url, ours_db, BENCH_USER, BENCH_PASSWORD),
                  db_url(admin_url, ours_db), ours_worker)
    pgq = System("pgqueuer", db_url(admin_url, pgq_db), db_url(admin_url, pgq_db), pgq_worker)
    return ours, pgq, [ours_db, pgq_db]


async def teardown(admin_url: str, names: list[str]) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        for name in names:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="20,000 jobs, 500 delay samples")
    parser.add_argument("--jobs", type=int, help="jobs per drain (overrides the size)")
    parser.add_argument("--dsn", default=os.environ.get(
        "TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="a superuser URL; the bench creates and drops its own databases")
    args = parser.parse_args()
    n = args.jobs or (20_000 if args.full else 4_000)
    samples = 500 if args.full else 200

    ours, pgq, names = await setup(args.dsn)
    try:
        rows: list[dict[str, object]] = []
        print(f"drain of {n:,} no-op jobs (jobs claimed and completed per second)")
        print(f"{'workers':>8} {'ours':>10} {'pgqueuer':>10} {'ratio':>7}")
        for k in (1, 2, 4):
            a = await drain(ours, k, n)
            b = await drain(pgq, k, n)
            print(f"{k:>8} {a:>10,.0f} {b:>10,.0f} {a / b:>7.2f}")
            rows.append({"figure": f"drain {n} jobs, {k} worker(s), jobs/s", "value": round(a),
                         "baseline": round(b), "ratio": round(a / b, 2),
                         "target": ">= 1 (pgqueuer)"})
        print(f"\ndue-to-start delay, 1 worker, {samples} jobs added one at a time (ms)")
        print(f"{'due':>8} {'':>4} {'ours':>8} {'pgqueuer':>9} {'ratio':>7}")
        for label, delay in (("now", 0.0), ("+100ms", 0.1)):
            a_d = await delays(ours, samples, delay)
            b_d = await delays(pgq, samples, delay)
            for name, q in (("p50", 0.5), ("p99", 0.99)):
                x, y = pct(a_d, q), pct(b_d, q)
                print(f"{label:>8} {name:>4} {x:>8.1f} {y:>9.1f} {x / y:>7.2f}")
                rows.append({"figure": f"due-to-start {name} ms, due {label}",
                             "value": round(x, 1), "baseline": round(y, 1),
                             "ratio": round(x / y, 2),
                             "target": "< 50 ms" if name == "p99" else ""})
            print(f"{'':>8} mean {statistics.mean(a_d) * 1000:>8.1f} "
                  f"{statistics.mean(b_d) * 1000:>9.1f}")
        report("queue (baseline: pgqueuer 1.6.0, same machine, same run)", rows)
    finally:
        await teardown(args.dsn, names)


if __name__ == "__main__":
    asyncio.run(main())
