"""sla.check and tickets.sweep run by the scheduler loop, on a ManualClock."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from domain.clock import ManualClock
from domain.ids import MessageId, TicketId
from domain.ticket.commands import AddMessage, ChangePriority, ChangeState, OpenTicket
from domain.values import Actor, ActorKind, Priority, Requester, TicketState
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import sla_check, sweep
from handlers.tickets import execute, sla_job_key
from scheduler import tenant_seed
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.support.wait import until

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")
CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="ann@example.com")
KEY = StoreActor("api_key", "test")


def registry() -> Registry:
    r = Registry()
    sla_check.register(r)
    sweep.register(r)
    tenant_seed.register(r)
    return r


@pytest.fixture
async def admin(db) -> AsyncIterator[asyncpg.Connection]:
    conn = await asyncpg.connect(db.admin_url)
    yield conn
    await conn.close()


@asynccontextmanager
async def schedulers(pools: list[asyncpg.Pool], clock: ManualClock
                     ) -> AsyncIterator[list[Scheduler]]:
    loops = [Scheduler(EventStore(p), clock, registry(), config=LoopConfig(poll_interval=0.2))
             for p in pools]
    tasks = [asyncio.create_task(s.run()) for s in loops]
    try:
        yield loops
    finally:
        for s in loops:
            await s.stop()
        await asyncio.gather(*tasks)


async def settle(admin: asyncpg.Connection, loops: list[Scheduler], clock: ManualClock,
                 timeout: float = 30.0) -> None:
    """Wake the loops and wait until no job due at the clock is ready or running."""
    for s in loops:
        s.wake()

    async def none_due() -> bool:
        return not await admin.fetchval(
            "SELECT count(*) FROM jobs WHERE status IN ('ready', 'running') AND run_at <= $1",
            clock.now())

    await until(none_due, timeout=timeout, what="the due jobs to run")


async def open_ticket(store: EventStore, tenant, priority: Priority = Priority.URGENT,
                      at: datetime = T0) -> uuid.UUID:
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, OpenTicket(
            ticket_id=TicketId(tid), subject="Printer on fire", body="Help",
            requester=Requester(email="ann@example.com", name="Ann"), priority=priority,
            actor=CUSTOMER, at=at))
    return tid


async def run(store: EventStore, tenant, tid: uuid.UUID, command: object) -> None:
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, command)  # type: ignore[arg-type]


def reply(at: datetime) -> AddMessage:
    return AddMessage(message_id=MessageId(uuid.uuid4()), body="On it", actor=AGENT, at=at)


async def events(store: EventStore, tenant, tid: uuid.UUID, type_: str | None = None):
    async with store.unit_of_work(tenant, readonly=True) as s:
        evs = await s.read_stream(tid)
    return [e for e in evs if type_ is None or e.type == type_]


async def ticket(store: EventStore, tenant, tid: uuid.UUID):
    from handlers.ticket_state import load_ticket
    async with store.unit_of_work(tenant, readonly=True) as s:
        return await load_ticket(s.conn, tenant, tid)


async def test_two_schedulers_record_exactly_one_breach_per_ticket(db, store, admin,
                                                                   make_tenant):
    tenant = (await make_tenant()).tenant_id
    tids = [await open_ticket(store, tenant) for _ in range(10)]
    # A second, duplicate timer per ticket, so both schedulers really do race on each.
    await admin.execute(
        "INSERT INTO jobs (tenant_id, kind, payload, run_at) "
        "SELECT tenant_id, kind, payload, run_at FROM jobs WHERE dedupe_key LIKE '%first_response'")
    clock = ManualClock(T0)
    pools = [await create_pool(db.runtime_url, min_size=1, max_size=6) for _ in range(2)]
    try:
        async with schedulers(pools, clock) as loops:
            clock.set(T0 + timedelta(minutes=59))
            await settle(admin, loops, clock)
            assert [await events(store, tenant, t, "SlaBreached") for t in tids] == [[]] * 10
            clock.set(T0 + timedelta(hours=1, seconds=1))
            await settle(admin, loops, clock)
    finally:
        for p in pools:
            await p.close()
    workers = set()
    for t in tids:
        [breach] = await events(store, tenant, t, "SlaBreached")
        assert breach.data["metric"] == "first_response"
        assert (breach.actor_kind, breach.actor_id) == ("system", "scheduler")
        assert (await ticket(store, tenant, t)).clocks["first_response"].breached_at == \
            T0 + timedelta(hours=1, seconds=1)
    workers = {r["locked_by"] for r in await admin.fetch(
        "SELECT locked_by FROM jobs WHERE kind = 'sla.check' AND status = 'done'")}
    assert len(workers) == 2  # both schedulers ran checks
    assert await admin.fetchval("SELECT count(*) FROM jobs WHERE status = 'dead'") == 0


async def test_breach_latches_and_a_timely_reply_means_no_breach(store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    late, timely = await open_ticket(store, tenant), await open_ticket(store, tenant)
    clock = ManualClock(T0)
    await run(store, tenant, timely, reply(T0 + timedelta(minutes=30)))
    async with schedulers([store.pool], clock) as loops:
        clock.set(T0 + timedelta(hours=2))
        await settle(admin, loops, clock)
        await run(store, tenant, late, reply(T0 + timedelta(hours=2, minutes=5)))
        clock.set(T0 + timedelta(hours=7))
        await settle(admin, loops, clock)
    late_clock = (await ticket(store, tenant, late)).clocks["first_response"]
    assert late_clock.breached_at == T0 + timedelta(hours=2)
    assert late_clock.fulfilled_at == T0 + timedelta(hours=2, minutes=5)
    assert len(await events(store, tenant, late, "SlaBreached")) == 1
    assert await events(store, tenant, timely, "SlaBreached") == []
    assert (await ticket(store, tenant, timely)).clocks["first_response"].breached_at is None


async def test_pending_pauses_resolution_and_reopen_resumes_the_remaining_budget(
        store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    tid = await open_ticket(store, tenant, Priority.NORMAL)  # resolution 72 h
    key = sla_job_key(tid, "resolution")
    job_at = "SELECT run_at FROM jobs WHERE dedupe_key = $1 AND status = 'ready'"
    assert await admin.fetchval(job_at, key) == T0 + timedelta(hours=72)
    await run(store, tenant, tid, reply(T0 + timedelta(hours=1)))
    await run(store, tenant, tid, ChangeState(to=TicketState.PENDING, actor=AGENT,
                                              at=T0 + timedelta(hours=1)))
    assert await admin.fetchval(job_at, key) is None  # paused: no timer
    clock = ManualClock(T0 + timedelta(hours=100))
    async with schedulers([store.pool], clock) as loops:
        await settle(admin, loops, clock)  # long past the original due: nothing happens
        assert await events(store, tenant, tid, "SlaBreached") == []
        reopened = T0 + timedelta(hours=100)
        await run(store, tenant, tid, ChangeState(to=TicketState.OPEN, actor=AGENT,
                                                  at=reopened))
        due = reopened + timedelta(hours=71)
        assert await admin.fetchval(job_at, key) == due
        clock.set(due - timedelta(seconds=1))
        await settle(admin, loops, clock)
        assert await events(store, tenant, tid, "SlaBreached") == []
        clock.set(due)
        await settle(admin, loops, clock)
    [breach] = await events(store, tenant, tid, "SlaBreached")
    assert breach.data["metric"] == "resolution"


async def test_priority_change_recomputes_the_due_time(store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    tid = await open_ticket(store, tenant, Priority.NORMAL)  # first response 8 h
    key = sla_job_key(tid, "first_response")
    job_at = "SELECT run_at FROM jobs WHERE dedupe_key = $1 AND status = 'ready'"
    assert await admin.fetchval(job_at, key) == T0 + timedelta(hours=8)
    await run(store, tenant, tid, ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                                 at=T0 + timedelta(minutes=30)))
    assert await admin.fetchval(job_at, key) == T0 + timedelta(hours=1)
    clock = ManualClock(T0 + timedelta(hours=1))
    async with schedulers([store.pool], clock) as loops:
        await settle(admin, loops, clock)
    [breach] = await events(store, tenant, tid, "SlaBreached")
    assert breach.data["metric"] == "first_response"


async def test_a_timer_that_fires_early_moves_itself_to_the_due_time(store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    tid = await open_ticket(store, tenant)  # first response due T0 + 1 h
    key = sla_job_key(tid, "first_response")
    # As if the due moved later while the job was running and could not be moved.
    await admin.execute("UPDATE jobs SET run_at = $1 WHERE dedupe_key = $2",
                        T0 + timedelta(minutes=10), key)
    clock = ManualClock(T0 + timedelta(minutes=10))
    async with schedulers([store.pool], clock) as loops:
        await settle(admin, loops, clock)
    row = await admin.fetchrow("SELECT status, run_at, attempts FROM jobs "
                               "WHERE dedupe_key = $1", key)
    assert dict(row) == {"status": "ready", "run_at": T0 + timedelta(hours=1), "attempts": 0}
    assert await events(store, tenant, tid, "SlaBreached") == []


async def test_sweep_solves_stale_pending_closes_stale_solved_and_leaves_the_rest(
        store, admin, make_tenant):
    # Created at T0, so their sweeps are due on the scheduler's manual clock.
    tenant = (await make_tenant(at=T0)).tenant_id
    other = (await make_tenant("Other", at=T0)).tenant_id
    stale_pending = await open_ticket(store, tenant)
    fresh_pending = await open_ticket(store, tenant)
    stale_solved = await open_ticket(store, tenant)
    fresh_solved = await open_ticket(store, tenant)
    old_open = await open_ticket(store, tenant)
    elsewhere = await open_ticket(store, other)
    for t, state, at in [
        (stale_pending, TicketState.PENDING, T0),
        (fresh_pending, TicketState.PENDING, T0 + timedelta(days=9)),
        (stale_solved, TicketState.SOLVED, T0),
        # Solved 3.5 days before the sweep: inside the default 4-day window.
        (fresh_solved, TicketState.SOLVED, T0 + timedelta(days=6, hours=12)),
    ]:
        await run(store, tenant, t, ChangeState(to=state, actor=AGENT, at=at))
    await run(store, other, elsewhere, ChangeState(to=TicketState.PENDING, actor=AGENT, at=T0))
    clock = ManualClock(T0 + timedelta(days=10))
    async with schedulers([store.pool], clock) as loops:
        await settle(admin, loops, clock)
    states = {t: (await ticket(store, tenant, t)).state
              for t in (stale_pending, fresh_pending, stale_solved, fresh_solved, old_open)}
    assert states == {stale_pending: TicketState.SOLVED, fresh_pending: TicketState.PENDING,
                      stale_solved: TicketState.CLOSED, fresh_solved: TicketState.SOLVED,
                      old_open: TicketState.OPEN}
    assert (await ticket(store, other, elsewhere)).state is TicketState.SOLVED
    for t in (stale_pending, stale_solved):
        # The sweep's move (SLA checks of the same run may append breaches after it).
        last = (await events(store, tenant, t, "StateChanged"))[-1]
        assert (last.actor_kind, last.actor_id) == ("system", "scheduler")
    sweeps = await admin.fetch("SELECT tenant_id, status, run_at FROM jobs "
                               "WHERE kind = 'tickets.sweep' ORDER BY status")
    # Each tenant swept once and scheduled again an hour later.
    assert sorted((r["tenant_id"], r["status"]) for r in sweeps) == sorted(
        [(tenant, "done"), (tenant, "ready"), (other, "done"), (other, "ready")])
    assert {r["run_at"] for r in sweeps if r["status"] == "ready"} == {
        clock.now() + timedelta(hours=1)}


async def test_seeder_gives_each_tenant_its_periodic_jobs_and_idempotency_purge_runs(
        store, admin, make_tenant):
    from scheduler import idempotency

    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    for tenant in (a, b):
        for key, ttl in (("old", "-1 hour"), ("new", "1 hour")):
            await admin.execute(
                "INSERT INTO idempotency_keys (tenant_id, api_key_id, route, key, fingerprint,"
                " response_status, response_body, expires_at)"
                " VALUES ($1, $1, 'POST /v1/tickets', $2, '\\x00', 201, '{}',"
                " now() + $3::text::interval)", tenant, key, ttl)
    # As for tenants created before their periodic kinds existed: no jobs yet.
    await admin.execute("DELETE FROM jobs WHERE tenant_id IN ($1, $2)", a, b)
    r = registry()
    idempotency.register(r)
    clock = ManualClock(T0)
    loop = Scheduler(store, clock, r, config=LoopConfig(poll_interval=0.2))
    task = asyncio.create_task(loop.run())
    try:
        async def each_ran_once() -> bool:
            return await admin.fetchval(
                "SELECT count(*) FROM jobs WHERE status = 'done' "
                "AND kind IN ('idempotency.purge', 'tickets.sweep')") >= 4

        await until(each_ran_once, what="both tenants' purge and sweep jobs to run")
    finally:
        await loop.stop()
        await task
    assert sorted(r["key"] for r in await admin.fetch("SELECT key FROM idempotency_keys")) == \
        ["new", "new"]
    live = await admin.fetch("SELECT tenant_id, kind, run_at FROM jobs WHERE status = 'ready'")
    per_tenant = sorted((r["tenant_id"], r["kind"]) for r in live if r["tenant_id"])
    assert per_tenant == sorted((t, k) for t in (a, b)
                                for k in ("idempotency.purge", "tickets.sweep"))
    assert {r["kind"] for r in live if r["tenant_id"] is None} == {"jobs.seed_tenants"}


async def test_tickets_the_sweep_moves_carry_the_reason(store, make_tenant):
    tenant = (await make_tenant()).tenant_id
    pending, solved = await open_ticket(store, tenant), await open_ticket(store, tenant)
    await run(store, tenant, pending, ChangeState(to=TicketState.PENDING, actor=AGENT, at=T0))
    await run(store, tenant, solved, ChangeState(to=TicketState.SOLVED, actor=AGENT, at=T0))
    moved = await sweep.sweep_tenant(store, tenant, T0 + timedelta(days=10))
    assert moved == {"solved": 1, "closed": 1}
    reasons = {t: (await events(store, tenant, t, "StateChanged"))[-1].data["reason"]
               for t in (pending, solved)}
    assert reasons == {
        pending: "pending with no activity for 7 days: solved by the sweep",
        solved: "solved with no activity for 4 days: closed by the sweep",
    }
