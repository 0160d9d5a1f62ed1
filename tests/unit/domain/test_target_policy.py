"""SLA policies in the ticket's decisions: given policies and commands, then clocks.

Worked cases after Zendesk's documented metric examples (pausing on pending, the next
reply after a customer's reply, business hours across a weekend, a holiday and a DST
change in the calendar's zone), and the policies made from settings' targets giving
the same verdicts as the settings themselves.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from domain.business_hours import Calendar
from domain.errors import ValidationFailed
from domain.ids import ContactId, GroupId
from domain.rule_parts import Condition
from domain.sla import SlaPolicy, SlaTarget
from domain.target_policy import (
    CreatePolicy,
    DefaultPolicyKept,
    TargetPolicy,
    check_policy_set,
    decide_delete_policy,
    decide_policy,
    evolve_policy,
    legacy_policies,
    policy_matcher,
    reorder,
)
from domain.ticket.commands import (
    Assign,
    ChangePriority,
    ChangeRequester,
    CheckSla,
    RetargetSla,
)
from domain.ticket.events import SlaRetargeted
from domain.values import Priority, Requester, SlaMetric, TicketState, Visibility
from domain.workflow_events import PolicyTargets, SlaPolicyDeleted
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    T0,
    H,
    at,
    given,
    move,
    open_cmd,
    path_to,
    reply,
    state_of,
    when,
)

FR, NR, RES = SlaMetric.FIRST_RESPONSE, SlaMetric.NEXT_REPLY, SlaMetric.RESOLUTION
CAL = uuid.UUID(int=7)
BERLIN_WEEK = Calendar(timezone="Europe/Berlin",
                       weekly={d: [("09:00", "17:00")] for d in range(5)})


def policy(name: str, targets: PolicyTargets, *conditions: Condition, default: bool = False,
           position: int = 0, calendar: uuid.UUID | None = None) -> TargetPolicy:
    [event] = decide_policy(CreatePolicy(
        policy_id=uuid.uuid5(CAL, name), name=name, default=default, position=position,
        conditions=conditions, targets=targets, calendar_id=calendar, at=T0), None)
    return evolve_policy(None, event)


def view(*policies: TargetPolicy, calendar: Calendar | None = None) -> SlaPolicy:
    current = {} if calendar is None else {CAL: (1, calendar)}
    return SlaPolicy(matcher=policy_matcher(policies, current))


DEFAULT = policy("default", PolicyTargets(first_reply_ms=H, next_reply_ms=H // 2,
                                          resolution_ms=8 * H), default=True)


def test_the_first_matching_policy_wins_and_the_default_catches_the_rest() -> None:
    urgent = policy("urgent", PolicyTargets(first_reply_ms=H // 4),
                    Condition(field="priority", op="is", value="urgent"))
    vip = policy("vip", PolicyTargets(first_reply_ms=H // 6),
                 Condition(field="tags", op="contains", value="vip"), position=1)
    sla = view(DEFAULT, vip, urgent)  # any order: positions decide, the default last
    clocks = state_of(given(open_cmd(priority=Priority.URGENT, tags=("vip",)),
                            policy=sla)).clocks
    assert (clocks[FR].target_ms, clocks[FR].basis.policy_id) == (H // 4, urgent.id)
    assert clocks[RES].started_at is None  # urgent measures no resolution
    clocks = state_of(given(open_cmd(tags=("vip",)), policy=sla)).clocks
    assert clocks[FR].basis.policy_id == vip.id
    assert state_of(given(open_cmd(), policy=sla)).clocks[FR].basis.policy_id == DEFAULT.id
    with pytest.raises(ValidationFailed) as no_default:
        check_policy_set([urgent, vip])
    assert no_default.value.field == "default"


def test_pausing_on_pending_keeps_the_budget() -> None:
    # Resolution 8 h: open 09:00, pending 10:00-12:00, so due at 19:00, not 17:00.
    events = given(open_cmd(), reply(at(0.5)), move(TicketState.PENDING, at(1)),
                   move(TicketState.OPEN, at(3)), policy=view(DEFAULT))
    clock = state_of(events).clocks[RES]
    assert clock.due_at == at(10) and not clock.paused


def test_the_next_reply_after_a_customers_reply_runs_on_its_own_target() -> None:
    events = given(open_cmd(), reply(at(0.5)), reply(at(2), actor=CUSTOMER, n=2),
                   policy=view(DEFAULT))
    clock = state_of(events).clocks[NR]
    assert (clock.started_at, clock.target_ms, clock.due_at) == (at(2), H // 2, at(2.5))


@pytest.mark.parametrize(("opened", "holidays", "due"), [
    # Friday 16:00 Berlin (14:00 UTC), 2 business hours: 1 on Friday, 1 on Monday.
    (datetime(2026, 6, 5, 14, tzinfo=UTC), [], datetime(2026, 6, 8, 8, tzinfo=UTC)),
    # The same with Monday a holiday: Tuesday 10:00.
    (datetime(2026, 6, 5, 14, tzinfo=UTC), [date(2026, 6, 8)],
     datetime(2026, 6, 9, 8, tzinfo=UTC)),
    # Friday 16:00 before the spring change (UTC+1, 15:00 UTC): Monday 10:00 is UTC+2.
    (datetime(2026, 3, 27, 15, tzinfo=UTC), [], datetime(2026, 3, 30, 8, tzinfo=UTC)),
])
def test_business_hours_across_a_weekend_a_holiday_and_a_dst_change(
        opened: datetime, holidays: list[date], due: datetime) -> None:
    hours = BERLIN_WEEK.model_copy(update={"holidays": holidays})
    office = policy("office", PolicyTargets(first_reply_ms=2 * H, resolution_ms=10 * H),
                    default=True, calendar=CAL)
    sla = view(office, calendar=hours)
    clocks = state_of(given(open_cmd(at=opened), policy=sla)).clocks
    assert clocks[FR].due_at == due
    assert (clocks[FR].basis.calendar_id, clocks[FR].basis.calendar_version) == (CAL, 1)


def test_a_change_of_priority_retargets_with_an_event_naming_both_policies() -> None:
    urgent = policy("urgent", PolicyTargets(first_reply_ms=H // 4, resolution_ms=2 * H),
                    Condition(field="priority", op="is", value="urgent"))
    sla = view(DEFAULT, urgent)
    events = given(open_cmd(), ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                               at=at(0, 10)), policy=sla)
    moved = events[-1]
    assert isinstance(moved, SlaRetargeted)
    assert (moved.from_policy.policy_id, moved.to_policy.policy_id, moved.reason) == (
        DEFAULT.id, urgent.id, "priority")
    clocks = state_of(events).clocks
    assert clocks[FR].due_at == at(0, 15)  # 10 minutes spent of 15
    assert clocks[RES].due_at == at(2)
    assert clocks[NR].target_ms == 0 and clocks[NR].started_at is None  # not measured


def test_a_change_of_organization_re_matches_the_ticket() -> None:
    acme = uuid.UUID(int=42)
    gold = policy("gold", PolicyTargets(first_reply_ms=H // 4, resolution_ms=2 * H),
                  Condition(field="organization_id", op="is", value=str(acme)))
    outside = view(DEFAULT, gold)
    assert outside.matcher is not None
    inside = outside.model_copy(update={"matcher": replace(outside.matcher,
                                                           organization_id=acme)})
    history = given(open_cmd(), policy=outside)
    # Given a ticket on the default, when its requester's organization becomes acme,
    # then its open clocks move to gold, elapsed time kept.
    [moved] = when(history, RetargetSla(policy_id=None, reason="organization",
                                        at=at(0, 10)), policy=inside)
    assert isinstance(moved, SlaRetargeted)
    assert (moved.from_policy.policy_id, moved.to_policy.policy_id, moved.reason) == (
        DEFAULT.id, gold.id, "organization")
    assert moved.clocks[FR].due_at == at(0, 15) and moved.clocks[RES].due_at == at(2)
    # Moving it again decides nothing; nor does a re-match that still chooses the same.
    assert when([*history, moved], RetargetSla(policy_id=None, reason="organization",
                                               at=at(0, 20)), policy=inside) == []
    assert when(history, RetargetSla(policy_id=None, reason="organization",
                                     at=at(0, 20)), policy=outside) == []
    # A ticket moved to a requester of acme is re-matched with the move.
    to_acme = ChangeRequester(requester=Requester(email="b@acme.example",
                                                  contact_id=ContactId(uuid.UUID(int=9))),
                              at=at(0, 10))
    changed, retargeted = when(history, to_acme, policy=inside)
    assert changed.requester.contact_id == to_acme.requester.contact_id
    assert isinstance(retargeted, SlaRetargeted) and retargeted.reason == "requester"
    assert retargeted.to_policy.policy_id == gold.id
    closed = given(*path_to(TicketState.CLOSED), policy=outside)
    assert len(when(closed, to_acme, policy=inside)) == 1  # moved, clocks stopped as were


def test_policies_made_from_settings_give_the_same_verdicts() -> None:
    g1, g2 = GroupId(uuid.UUID(int=1)), GroupId(uuid.UUID(int=2))
    targets = {Priority.URGENT: SlaTarget(H // 2, 4 * H), Priority.HIGH: SlaTarget(H, 8 * H),
               Priority.NORMAL: SlaTarget(3 * H, 24 * H), Priority.LOW: SlaTarget(5 * H, 48 * H)}
    groups = {g1: {Priority.URGENT: SlaTarget(H // 4, 2 * H),
                   Priority.LOW: SlaTarget(2 * H, 9 * H)}}
    legacy = SlaPolicy(targets=targets, group_targets=groups, calendar=BERLIN_WEEK)
    made = legacy_policies({p: tuple(t) for p, t in targets.items()},
                           {g: {p: tuple(t) for p, t in ts.items()} for g, ts in groups.items()})
    *others, (name, _, default_targets) = made
    policies = [policy(name, default_targets, default=True, calendar=CAL),
                *(policy(n, t, *c, position=i, calendar=CAL)
                  for i, (n, c, t) in enumerate(others))]
    converted = SlaPolicy(targets=targets, calendar=BERLIN_WEEK,
                          matcher=policy_matcher(policies, {CAL: (1, BERLIN_WEEK)}))
    for priority in Priority:
        for group in (None, g1, g2):
            story = [open_cmd(priority=priority, group_id=group, actor=AGENT),
                     reply(at(1)), reply(at(2), actor=CUSTOMER, n=2),
                     Assign(group_id=g2 if group == g1 else g1, set_group=True,
                            set_agent=False, actor=AGENT, at=at(2, 30)),
                     ChangePriority(priority=Priority.LOW if priority is not Priority.LOW
                                    else Priority.URGENT, actor=AGENT, at=at(3))]
            before = state_of(given(*story, policy=legacy)).clocks
            after = state_of(given(*story, policy=converted)).clocks
            for metric in (FR, NR, RES):
                assert (after[metric].target_ms, after[metric].due_at,
                        after[metric].remaining_ms, after[metric].fulfilled_at) == (
                    before[metric].target_ms, before[metric].due_at,
                    before[metric].remaining_ms, before[metric].fulfilled_at), (
                    priority, group, metric)


PU, RW = SlaMetric.PERIODIC_UPDATE, SlaMetric.REQUESTER_WAIT
UPDATES = policy("updates", PolicyTargets(first_reply_ms=H, periodic_update_ms=2 * H,
                                          requester_wait_ms=4 * H), default=True)


def test_a_periodic_update_is_owed_from_each_public_reply_to_the_next() -> None:
    sla = view(UPDATES)
    opened = state_of(given(open_cmd(), policy=sla)).clocks
    assert opened[PU].started_at is None  # nothing owed before the first reply
    # Given a reply at 10:00 and the ticket pending (updates are still owed), when the
    # agent replies again at 11:00, then that update is met and the next is due at 13:00.
    history = given(open_cmd(), reply(at(1)), move(TicketState.PENDING, at(1, 30)),
                    policy=sla)
    assert state_of(history).clocks[PU].due_at == at(3)
    [message] = when(history, reply(at(2), n=3), policy=sla)
    assert message.clocks[PU].started_at == at(2) and message.clocks[PU].due_at == at(4)
    # A breach latches on its cycle only: the next reply starts a fresh clock.
    breached = [*history, *when(history, CheckSla(metric=PU, at=at(3)), policy=sla)]
    assert state_of(breached).clocks[PU].breached_at == at(3)
    assert when(breached, CheckSla(metric=PU, at=at(3, 5)), policy=sla) == []
    [again] = when(breached, reply(at(4), n=4), policy=sla)
    assert again.clocks[PU].breached_at is None and again.clocks[PU].due_at == at(6)
    # Solving meets the one due; an internal note or a customer's message starts none.
    solved = [*history, *when(history, move(TicketState.SOLVED, at(2)), policy=sla)]
    assert state_of(solved).clocks[PU].fulfilled_at == at(2)
    assert not state_of(solved).clocks[PU].running
    [note] = when(history, reply(at(2), visibility=Visibility.INTERNAL, n=5), policy=sla)
    assert PU not in note.clocks
    # A policy that measures no periodic update starts no clock.
    assert PU not in state_of(given(open_cmd(), reply(at(1)), policy=view(DEFAULT))).clocks


def test_the_requester_waits_while_open_or_on_hold_but_not_while_pending() -> None:
    # 4 h budget from 09:00: 1 h open, 2 h pending (paused), 1 h on hold (runs),
    # solved at 13:00 (met, 2 h kept), reopened at 15:00: due at 17:00.
    events = given(open_cmd(), move(TicketState.PENDING, at(1)),
                   move(TicketState.ON_HOLD, at(3)), policy=view(UPDATES))
    assert state_of(events).clocks[RW].due_at == at(6)
    events += when(events, move(TicketState.SOLVED, at(4)), policy=view(UPDATES))
    clock = state_of(events).clocks[RW]
    assert (clock.fulfilled_at, clock.remaining_ms, clock.running) == (at(4), 2 * H, False)
    reopened = [*events, *when(events, move(TicketState.OPEN, at(6)), policy=view(UPDATES))]
    clock = state_of(reopened).clocks[RW]
    assert (clock.running, clock.fulfilled_at, clock.due_at) == (True, None, at(8))
    # Paused states of the tenant do not pause it: on hold runs even when they name it.
    on_hold_pauses = view(UPDATES).model_copy(update={
        "paused_states": frozenset({TicketState.ON_HOLD, TicketState.PENDING})})
    held = given(open_cmd(), move(TicketState.ON_HOLD, at(1)), policy=on_hold_pauses)
    assert state_of(held).clocks[RW].running


@pytest.mark.parametrize(("state", "running", "paused", "fulfilled"), [
    (TicketState.OPEN, True, False, None),
    (TicketState.ON_HOLD, True, False, None),
    (TicketState.PENDING, False, True, None),
    (TicketState.SOLVED, False, True, at(1)),
])
def test_a_ticket_re_matched_onto_a_policy_measuring_requester_wait_starts_the_clock(
        state: TicketState, running: bool, paused: bool, fulfilled: object) -> None:
    # Given a ticket on the default (no requester wait) moved to ``state``, when it
    # becomes urgent at 10:00 and so matches "waits" (4 h), then its requester-wait
    # clock starts then with the whole budget, in the state the ticket's state gives.
    waits = policy("waits", PolicyTargets(first_reply_ms=H, requester_wait_ms=4 * H),
                   Condition(field="priority", op="is", value="urgent"))
    sla = view(DEFAULT, waits)
    history = given(open_cmd(), reply(at(0.5)), *(
        [] if state is TicketState.OPEN else [move(state, at(0.75))]), policy=sla)
    assert RW not in state_of(history).clocks
    [moved] = when(history, ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                           at=at(1)), policy=sla)[-1:]
    assert isinstance(moved, SlaRetargeted) and moved.to_policy.policy_id == waits.id
    assert moved.from_policy is not None and moved.from_policy.policy_id == DEFAULT.id
    clock = moved.clocks[RW]
    assert (clock.started_at, clock.target_ms, clock.basis) == (at(1), 4 * H, moved.to_policy)
    assert (clock.running, clock.paused, clock.fulfilled_at) == (running, paused, fulfilled)
    assert clock.due_at == (at(5) if running else None)
    assert clock.remaining_ms == (4 * H if paused else None)
    # A reopen (or the end of pending) resumes it: due 4 h on.
    if state in (TicketState.PENDING, TicketState.SOLVED):
        after = [*history, *when(history, ChangePriority(priority=Priority.URGENT,
                                                         actor=AGENT, at=at(1)), policy=sla)]
        resumed = when(after, move(TicketState.OPEN, at(2)), policy=sla)
        clock = state_of([*after, *resumed]).clocks[RW]
        assert (clock.running, clock.fulfilled_at, clock.due_at) == (True, None, at(6))
    # Re-matched again onto a policy that measures it, it is not started anew.
    after = [*history, *when(history, ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                                     at=at(1)), policy=sla)]
    waits_more = policy("waits", PolicyTargets(first_reply_ms=H, requester_wait_ms=6 * H),
                        Condition(field="priority", op="is", value="urgent"))
    waits_more = waits_more.model_copy(update={"version": waits.version + 1})
    [again] = when(after, RetargetSla(policy_id=None, reason="apply", at=at(1, 30)),
                   policy=view(DEFAULT, waits_more))
    assert again.clocks[RW].started_at == at(1)


def test_a_clock_records_the_name_its_policy_had_and_a_rename_alone_retargets_nothing(
        ) -> None:
    history = given(open_cmd(), policy=view(DEFAULT))
    assert state_of(history).clocks[FR].basis.policy_name == "default"
    # The same version under another name (a clock recorded before names were, say)
    # runs on the same policy: re-matching it moves nothing.
    unnamed = DEFAULT.model_copy(update={"name": "renamed"})
    assert when(history, RetargetSla(policy_id=None, reason="apply", at=at(1)),
                policy=view(unnamed)) == []
    # A rename is a new version: apply moves the clocks, and names both.
    renamed = unnamed.model_copy(update={"version": DEFAULT.version + 1})
    [moved] = when(history, RetargetSla(policy_id=None, reason="apply", at=at(1)),
                   policy=view(renamed))
    assert isinstance(moved, SlaRetargeted)
    assert moved.from_policy is not None and moved.from_policy.policy_name == "default"
    assert moved.to_policy.policy_name == "renamed"


def test_the_default_is_not_deleted_and_a_deleted_policy_replays_to_what_it_was() -> None:
    with pytest.raises(DefaultPolicyKept):
        decide_delete_policy(DEFAULT, at(1))
    vip = policy("vip", PolicyTargets(first_reply_ms=H // 6),
                 Condition(field="tags", op="contains", value="vip"))
    [gone] = decide_delete_policy(vip, at(1))
    assert isinstance(gone, SlaPolicyDeleted)
    assert evolve_policy(vip, gone) == vip.model_copy(update={"version": 2,
                                                              "updated_at": at(1)})


def test_a_new_order_names_every_policy_once_with_the_default_last() -> None:
    a, b = (policy(n, PolicyTargets(first_reply_ms=H),
                   Condition(field="tags", op="contains", value=n)) for n in "ab")
    assert reorder([DEFAULT, a, b], [b.id, a.id, DEFAULT.id]) == {b.id: 10, a.id: 20}
    for ids, field in (([b.id, DEFAULT.id], "policies"),
                       ([b.id, b.id, a.id, DEFAULT.id], "policies.1.id"),
                       ([DEFAULT.id, b.id, a.id], "policies.0.id"),
                       ([b.id, CAL, a.id, DEFAULT.id], "policies.1.id")):
        with pytest.raises(ValidationFailed) as refused:
            reorder([DEFAULT, a, b], ids)
        assert refused.value.field == field, ids
