"""The rule engine against the real store, as the runtime role: each matching event's
actions happen once (a worker killed mid-batch, two engines at once), a rule's events
carry its actor, and chains of rules stop."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from domain.agent import UpdateAgent
from domain.clock import ManualClock
from domain.ids import AgentId
from domain.rule import CHAIN_DEPTH_MAX
from domain.values import Priority, TicketState
from handlers import mailboxes
from handlers.agents import update_agent
from handlers.ticket_state import load_ticket
from tests.support.desk import ACTOR, Desk
from tests.support.rules import by_rule, engine, make_rule

ROOT = Path(__file__).parents[2]
START = datetime(2026, 6, 1, 9, tzinfo=UTC)
AGENT = UUID(int=77)

URGENT_TAG = ([{"field": "event", "op": "is", "value": "TicketOpened"},
               {"field": "priority", "op": "is", "value": "urgent"}],
              [{"type": "add_tags", "value": ["rush"]},
               {"type": "add_note", "value": "Urgent: {{ticket.subject}} for "
                                             "{{requester.email}}"}])


async def setup(store: Any, make_tenant: Any) -> tuple[Any, Desk]:
    tenant = (await make_tenant("Rules")).tenant_id
    desk = Desk(store, tenant, ManualClock(START))
    await desk.hire(AGENT)
    return tenant, desk


async def test_a_matching_event_fires_its_rule_through_the_write_path(
    pool: Any, store: Any, make_tenant: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    rule = await make_rule(store, tenant, START, *URGENT_TAG)
    urgent = await desk.open(Priority.URGENT)
    normal = await desk.open(Priority.NORMAL)
    await eng.drain()

    events = await by_rule(store, tenant, rule)
    assert [(e["stream_id"], e["type"]) for e in events] == [
        (urgent, "TagsChanged"), (urgent, "MessageAdded")]
    note = events[1]["data"]
    assert note["visibility"] == "internal"
    assert note["author"] == {"kind": "rule", "id": str(rule)}
    async with store.unit_of_work(tenant, readonly=True) as s:
        ticket = await load_ticket(s.conn, s.tenant_id, urgent)
        other = await load_ticket(s.conn, s.tenant_id, normal)
        [message] = await s.conn.fetch(
            "SELECT body FROM messages WHERE tenant_id = $1 AND ticket_id = $2 AND "
            "visibility = 'internal'", tenant, urgent)
    assert ticket is not None and ticket.tags == ("rush",)
    assert other is not None and other.tags == ()
    assert message["body"] == "Urgent: Help for c@example.com"
    await eng.drain()  # caught up: nothing again
    assert len(await by_rule(store, tenant, rule)) == 2


async def test_a_refused_action_undoes_its_rule_only_and_is_recorded(
    pool: Any, store: Any, make_tenant: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    # Tagging succeeds; then the assignee, active when the rule was saved, is not.
    bad = await make_rule(store, tenant, START, [{"field": "event", "op": "is",
                                                  "value": "TicketOpened"}],
                          [{"type": "add_tags", "value": ["a"]},
                           {"type": "assign", "value": str(AGENT)}], position=1)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await update_agent(s, UpdateAgent(agent_id=AgentId(AGENT), active=False, at=START))
    good = await make_rule(store, tenant, START, [{"field": "event", "op": "is",
                                                   "value": "TicketOpened"}],
                           [{"type": "set_priority", "value": "high"}], position=2)
    tid = await desk.open()
    await eng.drain()
    assert await by_rule(store, tenant, bad) == []
    assert [e["type"] for e in await by_rule(store, tenant, good)] == ["PriorityChanged"]
    async with store.unit_of_work(tenant, readonly=True) as s:
        rows = await s.conn.fetch("SELECT rule_id, outcome, detail FROM rule_firings "
                                  "WHERE tenant_id = $1 ORDER BY rule_id", tenant)
        ticket = await load_ticket(s.conn, s.tenant_id, tid)
    outcomes = {r["rule_id"]: r["outcome"] for r in rows}
    assert outcomes == {bad: "refused", good: "fired"}
    assert ticket is not None and ticket.tags == () and ticket.priority is Priority.HIGH


async def test_two_rules_that_trigger_each_other_stop_at_the_chain_depth(
    pool: Any, store: Any, make_tenant: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    changed = {"field": "event", "op": "is", "value": "PriorityChanged"}
    up = await make_rule(store, tenant, START,
                         [changed, {"field": "priority", "op": "is", "value": "low"}],
                         [{"type": "set_priority", "value": "high"}], name="up")
    down = await make_rule(store, tenant, START,
                           [changed, {"field": "priority", "op": "is", "value": "high"}],
                           [{"type": "set_priority", "value": "low"}], name="down")
    tid = await desk.open()
    await desk.priority(tid, Priority.LOW, AGENT)
    await eng.drain()

    events = await by_rule(store, tenant)
    acted = [(e["actor_id"], e["data"].get("priority")) for e in events
             if e["type"] == "PriorityChanged"]
    # Depth 1 is "up" acting on the agent's change; they alternate to the limit.
    assert acted == [(str(up if i % 2 == 0 else down), "high" if i % 2 == 0 else "low")
                     for i in range(CHAIN_DEPTH_MAX)]
    [stopped] = [e for e in events if e["type"] == "RuleChainStopped"]
    next_rule = up if CHAIN_DEPTH_MAX % 2 == 0 else down
    assert stopped["actor_id"] == str(next_rule) and stopped["stream_id"] == tenant
    assert stopped["data"]["depth"] == CHAIN_DEPTH_MAX
    assert stopped["data"]["ticket_id"] == str(tid)
    await eng.drain()
    assert len(await by_rule(store, tenant)) == len(events)


async def test_a_rule_never_fires_on_its_own_events(
    pool: Any, store: Any, make_tenant: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    # Every state change moves the ticket on: without the guard it would chase itself.
    rule = await make_rule(store, tenant, START,
                           [{"field": "event", "op": "is", "value": "StateChanged"}],
                           [{"type": "add_tags", "value": ["moved"]},
                            {"type": "set_state", "value": "on_hold"}])
    tid = await desk.open()
    await desk.state(tid, TicketState.PENDING, AGENT)
    await eng.drain()
    assert [e["type"] for e in await by_rule(store, tenant, rule)] == [
        "TagsChanged", "StateChanged"]


async def test_two_engines_at_once_act_once_per_event(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    engines = [engine(pool, store, batch_size=7, poll_interval=0.05, concurrency=2,
                      listen_dsn=db.runtime_url) for _ in range(2)]
    await engines[0].ensure_checkpoints()
    rule = await make_rule(store, tenant, START, *URGENT_TAG)
    for e in engines:
        await e.start()
    try:
        opened = [await desk.open(Priority.URGENT if i % 3 == 0 else Priority.LOW)
                  for i in range(30)]
        urgent = opened[::3]
        for _ in range(400):
            if len(await by_rule(store, tenant, rule)) >= 2 * len(urgent):
                break
            await asyncio.sleep(0.05)
    finally:
        for e in engines:
            await e.stop()
    events = await by_rule(store, tenant, rule)
    assert sorted((e["stream_id"], e["type"]) for e in events) == sorted(
        [(t, "TagsChanged") for t in urgent] + [(t, "MessageAdded") for t in urgent])


@pytest.mark.slow  # a rule engine child process
async def test_a_worker_killed_mid_batch_leaves_each_action_done_once(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    rule = await make_rule(store, tenant, START, *URGENT_TAG)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await mailboxes.create_mailbox(s, mailboxes.CreateMailbox(
            address="support@acme.test", name="Support", at=START,
            smtp=mailboxes.Smtp(host="127.0.0.1", port=25, security="none")))
    await make_rule(store, tenant, START, URGENT_TAG[0], [{"type": "send_mail", "value": {
        "to": "requester", "template": {"subject": "Re: {{ subject }}",
                                        "body": "Hello {{ name }}"}}}], name="mail")
    urgent = [await desk.open(Priority.URGENT) for _ in range(6)]
    child = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-m", "tests.support.rule_engine_child", db.runtime_url, "3", "4"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = await asyncio.to_thread(child.stdout.readline)
        assert line.startswith("IN_BATCH"), line
        from_seq, to_seq = map(int, line.split()[1:])
        # The batch in flight has its actions appended, not committed; the claim is
        # held, so another engine skips the tenant rather than wait.
        assert await eng.run_once() is None
        os.kill(child.pid, signal.SIGKILL)
        await asyncio.to_thread(child.wait, 10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    async with store.unit_of_work(tenant, readonly=True) as s:
        in_flight = await s.conn.fetchval(
            "SELECT count(*) FROM events WHERE tenant_id = $1 AND type = 'TicketOpened' "
            "AND seq > $2 AND seq <= $3", tenant, from_seq, to_seq)
    assert in_flight >= 1  # it was killed with a rule's actions in the batch
    before = {e["stream_id"] for e in await by_rule(store, tenant, rule)}
    assert len(before) < len(urgent)
    await eng.drain()
    events = await by_rule(store, tenant, rule)
    assert sorted((e["stream_id"], e["type"]) for e in events) == sorted(
        [(t, "TagsChanged") for t in urgent] + [(t, "MessageAdded") for t in urgent])
    # The mail rule's mail was queued once per event, with one job each.
    async with store.unit_of_work(tenant, readonly=True) as s:
        mails = await s.conn.fetch(
            "SELECT ticket_id, count(*) AS n FROM mail_notifications WHERE tenant_id = $1 "
            "AND kind = 'rule' GROUP BY ticket_id", tenant)
        mail_jobs = await s.conn.fetchval(
            "SELECT count(*) FROM jobs WHERE tenant_id = $1 AND kind = 'mail.notify'", tenant)
    assert sorted((m["ticket_id"], m["n"]) for m in mails) == sorted((t, 1) for t in urgent)
    assert mail_jobs == len(urgent)


async def test_conditions_see_the_ticket_right_after_the_event_not_as_it_is_later(
    pool: Any, store: Any, make_tenant: Any
) -> None:
    tenant, desk = await setup(store, make_tenant)
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    on = {"field": "event", "op": "is", "value": "PriorityChanged"}
    rush = await make_rule(store, tenant, START, [
        on, {"field": "priority", "op": "is", "value": "urgent"}],
        [{"type": "add_tags", "value": ["rush"]}])
    calm = await make_rule(store, tenant, START, [
        on, {"field": "priority", "op": "is", "value": "low"}],
        [{"type": "add_tags", "value": ["calm"]}])
    tid = await desk.open()
    # Two changes before the engine runs: by then the ticket is low, but the first
    # change left it urgent, and that is what its rules must see.
    await desk.priority(tid, Priority.URGENT, AGENT)
    await desk.priority(tid, Priority.LOW, AGENT)
    await eng.drain()
    async with store.unit_of_work(tenant, readonly=True) as s:
        changes = await s.conn.fetch(
            "SELECT seq FROM events WHERE tenant_id = $1 AND stream_id = $2 "
            "AND type = 'PriorityChanged' ORDER BY seq", tenant, tid)
        fired = await s.conn.fetch("SELECT rule_id, trigger_seq FROM rule_firings "
                                   "WHERE tenant_id = $1", tenant)
        ticket = await load_ticket(s.conn, s.tenant_id, tid)
    assert {(r["rule_id"], r["trigger_seq"]) for r in fired} == {
        (rush, changes[0]["seq"]), (calm, changes[1]["seq"])}
    assert ticket is not None and set(ticket.tags) == {"rush", "calm"}
    # The engine knew nothing of the ticket: it folded it once, then went on in memory.
    [rules] = eng.projections.values()
    assert rules.states.folds == 1
