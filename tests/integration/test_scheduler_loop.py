"""The claim loop in-process: concurrent workers, leases, retries, wake-ups, health."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from api import root
from api.config import ProcessSettings
from api.ops.health import check_scheduler
from domain.clock import ManualClock, SystemClock
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import SYSTEM, NewEvent
from scheduler import purge
from scheduler.jobs import schedule
from scheduler.loop import LoopConfig, Scheduler
from scheduler.queue import Queue
from scheduler.registry import Registry
from tests.support import jobkinds
from tests.support.wait import until

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
STARTED = jobkinds.STARTED


@pytest.fixture
async def admin(db) -> AsyncIterator[asyncpg.Connection]:
    async for conn in jobkinds.admin_connection(db.admin_url):
        yield conn


async def add_jobs(admin: asyncpg.Connection, n: int, kind: str = "test.record",
                   run_at: datetime = T0, max_attempts: int = 10) -> list[int]:
    rows = await admin.fetch(
        "INSERT INTO jobs (kind, run_at, max_attempts) "
        "SELECT $1, $2, $4 FROM generate_series(1, $3) RETURNING id",
        kind, run_at, n, max_attempts)
    return [r["id"] for r in rows]


def registry() -> Registry:
    r = Registry()
    jobkinds.register(r)
    return r


@asynccontextmanager
async def running(scheduler: Scheduler) -> AsyncIterator[Scheduler]:
    task = asyncio.create_task(scheduler.run())
    try:
        yield scheduler
    finally:
        await scheduler.stop()
        await task


async def test_three_workers_drain_2000_jobs_each_exactly_once(db, admin):
    ids = await add_jobs(admin, 2000)
    clock = ManualClock(T0)
    pools = [await create_pool(db.runtime_url, min_size=1, max_size=5) for _ in range(3)]
    workers = [Scheduler(EventStore(p), clock, registry(),
                         config=LoopConfig(concurrency=4, poll_interval=0.5)) for p in pools]
    try:
        tasks = [asyncio.create_task(w.run()) for w in workers]

        async def drained() -> bool:
            return await admin.fetchval("SELECT count(*) FROM jobs WHERE status = 'done'") == 2000

        await until(drained, timeout=120)
        for w in workers:
            await w.stop()
        await asyncio.gather(*tasks)
    finally:
        for p in pools:
            await p.close()
    runs = await admin.fetch("SELECT job_id, count(*) AS n FROM job_runs "
                             "WHERE phase = 'finished' GROUP BY job_id")
    assert sorted(r["job_id"] for r in runs) == sorted(ids)
    assert {r["n"] for r in runs} == {1}
    assert await admin.fetchval("SELECT count(*) FROM job_runs WHERE phase = 'started'") == 2000
    by_worker = await admin.fetch("SELECT worker, count(*) FROM job_runs GROUP BY worker")
    assert len(by_worker) == 3  # all three took a share


async def test_a_job_whose_lease_ran_out_cannot_be_completed_by_its_old_holder(pool, admin):
    [job_id] = await add_jobs(admin, 1)
    a = Queue(pool, "worker-a", lease_seconds=0.2)
    b = Queue(pool, "worker-b", lease_seconds=30)
    assert [j.id for j in await a.claim(T0, 10)] == [job_id]
    assert await b.claim(T0, 10) == []  # leased: not taken

    async def lease_ran_out() -> bool:
        # The lease is real (database) time by design, not the injected clock.
        return await admin.fetchval("SELECT locked_until < now() FROM jobs WHERE id = $1",
                                    job_id)

    await until(lease_ran_out, timeout=10, what="worker-a's 0.2 s lease to run out")
    [job] = await b.claim(T0, 10)
    assert job.id == job_id and job.attempts == 2
    assert await a.complete([job_id], T0) == []
    assert await a.renew([job_id]) == set()
    assert await b.complete([job_id], T0) == [job_id]
    row = await admin.fetchrow("SELECT status, locked_by FROM jobs WHERE id = $1", job_id)
    assert dict(row) == {"status": "done", "locked_by": "worker-b"}


async def test_claim_respects_the_injected_clock(pool, admin):
    await add_jobs(admin, 1, run_at=T0 + timedelta(minutes=5))
    q = Queue(pool, "w")
    assert await q.claim(T0, 10) == []
    assert len(await q.claim(T0 + timedelta(minutes=5), 10)) == 1


async def test_failing_job_backs_off_then_dies_without_blocking_others(store, admin):
    [bad] = await add_jobs(admin, 1, kind="test.fail", max_attempts=4)
    good = await add_jobs(admin, 5)
    clock = ManualClock(T0)
    scheduler = Scheduler(store, clock, registry(),
                          config=LoopConfig(poll_interval=0.2, retry_base_seconds=10))
    delays = []
    async with running(scheduler):
        for attempt in range(1, 5):
            async def failed(attempt: int = attempt) -> bool:
                row = await admin.fetchrow(
                    "SELECT attempts, status FROM jobs WHERE id = $1", bad)
                return row["attempts"] == attempt and row["status"] in ("ready", "dead")

            await until(failed)
            row = await admin.fetchrow("SELECT status, run_at, last_error FROM jobs "
                                       "WHERE id = $1", bad)
            if attempt < 4:
                assert row["status"] == "ready"
                delays.append(row["run_at"] - clock.now())
                clock.set(row["run_at"])
                scheduler.wake()
        async def others_done() -> bool:
            return await admin.fetchval(
                "SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'done'", good) == 5
        await until(others_done)
    assert row["status"] == "dead"
    assert row["last_error"] == "RuntimeError: boom on attempt 4"
    # base 10 s doubling, half of it jittered: [5,10], [10,20], [20,40]
    assert all(earlier <= later for earlier, later in itertools.pairwise(delays))
    for n, d in enumerate(delays, start=1):
        assert 10 * 2 ** (n - 1) / 2 <= d.total_seconds() <= 10 * 2 ** (n - 1)
    assert await admin.fetchval("SELECT count(*) FROM job_runs WHERE job_id = $1", bad) == 4


async def test_notify_wakes_an_idle_loop_at_once(db, store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    # A long poll interval: only the NOTIFY can wake the loop quickly.
    scheduler = Scheduler(store, SystemClock(), registry(),
                          config=LoopConfig(poll_interval=30), listen_dsn=db.runtime_url)
    async with running(scheduler):
        assert scheduler.listener is not None
        await asyncio.wait_for(scheduler.listener.connected.wait(), 10)
        connected = time.monotonic()
        # Connecting woke the loop; once that round is over, only a NOTIFY (or the 30 s
        # poll) starts the next one.
        await until(lambda: (scheduler.heartbeat or 0) > connected, timeout=10,
                    what="the loop's round after the listener connected")
        latencies = []
        for i in range(5):
            async with store.unit_of_work(tenant, SYSTEM) as s:
                await schedule(s.conn, tenant, "test.record", datetime.now(UTC),
                               dedupe_key=f"n{i}")
            committed = datetime.now(UTC)

            async def started(i: int = i) -> bool:
                return await admin.fetchval(STARTED) == i + 1

            await until(started, timeout=5)
            at = await admin.fetchval("SELECT max(at) FROM job_runs WHERE phase = 'started'")
            latencies.append((at - committed).total_seconds())
        # A job due later: the loop sleeps until its run_at, not until the poll.
        due = datetime.now(UTC) + timedelta(milliseconds=400)
        async with store.unit_of_work(tenant, SYSTEM) as s:
            await schedule(s.conn, tenant, "test.record", due, dedupe_key="later")

        async def later() -> bool:
            return await admin.fetchval(STARTED) == 6

        await until(later, timeout=5)
        at = await admin.fetchval("SELECT max(at) FROM job_runs WHERE phase = 'started'")
    assert max(latencies) < 1.0, latencies
    assert due <= at < due + timedelta(seconds=1)


async def test_graceful_stop_finishes_short_jobs_and_releases_long_ones(store, admin):
    quick = (await admin.fetch("INSERT INTO jobs (kind, run_at, payload) VALUES "
                               "('test.record', $1, '{\"sleep\": 0.2}') RETURNING id", T0))[0]["id"]
    slow = (await admin.fetch("INSERT INTO jobs (kind, run_at, payload) VALUES "
                              "('test.record', $1, '{\"sleep\": 60}') RETURNING id", T0))[0]["id"]
    scheduler = Scheduler(store, ManualClock(T0), registry(),
                          config=LoopConfig(poll_interval=0.2, grace_seconds=1.0))
    task = asyncio.create_task(scheduler.run())

    async def both_started() -> bool:
        return await admin.fetchval(STARTED) == 2

    await until(both_started)
    started = time.monotonic()
    await scheduler.stop()
    await task
    assert time.monotonic() - started < 5
    rows = {r["id"]: dict(r) for r in await admin.fetch(
        "SELECT id, status, attempts, locked_by, locked_until FROM jobs")}
    assert rows[quick]["status"] == "done"
    assert rows[slow] == {"id": slow, "status": "ready", "attempts": 0, "locked_by": None,
                          "locked_until": None}


async def test_periodic_purge_reschedules_itself_and_keeps_dead_jobs_longer(store, admin):
    now = T0 + timedelta(days=30)
    await admin.execute(
        "INSERT INTO jobs (kind, run_at, status, updated_at) VALUES "
        "('old.done', $1, 'done', $1::timestamptz - interval '2 days'),"
        "('new.done', $1, 'done', $1::timestamptz - interval '2 hours'),"
        "('old.dead', $1, 'dead', $1::timestamptz - interval '20 days'),"
        "('new.dead', $1, 'dead', $1::timestamptz - interval '3 days')", now)
    r = Registry()
    purge.register(r, purge.PurgePolicy(every=timedelta(hours=1)))
    scheduler = Scheduler(store, ManualClock(now), r, config=LoopConfig(poll_interval=0.2))
    async with running(scheduler):
        async def purged() -> bool:
            return await admin.fetchval(
                "SELECT count(*) FROM jobs WHERE kind = 'jobs.purge' AND status = 'done'") == 1
        await until(purged)
        async def rescheduled() -> bool:
            return await admin.fetchval(
                "SELECT count(*) FROM jobs WHERE kind = 'jobs.purge' AND status = 'ready'") == 1
        await until(rescheduled)
    kinds = {r["kind"] for r in await admin.fetch("SELECT kind FROM jobs")}
    assert kinds == {"new.done", "new.dead", "jobs.purge"}
    next_run = await admin.fetchval(
        "SELECT run_at FROM jobs WHERE kind = 'jobs.purge' AND status = 'ready'")
    assert next_run == now + timedelta(hours=1)


async def test_two_loops_seed_one_global_periodic_job(pool, admin):
    q1, q2 = Queue(pool, "a"), Queue(pool, "b")
    assert await q1.ensure(None, "jobs.purge", "jobs.purge", T0) is not None
    assert await q2.ensure(None, "jobs.purge", "jobs.purge", T0) is None
    assert await admin.fetchval("SELECT count(*) FROM jobs") == 1


async def test_readiness_reports_ok_stalled_and_disabled(db):
    settings = ProcessSettings(database_url=db.runtime_url, run_scheduler=True,
                               scheduler_poll_interval=0.2)
    async with root.running(settings, root.ProcessRole.SERVE, clock=ManualClock(T0)) as services:
        assert services.scheduler is not None
        scheduler = services.scheduler.scheduler

        async def beating() -> bool:
            return scheduler.heartbeat is not None

        await until(beating)
        assert (await check_scheduler(services)).status == "ok"
        scheduler.heartbeat -= 3600  # as if the loop had been stuck for an hour
        result = await check_scheduler(services)
        assert result.status == "stalled" and result.critical_failure
    off = settings.model_copy(update={"run_scheduler": False})
    async with root.running(off, root.ProcessRole.SERVE) as services:
        assert services.scheduler is None
        result = await check_scheduler(services)
        assert result.status == "disabled" and not result.critical_failure


async def test_lease_is_renewed_while_a_long_job_runs(db, admin):
    await admin.execute("INSERT INTO jobs (kind, run_at, payload) VALUES "
                        "('test.record', $1, '{\"sleep\": 1.2}')", T0)
    clock = ManualClock(T0)
    pools = [await create_pool(db.runtime_url, min_size=1, max_size=3) for _ in range(2)]
    # The job outlives its 0.3 s lease four times over; renewal keeps it with its holder.
    loops = [Scheduler(EventStore(p), clock, registry(),
                       config=LoopConfig(poll_interval=0.05, lease_seconds=0.3)) for p in pools]
    try:
        tasks = [asyncio.create_task(s.run()) for s in loops]

        async def done() -> bool:
            return await admin.fetchval("SELECT status FROM jobs") == "done"

        await until(done)
        for s in loops:
            await s.stop()
        await asyncio.gather(*tasks)
    finally:
        for p in pools:
            await p.close()
    assert await admin.fetchval(STARTED) == 1
    assert await admin.fetchval("SELECT attempts FROM jobs") == 1


async def test_only_jobs_due_soon_notify_inside_their_transaction(db, store, make_tenant):
    # A notifying transaction holds a database-wide lock through its commit (migration
    # 0112): SLA timers hours away, and the deliveries inserted with the events they
    # deliver (webhooks, mailed replies, Slack posts: 0112, 0931), must not notify.
    tenant = (await make_tenant()).tenant_id
    listener = await asyncpg.connect(db.runtime_url)
    got: list[str] = []
    await listener.add_listener("helpdesk_jobs", lambda *a: got.append(a[3]))
    now = datetime.now(UTC)
    try:
        for i, (kind, due) in enumerate([("sla.check", now + timedelta(hours=8)),
                                         ("test.record", now + timedelta(minutes=6)),
                                         ("webhook.deliver", now),
                                         ("mail.send", now),
                                         ("slack.post", now),
                                         ("test.record", now + timedelta(seconds=30))]):
            async with store.unit_of_work(tenant, SYSTEM) as s:
                await schedule(s.conn, tenant, kind, due, dedupe_key=f"k{i}")
        await listener.execute("NOTIFY helpdesk_jobs, 'marker'")
        await until(lambda: got and got[-1] == "marker", timeout=5,
                    what=lambda: f"the marker (got {got})")
    finally:
        await listener.close()
    # Only the job due within the longest poll interval (300 s) woke anyone.
    assert len(got) == 2 and datetime.fromisoformat(got[0]) == now + timedelta(seconds=30)


async def test_a_webhook_delivery_wakes_an_idle_loop_by_the_events_notice(
        db, store, make_tenant):
    tenant = (await make_tenant()).tenant_id
    async with store.unit_of_work(tenant, SYSTEM) as s:
        await s.conn.execute(
            "INSERT INTO webhooks (tenant_id, url, secret, event_types) "
            "VALUES ($1, 'http://127.0.0.1:9/x', $2, '{*}')", tenant, "s" * 32)
    claimed: list[int] = []
    reg = Registry()

    async def deliver(_ctx: object, job: object) -> None:
        claimed.append(job.payload["seq"])  # type: ignore[attr-defined]

    reg.register("webhook.deliver", deliver)
    scheduler = Scheduler(store, SystemClock(), reg, config=LoopConfig(poll_interval=30),
                          listen_dsn=db.runtime_url)
    async with running(scheduler):
        assert scheduler.listener is not None
        await asyncio.wait_for(scheduler.listener.connected.wait(), 10)
        connected = time.monotonic()
        await until(lambda: (scheduler.heartbeat or 0) > connected, timeout=10,
                    what="the loop's round after the listener connected")
        started = time.monotonic()
        async with store.unit_of_work(tenant, SYSTEM) as s:
            await s.append(tenant, None, [NewEvent("Thing", {})])
        await until(lambda: claimed, timeout=5, what="the delivery to run")
    assert time.monotonic() - started < 2.0  # the 30 s poll never came into it
