"""A scripted week of tickets: the analytics equal values worked out by hand.

Business hours Mon-Fri 09:00-17:00 UTC. Monday is 2026-06-01. Agents A1 and A2.

  T1 urgent/email  Mon 09:00 opened; 09:30 assigned A1; 10:00 A1 replies, pending;
                   11:00 customer writes (back to open); 12:00 solved; Wed 12:00 closed.
  T5 normal/email  Mon 10:00 opened, never answered; Tue 10:30 first response breached.
  T2 normal/portal Mon 16:00 opened; 16:30 A2 internal note; Tue 10:00 A2 replies and is
                   assigned; 11:00 solved; Wed 09:00 customer writes (reopened);
                   10:00 A2 replies; 12:00 solved.
  T3 urgent/chat   Tue 09:00 opened; 10:30 first response breached; 11:00 A1 replies and
                   is assigned; 11:30 priority high. Left open.
  T4 low/email     Wed 09:00 opened, assigned A2, 09:30 on hold.

The Sunday before (2026-05-31, outside the week's window), for deflection:

  T6 normal/email  10:00 opened; 10:30 customer writes; 11:00 A1 solves; 12:00 closed.
                   No staff message: deflected.
  T7 low/portal    10:00 opened; 11:00 A2 internal note; 12:00 A2 solves (a note).
  T8 high/chat     11:00 opened; 11:30 A1 replies; 12:00 A1 solves (a public reply).
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from api.app import create_app
from api.config import ProcessSettings
from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.rule_parts import Condition
from domain.sla_calendar import CreateCalendar
from domain.target_policy import CreatePolicy
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.values import Priority, Role, SlaMetric, Source, TicketState, Visibility
from domain.workflow_events import PolicyTargets
from eventstore.types import StoreActor
from handlers import sla_policies as calendars
from handlers.api_keys import IssueKey, issue_key
from handlers.tenant_settings import ReplaceSettings, replace_settings
from projections import analytics_cells as cells
from projections import analytics_reads as reads
from projections.projector import Projector
from tests.support.desk import Desk
from tests.support.http import asgi_client

HOUR = 3_600_000
HOURS = {"weekly": {str(d): [["09:00", "17:00"]] for d in range(5)}, "timezone": "UTC"}
A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
A2 = uuid.UUID("00000000-0000-0000-0000-0000000000a2")
ACTOR = StoreActor("operator", "test")


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 6, day, hour, minute, tzinfo=UTC)


async def sunday(desk: Desk, clock: ManualClock) -> dict[str, uuid.UUID]:
    clock.set(datetime(2026, 5, 31, 10, tzinfo=UTC))
    t6 = await desk.open(Priority.NORMAL, Source.EMAIL)
    t7 = await desk.open(Priority.LOW, Source.PORTAL)
    clock.set(datetime(2026, 5, 31, 10, 30, tzinfo=UTC))
    await desk.customer(t6)
    clock.set(datetime(2026, 5, 31, 11, tzinfo=UTC))
    await desk.state(t6, TicketState.SOLVED, A1)
    await desk.reply(t7, A2, Visibility.INTERNAL)
    t8 = await desk.open(Priority.HIGH, Source.CHAT)
    clock.set(datetime(2026, 5, 31, 11, 30, tzinfo=UTC))
    await desk.reply(t8, A1)
    clock.set(datetime(2026, 5, 31, 12, tzinfo=UTC))
    await desk.state(t6, TicketState.CLOSED, A1)
    await desk.state(t7, TicketState.SOLVED, A2)
    await desk.state(t8, TicketState.SOLVED, A1)
    return {"t6": t6, "t7": t7, "t8": t8}


async def play(desk: Desk, clock: ManualClock) -> dict[str, uuid.UUID]:
    clock.set(at(1, 9))
    t1 = await desk.open(Priority.URGENT, Source.EMAIL)
    clock.set(at(1, 9, 30))
    await desk.assign(t1, A1, A1)
    clock.set(at(1, 10))
    t5 = await desk.open(Priority.NORMAL, Source.EMAIL)
    await desk.reply(t1, A1)
    await desk.state(t1, TicketState.PENDING, A1)
    clock.set(at(1, 11))
    await desk.customer(t1)
    clock.set(at(1, 12))
    await desk.state(t1, TicketState.SOLVED, A1)
    clock.set(at(1, 16))
    t2 = await desk.open(Priority.NORMAL, Source.PORTAL)
    clock.set(at(1, 16, 30))
    await desk.reply(t2, A2, Visibility.INTERNAL)
    clock.set(at(2, 9))
    t3 = await desk.open(Priority.URGENT, Source.CHAT)
    clock.set(at(2, 10))
    await desk.reply(t2, A2)
    await desk.assign(t2, A2, A2)
    clock.set(at(2, 10, 30))
    assert await desk.check(t3, SlaMetric.FIRST_RESPONSE) == 1
    assert await desk.check(t5, SlaMetric.FIRST_RESPONSE) == 1
    clock.set(at(2, 11))
    await desk.state(t2, TicketState.SOLVED, A2)
    await desk.reply(t3, A1)
    await desk.assign(t3, A1, A1)
    clock.set(at(2, 11, 30))
    await desk.priority(t3, Priority.HIGH, A1)
    clock.set(at(3, 9))
    await desk.customer(t2)
    t4 = await desk.open(Priority.LOW, Source.EMAIL)
    await desk.assign(t4, A2, A1)
    clock.set(at(3, 9, 30))
    await desk.state(t4, TicketState.ON_HOLD, A2)
    clock.set(at(3, 10))
    await desk.reply(t2, A2)
    clock.set(at(3, 12))
    await desk.state(t2, TicketState.SOLVED, A2)
    await desk.state(t1, TicketState.CLOSED, A1)
    return {"t1": t1, "t2": t2, "t3": t3, "t4": t4, "t5": t5}


@pytest.fixture
async def scenario(pool: Any, store: Any, make_tenant: Any, db: Any) -> dict[str, Any]:
    tenant = await make_tenant("Scenario")
    clock = ManualClock(at(1, 9))
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        await replace_settings(s, ReplaceSettings(
            settings=dataclasses.replace(DEFAULT_SETTINGS,
                                         business_hours=Calendar.model_validate(HOURS)),
            at=clock.now()))
    desk = Desk(store, tenant.tenant_id, clock)
    await desk.hire(A1, A2)
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        analyst = await issue_key(s, IssueKey(name="analyst", role=Role.ANALYST, at=clock.now()))
        others = [(await issue_key(s, IssueKey(name=role.value, role=role, at=clock.now(),
                                               agent_id=A1 if role is Role.AGENT else None)
                                   )).secret
                  for role in (Role.AGENT, Role.INTAKE, Role.AUDITOR)]
    tickets = {**await sunday(desk, clock), **await play(desk, clock)}
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    return {"tenant": tenant, "tickets": tickets, "analyst": analyst.secret,
            "others": others, "settings": ProcessSettings(database_url=db.runtime_url),
            "clock": clock, "store": store, "pool": pool}


async def test_per_ticket_metrics_match_the_hand_computed_values(scenario: dict[str, Any]) -> None:
    t = scenario["tickets"]
    async with scenario["pool"].acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                           str(scenario["tenant"].tenant_id))
        rows = {r["ticket_id"]: r for r in await conn.fetch("SELECT * FROM analytics_tickets")}
    got = {name: rows[tid] for name, tid in t.items()}
    expect = {
        # first reply (calendar, business), resolution, open-only resolution, reopens,
        # public agent replies, staff notes, FR breaches, state, priority
        "t1": (1 * HOUR, 1 * HOUR, 3 * HOUR, 2 * HOUR, 0, 1, 0, 0, "closed", "urgent"),
        "t2": (18 * HOUR, 2 * HOUR, 44 * HOUR, 22 * HOUR, 1, 2, 1, 0, "solved", "normal"),
        "t3": (2 * HOUR, 2 * HOUR, None, None, 0, 1, 0, 1, "open", "high"),
        "t4": (None, None, None, None, 0, 0, 0, 0, "on_hold", "low"),
        "t5": (None, None, None, None, 0, 0, 0, 1, "open", "normal"),
        # Sunday: outside business hours, so T8's business first reply is nil.
        "t6": (None, None, 1 * HOUR, 1 * HOUR, 0, 0, 0, 0, "closed", "normal"),
        "t7": (None, None, 2 * HOUR, 2 * HOUR, 0, 0, 1, 0, "solved", "low"),
        "t8": (HOUR // 2, 0, 1 * HOUR, 1 * HOUR, 0, 1, 0, 0, "solved", "high"),
    }
    assert got.keys() == expect.keys()
    for name, row in got.items():
        assert (row["first_reply_ms"], row["first_reply_business_ms"], row["resolution_ms"],
                row["resolution_open_ms"], row["reopens"], row["public_agent_replies"],
                row["staff_notes"], row["breaches_first_response"], row["state"],
                row["priority"]) == expect[name], name
    assert got["t2"]["assignee"] == str(A2) and got["t3"]["assignee"] == str(A1)


async def test_endpoints_match_the_hand_computed_values(
    scenario: dict[str, Any], snapshot: SnapshotAssertion
) -> None:
    app = create_app(scenario["settings"], clock=scenario["clock"])
    auth = {"Authorization": f"Bearer {scenario['analyst']}"}
    window = {"from": "2026-06-01", "to": "2026-06-03"}
    async with asgi_client(app) as client:
        summary = (await client.get("/v1/analytics/summary",
                                    params={**window, "group_by": "priority"},
                                    headers=auth)).json()
        volume = (await client.get("/v1/analytics/volume", params=window, headers=auth)).json()
        backlog = (await client.get("/v1/analytics/backlog", headers=auth)).json()
        agents = (await client.get("/v1/analytics/agents", params=window, headers=auth)).json()
        by_day = (await client.get("/v1/analytics/summary",
                                   params={**window, "group_by": "day"}, headers=auth)).json()

    total = summary["total"]
    assert (total["tickets"], total["solved"]) == (5, 2)
    # first replies 1h, 2h, 18h -> median 2h, p90 18h (nearest rank)
    assert total["first_reply_ms"] == {"median": 2 * HOUR, "p90": 18 * HOUR}
    assert total["first_reply_business_ms"] == {"median": 2 * HOUR, "p90": 2 * HOUR}
    assert total["resolution_ms"] == {"median": 3 * HOUR, "p90": 44 * HOUR}
    # On settings, no policy measures periodic updates, requester wait or agent work.
    assert total["sla_achievement"] == {"first_response": 0.6, "next_reply": 1.0,
                                        "resolution": 1.0, "periodic_update": None,
                                        "requester_wait": None, "agent_work": None}
    assert total["requester_wait_ms"] == {"median": None, "p90": None}
    assert total["agent_work_ms"] == {"median": None, "p90": None}
    assert total["reopen_rate"] == 0.5  # T2 of T1, T2
    assert total["one_touch_rate"] == 0.5  # T1 of T1, T2
    # T1 and T2 were answered: nothing deflected in the week.
    assert (total["deflected"], total["deflection_rate"]) == (0, 0.0)
    groups = {g["key"]: g for g in summary["groups"]}
    assert sorted(groups) == ["high", "low", "normal", "urgent"]
    assert groups["normal"]["sla_achievement"]["first_response"] == 0.5
    assert groups["normal"]["reopen_rate"] == 1.0 and groups["urgent"]["one_touch_rate"] == 1.0
    assert groups["high"]["first_reply_ms"]["median"] == 2 * HOUR
    assert {g["key"]: g["tickets"] for g in by_day["groups"]} == {
        "2026-06-01": 3, "2026-06-02": 1, "2026-06-03": 1}

    days = {d["day"]: d for d in volume["days"]}
    assert [(d["created"], d["solved"], d["reopened"], d["breached"])
            for d in days.values()] == [(3, 1, 0, 0), (1, 1, 0, 2), (1, 1, 1, 0)]
    assert days["2026-06-02"]["by_priority"]["urgent"]["breached"] == 1
    assert days["2026-06-01"]["by_source"]["email"]["created"] == 2

    assert backlog["total"] == 3
    assert [(r["state"], r["priority"], r["age"], r["tickets"]) for r in backlog["rows"]] == [
        ("on_hold", "low", "lt_1d", 1), ("open", "high", "1d_3d", 1),
        ("open", "normal", "1d_3d", 1)]

    assert [(a["agent_id"], a["assigned"], a["replies"], a["solved"])
            for a in agents["agents"]] == [(str(A1), 2, 2, 1), (str(A2), 2, 2, 2)]

    # Deflection on the Sunday, by every grouping: T6 of the solved T6, T7, T8.
    sunday = {"from": "2026-05-31", "to": "2026-05-31"}
    async with asgi_client(app) as client:
        for group_by, holder in (("priority", "normal"), ("source", "email"),
                                 ("assignee", "none"), ("group", "none"),
                                 ("organization", "none"), ("day", "2026-05-31")):
            body = (await client.get("/v1/analytics/summary",
                                     params={**sunday, "group_by": group_by},
                                     headers=auth)).json()
            got = body["total"]
            assert (got["tickets"], got["solved"], got["deflected"]) == (3, 3, 1), group_by
            assert got["deflection_rate"] == 0.3333, group_by
            deflected = {g["key"]: g["deflected"] for g in body["groups"]}
            assert deflected.pop(holder) == 1, group_by
            assert set(deflected.values()) <= {0}, group_by
            if group_by == "priority":
                assert {g["key"]: g["deflection_rate"] for g in body["groups"]} == {
                    "high": 0.0, "low": 0.0, "normal": 1.0}

    for body in (summary, volume, backlog, agents):
        assert body["lag"] == 0 and body["rebuilding"] is False and body["as_of_seq"] > 0
    assert {"summary": summary, "volume": volume, "backlog": backlog,
            "agents": agents} == snapshot


async def test_only_analysts_and_admins_and_only_their_tenant(
    scenario: dict[str, Any], make_tenant: Any
) -> None:
    other = await make_tenant("Other")
    app = create_app(scenario["settings"], clock=scenario["clock"])
    async with asgi_client(app) as client:
        for secret in scenario["others"]:  # agent, intake, auditor
            for path in ("summary", "volume", "backlog", "agents"):
                r = await client.get(f"/v1/analytics/{path}",
                                     headers={"Authorization": f"Bearer {secret}"})
                assert r.status_code == 403, path
                assert r.headers["content-type"] == "application/problem+json"
        r = await client.get("/v1/analytics/summary")
        assert r.status_code == 401
        # The other tenant's admin sees none of the scenario's tickets.
        auth = {"Authorization": f"Bearer {other.admin_key.secret}"}
        params = {"from": "2026-06-01", "to": "2026-06-03"}
        summary = (await client.get("/v1/analytics/summary", params=params,
                                    headers=auth)).json()
        assert summary["total"]["tickets"] == 0 and summary["as_of_seq"] == 0
        assert (await client.get("/v1/analytics/backlog", headers=auth)).json()["total"] == 0
        assert (await client.get("/v1/analytics/volume", params=params,
                                 headers=auth)).json()["days"] == []
        bad = await client.get("/v1/analytics/summary", params={"group_by": "color"},
                               headers=auth)
        assert bad.status_code == 400
        bad = await client.get("/v1/analytics/volume",
                               params={"from": "2026-06-03", "to": "2026-06-01"}, headers=auth)
        assert bad.status_code == 400 and bad.json()["code"] == "invalid_range"
        for params in ({"to": "0001-01-02"}, {"from": "2020-01-01", "to": "2026-01-01"}):
            bad = await client.get("/v1/analytics/agents", params=params, headers=auth)
            assert bad.status_code == 400 and bad.json()["code"] == "invalid_range", params


@pytest.mark.slow  # starts a redis-server
async def test_cached_answers_follow_the_checkpoint_and_report_the_current_lag(
    scenario: dict[str, Any], redis_server: Any, db: Any
) -> None:
    settings = ProcessSettings(database_url=db.runtime_url, redis_url=redis_server.url)
    app = create_app(settings, clock=scenario["clock"])
    auth = {"Authorization": f"Bearer {scenario['analyst']}"}
    params = {"from": "2026-06-01", "to": "2026-06-03"}
    desk = Desk(scenario["store"], scenario["tenant"].tenant_id, scenario["clock"])
    async with asgi_client(app) as client:
        first = (await client.get("/v1/analytics/summary", params=params, headers=auth)).json()
        again = (await client.get("/v1/analytics/summary", params=params, headers=auth)).json()
        assert again == first
        metrics = app.state.services.metrics
        assert 'result="hit"} 1.0' in metrics.render().decode()

        # Appended, not yet projected: the same checkpoint's answer, with the lag of now.
        await desk.open(Priority.LOW, Source.PHONE)
        behind = (await client.get("/v1/analytics/summary", params=params, headers=auth)).json()
        assert behind["lag"] == 1 and behind["total"] == first["total"]

        await Projector(scenario["pool"]).drain()
        moved = (await client.get("/v1/analytics/summary", params=params, headers=auth)).json()
        assert moved["lag"] == 0 and moved["as_of_seq"] == first["as_of_seq"] + 1
        assert moved["total"]["tickets"] == first["total"]["tickets"] + 1


# Periodic update and requester wait, on SLA policies. Calendar "Office" Mon-Fri
# 09:00-17:00 UTC. Policy "urgent" (priority urgent): first reply 1 h, periodic update
# 1 h, no requester wait. Default: first reply 8 h, periodic update 2 h, requester wait
# 4 h. Both on Office.
#
#   W1 normal/email  Mon 09:00 opened; 10:00 A1 replies (update due 12:00), pending (wait
#                    paused, 1 h used); 11:00 A1 replies (met; next due 13:00); 13:00 the
#                    update breaches; 14:00 customer writes (open: the wait resumes);
#                    15:00 A1 replies (next due 17:00); 16:00 solved: the update met,
#                    waited 3 h of 4 (met). Updates: 2 met of 3.
#   W2 normal/portal Mon 16:00 opened (wait due Tue 12:00); Tue 12:00 the wait breaches;
#                    13:00 A2 replies and is assigned (update due 15:00); 14:00 solved:
#                    the update met, waited 6 h (missed). Updates: 1 of 1.
#   W3 urgent/chat   Tue 09:00 opened on urgent (no wait clock); 09:30 A1 replies (due
#                    10:30); 11:00 A1 replies late (missed, no check ran; next due
#                    12:00); 11:30 priority normal: re-matched onto the default, its wait
#                    starts then (due 15:30) and the update owed moves to 13:00 (30 min
#                    spent of 2 h); 12:30 A2 replies (met). Left open. Updates: 1 of 2.
#   W4 low/email     Wed 09:00 opened, left alone: waiting, nothing missed, no update owed.


async def update_and_wait(desk: Desk, clock: ManualClock) -> dict[str, uuid.UUID]:
    clock.set(at(1, 9))
    w1 = await desk.open(Priority.NORMAL, Source.EMAIL)
    clock.set(at(1, 10))
    await desk.reply(w1, A1)
    await desk.state(w1, TicketState.PENDING, A1)
    clock.set(at(1, 11))
    await desk.reply(w1, A1)
    clock.set(at(1, 13))
    assert await desk.check(w1, SlaMetric.PERIODIC_UPDATE) == 1
    clock.set(at(1, 14))
    await desk.customer(w1)
    clock.set(at(1, 15))
    await desk.reply(w1, A1)
    clock.set(at(1, 16))
    await desk.state(w1, TicketState.SOLVED, A1)
    w2 = await desk.open(Priority.NORMAL, Source.PORTAL)
    clock.set(at(2, 9))
    w3 = await desk.open(Priority.URGENT, Source.CHAT)
    clock.set(at(2, 9, 30))
    await desk.reply(w3, A1)
    clock.set(at(2, 11))
    await desk.reply(w3, A1)
    clock.set(at(2, 11, 30))
    await desk.priority(w3, Priority.NORMAL, A1)
    clock.set(at(2, 12))
    assert await desk.check(w2, SlaMetric.REQUESTER_WAIT) == 1
    clock.set(at(2, 12, 30))
    await desk.reply(w3, A2)
    clock.set(at(2, 13))
    await desk.reply(w2, A2)
    await desk.assign(w2, A2, A2)
    clock.set(at(2, 14))
    await desk.state(w2, TicketState.SOLVED, A2)
    clock.set(at(3, 9))
    w4 = await desk.open(Priority.LOW, Source.EMAIL)
    return {"w1": w1, "w2": w2, "w3": w3, "w4": w4}


async def test_periodic_update_and_requester_wait_match_the_hand_computed_values(
        pool: Any, store: Any, make_tenant: Any, db: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = await make_tenant("Updates")
    clock = ManualClock(at(1, 8))
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        office = await calendars.create_calendar(s, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Office", hours=Calendar.model_validate(HOURS),
            at=clock.now()))
        await calendars.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, calendar_id=office.id,
            targets=PolicyTargets(first_reply_ms=8 * HOUR, periodic_update_ms=2 * HOUR,
                                  requester_wait_ms=4 * HOUR), at=clock.now()))
        await calendars.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Urgent", calendar_id=office.id,
            conditions=(Condition(field="priority", op="is", value="urgent"),),
            targets=PolicyTargets(first_reply_ms=HOUR, periodic_update_ms=HOUR),
            at=clock.now()))
    desk = Desk(store, tenant.tenant_id, clock)
    await desk.hire(A1, A2)
    t = await update_and_wait(desk, clock)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()

    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                           str(tenant.tenant_id))
        rows = {r["ticket_id"]: r for r in await conn.fetch("SELECT * FROM analytics_tickets")}
    # measured, missed, waited (business ms), updates judged, met
    expect = {"w1": (True, False, 3 * HOUR, 3, 2), "w2": (True, True, 6 * HOUR, 1, 1),
              "w3": (True, False, None, 2, 1), "w4": (True, False, None, 0, 0)}
    assert {name: (rows[tid]["requester_wait_measured"], rows[tid]["requester_wait_missed"],
                   rows[tid]["requester_wait_ms"], rows[tid]["periodic_updates"],
                   rows[tid]["periodic_updates_met"]) for name, tid in t.items()} == expect

    wait = {"median": 3 * HOUR, "p90": 6 * HOUR}
    # group_by -> {key: (requester wait met, periodic update met)}, and the total: wait 3
    # of 4, updates 4 of 6.
    want = {
        "priority": {"low": (1.0, None), "normal": (0.6667, 0.6667)},
        "source": {"chat": (1.0, 0.5), "email": (1.0, 0.6667), "portal": (0.0, 1.0)},
        "assignee": {str(A2): (0.0, 1.0), "none": (1.0, 0.6)},
        "day": {"2026-06-01": (0.5, 0.75), "2026-06-02": (1.0, 0.5),
                "2026-06-03": (1.0, None)},
        "group": {"none": (0.75, 0.6667)},
        "organization": {"none": (0.75, 0.6667)},
    }
    app = create_app(ProcessSettings(database_url=db.runtime_url), clock=clock)
    auth = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    window = {"from": "2026-06-01", "to": "2026-06-03"}
    async with asgi_client(app) as client:
        for exact_up_to in (10**9, 0):  # from the ticket rows, then from the cells
            monkeypatch.setattr(reads, "EXACT_UP_TO", exact_up_to)
            for group_by, groups in want.items():
                body = (await client.get("/v1/analytics/summary", headers=auth, params={
                    **window, "group_by": group_by})).json()
                assert body["percentiles"]["exact"] is (
                    exact_up_to > 0 or group_by in ("group", "organization")), group_by
                total = body["total"]["sla_achievement"]
                assert (total["requester_wait"], total["periodic_update"]) == (0.75, 0.6667)
                got_wait = body["total"]["requester_wait_ms"]
                for p in ("median", "p90"):  # the cells' histograms: within the bound
                    assert abs(got_wait[p] - wait[p]) <= (
                        0 if body["percentiles"]["exact"] else cells.RELATIVE_ERROR
                    ) * wait[p], (group_by, p)
                got = {g["key"]: (g["sla_achievement"]["requester_wait"],
                                  g["sla_achievement"]["periodic_update"])
                       for g in body["groups"]}
                assert got == groups, (group_by, exact_up_to)
