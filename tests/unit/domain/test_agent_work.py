"""The agent-work clock: given a policy that measures it and ticket commands, then the
clock.

Zendesk's agent work time: the time the ticket spends open (in the agents' court),
summed over its open periods, in the policy calendar's business hours; it pauses while
pending, on hold or solved and runs again when the ticket is set open or reopened.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from domain.business_hours import Calendar
from domain.mapper import from_stored, to_stored
from domain.rule_parts import Condition
from domain.sla import SlaPolicy
from domain.target_policy import (
    CreatePolicy,
    TargetPolicy,
    decide_policy,
    evolve_policy,
    policy_matcher,
)
from domain.ticket.commands import ChangePriority, CheckSla
from domain.ticket.decide import RUNS_IN
from domain.ticket.events import SlaRetargeted, TicketOpened
from domain.values import Priority, SlaMetric, TicketState
from domain.workflow_events import PolicyTargets, SlaPolicyCreated
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    T0,
    H,
    at,
    given,
    move,
    open_cmd,
    reply,
    state_of,
    when,
)

AW, RW = SlaMetric.AGENT_WORK, SlaMetric.REQUESTER_WAIT
CAL = uuid.UUID(int=7)
BERLIN_WEEK = Calendar(timezone="Europe/Berlin",
                       weekly={d: [("09:00", "17:00")] for d in range(5)})


def policy(name: str, targets: PolicyTargets, *conditions: Condition, default: bool = False,
           calendar: uuid.UUID | None = None) -> TargetPolicy:
    [event] = decide_policy(CreatePolicy(
        policy_id=uuid.uuid5(CAL, name), name=name, default=default, conditions=conditions,
        targets=targets, calendar_id=calendar, at=T0), None)
    return evolve_policy(None, event)


def view(*policies: TargetPolicy, calendar: Calendar | None = None) -> SlaPolicy:
    current = {} if calendar is None else {CAL: (1, calendar)}
    return SlaPolicy(matcher=policy_matcher(policies, current))


WORK = policy("work", PolicyTargets(first_reply_ms=H, requester_wait_ms=6 * H,
                                    agent_work_ms=4 * H), default=True)
PLAIN = policy("plain", PolicyTargets(first_reply_ms=H), default=True)


def test_agent_work_runs_while_open_and_pauses_on_pending_on_hold_and_solved() -> None:
    # 4 h budget from 09:00: open 1 h, pending 2 h and on hold 1 h (both paused), open
    # 1 h more, solved at 14:00 with 2 h kept; reopened at 16:00: due at 18:00.
    sla = view(WORK)
    events = given(open_cmd(), move(TicketState.PENDING, at(1)), policy=sla)
    clock = state_of(events).clocks[AW]
    assert (clock.started_at, clock.paused, clock.remaining_ms) == (T0, True, 3 * H)
    events += when(events, move(TicketState.ON_HOLD, at(3)), policy=sla)
    assert state_of(events).clocks[AW].paused
    # The requester waits on hold; the agents are not working the ticket.
    assert state_of(events).clocks[RW].running
    events += when(events, move(TicketState.OPEN, at(4)), policy=sla)
    assert state_of(events).clocks[AW].due_at == at(7)
    events += when(events, move(TicketState.SOLVED, at(5)), policy=sla)
    clock = state_of(events).clocks[AW]
    assert (clock.fulfilled_at, clock.remaining_ms, clock.running) == (at(5), 2 * H, False)
    # A customer's reply reopens the ticket: the clock resumes, never resets.
    events += when(events, reply(at(7), actor=CUSTOMER, n=2), policy=sla)
    clock = state_of(events).clocks[AW]
    assert (clock.running, clock.fulfilled_at, clock.due_at) == (True, None, at(9))
    # It breaches once it is spent, and the breach latches.
    breached = [*events, *when(events, CheckSla(metric=AW, at=at(9)), policy=sla)]
    assert state_of(breached).clocks[AW].breached_at == at(9)
    assert when(breached, CheckSla(metric=AW, at=at(9, 5)), policy=sla) == []


def test_the_tenants_paused_states_do_not_move_it() -> None:
    # Neither the pending pause taken away nor on hold added: open only, as the table says.
    assert RUNS_IN[AW] == frozenset({TicketState.OPEN})
    loose = view(WORK).model_copy(update={"paused_states": frozenset({TicketState.SOLVED})})
    pending = given(open_cmd(), move(TicketState.PENDING, at(1)), policy=loose)
    assert state_of(pending).clocks[AW].paused
    assert state_of(pending).clocks[RW].paused


def test_a_policy_that_measures_no_agent_work_starts_no_clock() -> None:
    assert AW not in state_of(given(open_cmd(), policy=view(PLAIN))).clocks
    assert AW not in state_of(given(open_cmd())).clocks  # settings, no policies


def test_agent_work_counts_business_hours_across_a_weekend() -> None:
    # Berlin 09:00-17:00 Mon-Fri, 3 business hours. Opened Friday 15:00 Berlin (13:00
    # UTC): 1 h spent by pending at 16:00 Berlin. The customer answers on Saturday,
    # which reopens the ticket: 2 h left, counted from Monday 09:00, due 11:00 Berlin.
    office = policy("office", PolicyTargets(first_reply_ms=8 * H, agent_work_ms=3 * H),
                    default=True, calendar=CAL)
    sla = view(office, calendar=BERLIN_WEEK)
    friday = datetime(2026, 6, 5, 13, tzinfo=UTC)
    events = given(open_cmd(at=friday), reply(datetime(2026, 6, 5, 13, 30, tzinfo=UTC)),
                   move(TicketState.PENDING, datetime(2026, 6, 5, 14, tzinfo=UTC)),
                   reply(datetime(2026, 6, 6, 10, tzinfo=UTC), actor=CUSTOMER, n=2),
                   policy=sla)
    clock = state_of(events).clocks[AW]
    assert state_of(events).state is TicketState.OPEN
    assert (clock.running, clock.due_at) == (True, datetime(2026, 6, 8, 9, tzinfo=UTC))
    assert clock.basis is not None
    assert (clock.basis.calendar_id, clock.basis.calendar_version) == (CAL, 1)
    # Pending again on Monday 10:00 Berlin: 1 business hour kept.
    events += when(events, move(TicketState.PENDING, datetime(2026, 6, 8, 8, tzinfo=UTC)),
                   policy=sla)
    assert state_of(events).clocks[AW].remaining_ms == H


@pytest.mark.parametrize(("state", "running", "fulfilled"), [
    (TicketState.OPEN, True, None),
    (TicketState.ON_HOLD, False, None),
    (TicketState.PENDING, False, None),
    (TicketState.SOLVED, False, at(1)),
])
def test_a_ticket_re_matched_onto_a_policy_measuring_agent_work_starts_the_clock(
        state: TicketState, running: bool, fulfilled: object) -> None:
    works = policy("works", PolicyTargets(first_reply_ms=H, agent_work_ms=2 * H),
                   Condition(field="priority", op="is", value="urgent"))
    sla = view(PLAIN, works)
    history = given(open_cmd(), reply(at(0.5)), *(
        [] if state is TicketState.OPEN else [move(state, at(0.75))]), policy=sla)
    assert AW not in state_of(history).clocks
    [moved] = when(history, ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                           at=at(1)), policy=sla)[-1:]
    assert isinstance(moved, SlaRetargeted) and moved.to_policy.policy_id == works.id
    clock = moved.clocks[AW]
    assert (clock.started_at, clock.target_ms) == (at(1), 2 * H)
    assert (clock.running, clock.paused, clock.fulfilled_at) == (running, not running,
                                                                 fulfilled)
    assert clock.due_at == (at(3) if running else None)


def test_policies_and_clocks_recorded_before_agent_work_still_load() -> None:
    # A policy event and a ticket event as they were stored before agent work existed.
    [created] = decide_policy(CreatePolicy(
        policy_id=uuid.UUID(int=3), name="old", default=True,
        targets=PolicyTargets(first_reply_ms=H), at=T0), None)
    kind, version, data = to_stored(created)
    del data["targets"]["agent_work_ms"]
    loaded = from_stored(kind, version, data)
    assert isinstance(loaded, SlaPolicyCreated) and loaded.targets.agent_work_ms is None
    [opened] = given(open_cmd(), policy=view(PLAIN))
    kind, version, data = to_stored(opened)
    assert "agent_work" not in data["clocks"]
    ticket = from_stored(kind, version, data)
    assert isinstance(ticket, TicketOpened) and AW not in ticket.clocks
