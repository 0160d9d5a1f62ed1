"""Verdicts do not move: a change of business hours, then a rebuild of analytics,
leaves every past figure byte-identical (periodic updates and requester waits too).

Business hours Mon-Fri 09:00-17:00 UTC (Monday is 2026-06-08), then, from Tuesday
12:00, Mon-Fri 10:00-12:00. T1 (Mon 09:00, answered 11:00) and T2 (Fri 5th 16:00,
answered Mon 10:00) ran on the first hours: 2 business hours each. T3 (Tue 13:00,
answered Wed 11:00) runs on the second: 1 hour. Rebuilding analytics after the change
must give the same rows, byte for byte. Before the analytics projection read the
hours in force at each ticket's opening (``projections.analytics.CalendarHistory``)
it read the tenant's hours as they are now, and this test failed: the rebuild gave
T1 1 hour and T2 0 ms.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import orjson

from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.sla_calendar import ChangeCalendar, CreateCalendar
from domain.target_policy import CreatePolicy
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.values import TicketState
from domain.workflow_events import PolicyTargets
from eventstore.types import StoreActor
from handlers import sla_policies as calendars
from handlers.tenant_settings import ReplaceSettings, replace_settings
from handlers.ticket_state import load_ticket
from projections.admin import rebuild
from projections.projector import Projector
from tests.support.desk import Desk

HOUR = 3_600_000
A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
ACTOR = StoreActor("operator", "test")
TABLES = ("analytics_tickets", "analytics_daily", "analytics_agent_daily",
          "analytics_summary_cells")


def at(month: int, day: int, hour: int) -> datetime:
    return datetime(2026, month, day, hour, tzinfo=UTC)


def hours(start: str, end: str) -> Calendar:
    return Calendar(timezone="UTC", weekly={d: [(start, end)] for d in range(5)})


async def _set_hours(store: Any, tenant: Any, calendar: Calendar, when: datetime) -> None:
    async with store.unit_of_work(tenant, ACTOR) as s:
        await replace_settings(s, ReplaceSettings(
            settings=dataclasses.replace(DEFAULT_SETTINGS, business_hours=calendar), at=when))


async def dump(pool: Any, tenant: Any) -> bytes:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(tenant))
        out = {t: [dict(r) for r in await conn.fetch(
            f"SELECT * FROM {t} ORDER BY 1, 2, 3, 4")] for t in TABLES}
    return orjson.dumps(out, default=str)


async def test_a_change_of_hours_then_a_rebuild_moves_no_past_figure(pool, store,
                                                                      make_tenant):
    tenant = (await make_tenant("Verdicts")).tenant_id
    clock = ManualClock(at(6, 5, 8))
    await _set_hours(store, tenant, hours("09:00", "17:00"), clock.now())
    desk = Desk(store, tenant, clock)
    await desk.hire(A1)
    clock.set(at(6, 5, 16))
    t2 = await desk.open()
    clock.set(at(6, 8, 9))
    t1 = await desk.open()
    clock.set(at(6, 8, 10))
    await desk.reply(t2, A1)
    clock.set(at(6, 8, 11))
    await desk.reply(t1, A1)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    before = await dump(pool, tenant)

    clock.set(at(6, 9, 12))
    await _set_hours(store, tenant, hours("10:00", "12:00"), clock.now())
    clock.set(at(6, 9, 13))
    t3 = await desk.open()
    clock.set(at(6, 10, 11))
    await desk.reply(t3, A1)
    await projector.drain()
    after_change = await dump(pool, tenant)
    await rebuild(projector, "analytics", tenant)
    rebuilt = await dump(pool, tenant)
    assert rebuilt == after_change

    rows = {r["ticket_id"]: r for r in orjson.loads(rebuilt)["analytics_tickets"]}
    business = {name: rows[str(t)]["first_reply_business_ms"]
                for name, t in (("t1", t1), ("t2", t2), ("t3", t3))}
    assert business == {"t1": 2 * HOUR, "t2": 2 * HOUR, "t3": HOUR}
    # The figures of T1 and T2 are those written before the change.
    old = {r["ticket_id"]: r for r in orjson.loads(before)["analytics_tickets"]}
    for t in (t1, t2):
        assert rows[str(t)] == old[str(t)]


async def test_a_clock_on_a_policy_counts_on_its_calendar_version(pool, store, make_tenant):
    """A ticket on a policy whose calendar then changes: the clock's due time and the
    analytics figure stay on the version the clock started on, before and after a
    rebuild; a ticket opened after the change runs on the new version."""
    tenant = (await make_tenant("Policies")).tenant_id
    clock = ManualClock(at(6, 8, 8))
    async with store.unit_of_work(tenant, ACTOR) as s:
        office = await calendars.create_calendar(s, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Office", hours=hours("09:00", "17:00"),
            at=clock.now()))
        await calendars.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, calendar_id=office.id,
            targets=PolicyTargets(first_reply_ms=4 * HOUR, periodic_update_ms=HOUR,
                                  requester_wait_ms=4 * HOUR), at=clock.now()))
    desk = Desk(store, tenant, clock)
    await desk.hire(A1)
    clock.set(at(6, 8, 15))
    t1 = await desk.open()
    opened = await _ticket(store, tenant, t1)
    assert opened.clocks["first_response"].due_at == at(6, 9, 11)  # 2 h Mon, 2 h Tue
    clock.set(at(6, 9, 10))
    async with store.unit_of_work(tenant, ACTOR) as s:
        await calendars.change_calendar(s, office.id, ChangeCalendar(
            hours=hours("10:00", "12:00"), at=clock.now()))
    t2 = await desk.open()
    clock.set(at(6, 9, 11))
    await desk.reply(t1, A1)
    await desk.reply(t2, A1)
    await desk.state(t1, TicketState.SOLVED, A1)
    await desk.state(t2, TicketState.SOLVED, A1)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    before = await dump(pool, tenant)
    await rebuild(projector, "analytics", tenant)
    assert await dump(pool, tenant) == before
    rows = {r["ticket_id"]: r for r in orjson.loads(before)["analytics_tickets"]}
    assert rows[str(t1)]["first_reply_business_ms"] == 4 * HOUR  # Mon 15-17, Tue 09-11
    assert rows[str(t2)]["first_reply_business_ms"] == HOUR  # Tue 10-11 on version 2
    # The requester's wait and the periodic update, on the same versions: T1 waited
    # Mon 15-17 and Tue 09-11, T2 Tue 10-11; each met the one update it owed.
    assert [(rows[str(t)]["requester_wait_ms"], rows[str(t)]["periodic_updates"],
             rows[str(t)]["periodic_updates_met"]) for t in (t1, t2)] == [
        (4 * HOUR, 1, 1), (HOUR, 1, 1)]
    assert (await _ticket(store, tenant, t2)).clocks["first_response"].basis.calendar_version == 2


async def _ticket(store: Any, tenant: Any, tid: uuid.UUID) -> Any:
    async with store.unit_of_work(tenant, readonly=True) as s:
        return await load_ticket(s.conn, tenant, tid)
