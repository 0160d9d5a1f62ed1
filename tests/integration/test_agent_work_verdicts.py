"""Agent work agrees across the ticket read, its as-of read and analytics, and a change
of the calendar, then a rebuild of analytics, moves no past figure.

Calendar "Office" Mon-Fri 09:00-17:00 UTC (Monday is 2026-06-08), changed on Tuesday
10:00 to Mon-Fri 10:00-12:00. Policy "Default" on Office: first reply 8 h, agent work
4 h.

  T1 Fri 5th 16:00 opened (open 16-17: 1 h); Mon 10:00 A1 replies, pending (Mon 09-10:
     2 h used); 13:00 the customer writes (open again); 14:00 on hold (3 h); 15:00 open;
     15:30 solved: worked 3.5 h, met. After the change, Tue 16:00 the customer writes
     (reopened on version 1: due 16:30, where version 2 would say Wed 10:30); 16:15
     solved: worked 3.75 h, met.
  T2 Tue 10:30 opened on version 2 (10:30-12:00: 1.5 h); Wed 10:00 A1 replies (10-12:
     3.5 h); Thu 11:00 solved: worked 4.5 h of 4, missed (no check ran).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import orjson

from api.app import create_app
from api.config import ProcessSettings
from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.sla_calendar import ChangeCalendar, CreateCalendar
from domain.target_policy import CreatePolicy
from domain.values import TicketState
from domain.workflow_events import PolicyTargets
from eventstore.types import StoreActor
from handlers import sla_policies as calendars
from projections.admin import rebuild
from projections.projector import Projector
from tests.integration.test_sla_verdicts import dump
from tests.support.desk import Desk
from tests.support.http import asgi_client

HOUR = 3_600_000
A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
ACTOR = StoreActor("operator", "test")


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 6, day, hour, minute, tzinfo=UTC)


def hours(start: str, end: str) -> Calendar:
    return Calendar(timezone="UTC", weekly={d: [(start, end)] for d in range(5)})


def worked(clock: dict[str, Any]) -> int:
    """The business time a solved ticket's agent-work clock ran: its target less the
    budget it kept, as the ticket shows it."""
    assert clock["paused"] and clock["fulfilled_at"] is not None, clock
    return int(clock["target_ms"] - clock["remaining_ms"])


async def _rows(pool: Any, tenant: Any) -> dict[str, Any]:
    return {r["ticket_id"]: r for r in orjson.loads(await dump(pool, tenant))[
        "analytics_tickets"]}


async def test_ticket_as_of_and_analytics_agree_on_agent_work_through_a_calendar_change(
        pool: Any, store: Any, make_tenant: Any, db: Any) -> None:
    tenant = await make_tenant("Agent work")
    tid = tenant.tenant_id
    clock = ManualClock(at(5, 8))
    async with store.unit_of_work(tid, ACTOR) as s:
        office = await calendars.create_calendar(s, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Office", hours=hours("09:00", "17:00"),
            at=clock.now()))
        await calendars.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, calendar_id=office.id,
            targets=PolicyTargets(first_reply_ms=8 * HOUR, agent_work_ms=4 * HOUR),
            at=clock.now()))
    desk = Desk(store, tid, clock)
    await desk.hire(A1)
    clock.set(at(5, 16))
    t1 = await desk.open()
    clock.set(at(8, 10))
    await desk.reply(t1, A1)
    await desk.state(t1, TicketState.PENDING, A1)
    clock.set(at(8, 13))
    await desk.customer(t1)
    clock.set(at(8, 14))
    await desk.state(t1, TicketState.ON_HOLD, A1)
    clock.set(at(8, 15))
    await desk.state(t1, TicketState.OPEN, A1)
    clock.set(at(8, 15, 30))
    await desk.state(t1, TicketState.SOLVED, A1)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    first_solve = await _rows(pool, tid)
    assert first_solve[str(t1)]["agent_work_ms"] == 3.5 * HOUR

    clock.set(at(9, 10))
    async with store.unit_of_work(tid, ACTOR) as s:
        await calendars.change_calendar(s, office.id, ChangeCalendar(
            hours=hours("10:00", "12:00"), at=clock.now()))
    clock.set(at(9, 10, 30))
    t2 = await desk.open()
    clock.set(at(9, 16))
    await desk.customer(t1)
    clock.set(at(9, 16, 15))
    await desk.state(t1, TicketState.SOLVED, A1)
    clock.set(at(10, 10))
    await desk.reply(t2, A1)
    clock.set(at(11, 11))
    await desk.state(t2, TicketState.SOLVED, A1)
    await projector.drain()
    projected = await dump(pool, tid)
    await rebuild(projector, "analytics", tid)
    assert await dump(pool, tid) == projected  # byte for byte
    rows = await _rows(pool, tid)
    # measured, missed, worked
    assert {name: (rows[str(t)]["agent_work_measured"], rows[str(t)]["agent_work_missed"],
                   rows[str(t)]["agent_work_ms"]) for name, t in (("t1", t1), ("t2", t2))
            } == {"t1": (True, False, 3.75 * HOUR), "t2": (True, True, 4.5 * HOUR)}

    app = create_app(ProcessSettings(database_url=db.runtime_url), clock=clock)
    auth = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    async with asgi_client(app) as client:
        for t in (t1, t2):
            shown = (await client.get(f"/v1/tickets/{t}", headers=auth)).json()
            now = (await client.get(f"/v1/tickets/{t}/as-of", headers=auth,
                                    params={"version": shown["version"]})).json()
            assert now["sla"]["agent_work"] == shown["sla"]["agent_work"]
            assert worked(shown["sla"]["agent_work"]) == rows[str(t)]["agent_work_ms"]
        # T1 as it stood at each version: after its first solve it agrees with the
        # analytics of then, and its reopen ran on the calendar version it recorded.
        shown = (await client.get(f"/v1/tickets/{t1}", headers=auth)).json()
        states = []
        for version in range(1, shown["version"] + 1):
            then = (await client.get(f"/v1/tickets/{t1}/as-of", headers=auth,
                                     params={"version": version})).json()
            states.append((then["state"], then["sla"]["agent_work"]))
        solved = next(i for i, (state, _) in enumerate(states) if state == "solved")
        assert worked(states[solved][1]) == first_solve[str(t1)]["agent_work_ms"]
        reopened = next(i for i, (state, _) in enumerate(states)
                        if i > solved and state == "open")
        clock_then = states[reopened][1]
        assert not clock_then["paused"] and clock_then["fulfilled_at"] is None
        assert clock_then["due_at"] == "2026-06-09T16:30:00Z"
        assert clock_then["policy"]["calendar_version"] == 1
        summary = (await client.get("/v1/analytics/summary", headers=auth, params={
            "from": "2026-06-05", "to": "2026-06-09"})).json()
    assert summary["lag"] == 0
    total = summary["total"]
    assert total["sla_achievement"]["agent_work"] == 0.5  # T1 met, T2 missed
    assert total["agent_work_ms"] == {"median": 3.75 * HOUR, "p90": 4.5 * HOUR}
