"""Rules on time, with a clock the test moves: business hours across a weekend and a
holiday; once per episode, a new episode fires again; two schedulers firing the same
job at once act once."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any
from uuid import UUID

from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.rule import CreateRule
from domain.rule_parts import Action, Condition, TimeTrigger
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.values import TicketState
from eventstore.types import StoreActor
from handlers import rule_dry_run, rule_timers
from handlers.rules import create_rule
from handlers.tenant_settings import ReplaceSettings, replace_settings
from handlers.ticket_state import load_ticket
from tests.support.desk import ACTOR, Desk
from tests.support.rules import by_rule, engine

FRIDAY = datetime(2026, 6, 5, 15, tzinfo=UTC)  # pending from Friday 15:00
HOLIDAY = date(2026, 6, 8)  # the Monday after
WEEK = Calendar(timezone="UTC", weekly={d: [("09:00", "17:00")] for d in range(5)},
                holidays=[HOLIDAY])
AGENT = UUID(int=5)


async def _setup(store: Any, make_tenant: Any, pool: Any) -> tuple[Any, Desk, Any]:
    tenant = (await make_tenant("Timed")).tenant_id
    clock = ManualClock(FRIDAY - timedelta(hours=1))
    desk = Desk(store, tenant, clock)
    await desk.hire(AGENT)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await replace_settings(s, ReplaceSettings(settings=dataclasses.replace(
            DEFAULT_SETTINGS, business_hours=WEEK), at=clock.now()))
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    return tenant, desk, eng


async def _rule(store: Any, tenant: Any, at: datetime, hours: int, business: bool) -> UUID:
    command = CreateRule(
        rule_id=uuid.uuid4(), name=f"{hours}h", at=at,
        time=TimeTrigger(since="pending", hours=hours, business=business),
        conditions=(Condition(field="state", op="is", value="pending"),),
        actions=(Action(type="add_note", value="Waiting on {{requester.email}}; solved."),
                 Action(type="set_state", value="solved")))
    async with store.unit_of_work(tenant, ACTOR) as s:
        return (await create_rule(s, command)).id


async def _pass(store: Any, tenant: Any, now: datetime) -> list[dict[str, Any]]:
    """One evaluation pass; the ``rules.time`` jobs it left, as payloads."""
    async with store.unit_of_work(tenant, ACTOR) as s:
        await rule_timers.evaluate_tenant(s.conn, s.tenant_id, now)
        rows = await s.conn.fetch("SELECT payload FROM jobs WHERE tenant_id = $1 AND kind = "
                                  "'rules.time' AND status = 'ready'", tenant)
        await s.conn.execute("DELETE FROM jobs WHERE tenant_id = $1 AND kind = 'rules.time'",
                             tenant)
    return [r["payload"] for r in rows]


async def _fire(store: Any, tenant: Any, payload: dict[str, Any], now: datetime) -> bool:
    rule = UUID(payload["rule_id"])
    async with store.unit_of_work(tenant, StoreActor("rule", str(rule))) as uow:
        return await rule_timers.fire(uow, rule, UUID(payload["ticket_id"]),
                                      datetime.fromisoformat(payload["episode"]), now)


async def test_business_hours_across_a_weekend_and_a_holiday(pool, store, make_tenant):
    tenant, desk, eng = await _setup(store, make_tenant, pool)
    business = await _rule(store, tenant, desk.clock.now(), 8, business=True)
    calendar = await _rule(store, tenant, desk.clock.now(), 30, business=False)
    tid = await desk.open()
    desk.clock.set(FRIDAY)
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()

    # Friday 15-17 is 2 business hours; the weekend and the holiday add none; Tuesday
    # 09-15 the other 6: due Tuesday 15:00. The 30 calendar hours end Saturday 21:00.
    saturday = datetime(2026, 6, 6, 21, 30, tzinfo=UTC)
    assert [p["rule_id"] for p in await _pass(store, tenant, saturday)] == [str(calendar)]
    for now in (datetime(2026, 6, 8, 16, tzinfo=UTC), datetime(2026, 6, 9, 14, 59, tzinfo=UTC)):
        assert [p["rule_id"] for p in await _pass(store, tenant, now)] == [str(calendar)], now
    tuesday = datetime(2026, 6, 9, 15, 1, tzinfo=UTC)
    due = await _pass(store, tenant, tuesday)
    assert sorted(p["rule_id"] for p in due) == sorted([str(business), str(calendar)])
    [job] = [p for p in due if p["rule_id"] == str(business)]
    assert datetime.fromisoformat(job["episode"]) == FRIDAY

    assert await _fire(store, tenant, job, tuesday) is True
    assert await _fire(store, tenant, job, tuesday) is False  # once per episode
    assert [e["type"] for e in await by_rule(store, tenant, business)] == [
        "MessageAdded", "StateChanged"]
    async with store.unit_of_work(tenant, readonly=True) as s:
        ticket = await load_ticket(s.conn, s.tenant_id, tid)
    assert ticket is not None and ticket.state is TicketState.SOLVED
    # Solved: the conditions no longer hold, and the episode is spent anyway.
    await eng.drain()
    assert await _pass(store, tenant, tuesday + timedelta(days=3)) == []


async def test_a_new_episode_fires_again_and_two_schedulers_fire_once(pool, store,
                                                                      make_tenant):
    tenant, desk, eng = await _setup(store, make_tenant, pool)
    rule = await _rule(store, tenant, desk.clock.now(), 2, business=False)
    tid = await desk.open()
    desk.clock.set(FRIDAY)
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()
    later = FRIDAY + timedelta(hours=3)
    [job] = await _pass(store, tenant, later)
    both = await asyncio.gather(_fire(store, tenant, job, later),
                                _fire(store, tenant, job, later))
    assert sorted(both) == [False, True]
    assert len(await by_rule(store, tenant, rule)) == 2

    # Reopened and pending again: a new episode, which fires once more.
    desk.clock.set(later + timedelta(hours=1))
    await desk.state(tid, TicketState.OPEN, AGENT)
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()
    assert await _pass(store, tenant, later + timedelta(hours=2)) == []
    [again] = await _pass(store, tenant, later + timedelta(hours=3, minutes=1))
    assert again["episode"] != job["episode"]
    assert await _fire(store, tenant, again, later + timedelta(hours=3, minutes=1)) is True
    assert len(await by_rule(store, tenant, rule)) == 4


async def test_the_dry_run_judges_time_rules_by_their_clocks(pool, store, make_tenant):
    tenant, desk, eng = await _setup(store, make_tenant, pool)
    business = await _rule(store, tenant, desk.clock.now(), 8, business=True)
    calendar = await _rule(store, tenant, desk.clock.now(), 30, business=False)
    tid = await desk.open()
    await eng.drain()

    async def judged(now: datetime) -> dict[str, Any]:
        async with store.unit_of_work(tenant, readonly=True) as s:
            document = await rule_dry_run.dry_run(s, tid, now)
        assert document is not None
        return {UUID(r["rule_id"]): r for r in document["rules"]}

    open_ = await judged(FRIDAY)
    assert open_[business]["matches"] is False
    assert open_[business]["reasons"][0] == "the ticket is not pending"
    assert open_[business]["clock"]["started_at"] is None

    desk.clock.set(FRIDAY)
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()
    saturday = datetime(2026, 6, 6, 21, 30, tzinfo=UTC)
    seen = await judged(saturday)
    assert seen[calendar]["matches"] is True and seen[calendar]["reasons"] == []
    assert seen[calendar]["clock"] == {
        "since": "pending", "hours": 30, "business": False, "started_at": FRIDAY,
        "hours_run": 30.5, "hours_remaining": 0.0}
    # Friday 15-17 is all the business time there is by Saturday night.
    assert seen[business]["matches"] is False
    assert seen[business]["reasons"] == ["its clock has run 2.00 of 8 business hours: "
                                         "6.00 to go"]
    assert seen[business]["clock"]["hours_remaining"] == 6.0

    [job] = await _pass(store, tenant, saturday)
    assert await _fire(store, tenant, job, saturday) is True
    # The engine has not read the rule's events yet: the episode is the same one.
    after = await judged(saturday)
    assert after[calendar]["matches"] is False
    assert after[calendar]["reasons"][0] == (
        f"it fired already in this clock's episode (since {FRIDAY.isoformat()})")


async def test_a_time_rule_mails_once_per_episode(pool, store, make_tenant):
    from handlers import mailboxes

    tenant, desk, eng = await _setup(store, make_tenant, pool)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await mailboxes.create_mailbox(s, mailboxes.CreateMailbox(
            address="support@acme.test", name="Support", at=desk.clock.now(),
            smtp=mailboxes.Smtp(host="127.0.0.1", port=25, security="none")))
        await create_rule(s, CreateRule(
            rule_id=uuid.uuid4(), name="nudge", at=desk.clock.now(),
            time=TimeTrigger(since="pending", hours=2),
            conditions=(Condition(field="state", op="is", value="pending"),),
            actions=(Action(type="send_mail", value={"to": "requester", "template": {
                "subject": "Still there? {{ subject }}", "body": "Hello {{ name }}"}}),)))
    tid = await desk.open()
    desk.clock.set(FRIDAY)
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()
    later = FRIDAY + timedelta(hours=3)
    [job] = await _pass(store, tenant, later)
    both = await asyncio.gather(_fire(store, tenant, job, later),
                                _fire(store, tenant, job, later))
    assert sorted(both) == [False, True]
    async with store.unit_of_work(tenant, readonly=True) as s:
        mails = await s.conn.fetch("SELECT to_address, ticket_id FROM mail_notifications "
                                   "WHERE tenant_id = $1 AND kind = 'rule'", tenant)
    assert [(m["to_address"], m["ticket_id"]) for m in mails] == [("c@example.com", tid)]
