"""SLA clocks driven through decide/evolve, as the table in DESIGN.md states them."""

from __future__ import annotations

from datetime import date

from domain.business_hours import Calendar
from domain.events import Event
from domain.sla import SlaClock, SlaPolicy
from domain.ticket.commands import ChangePriority, CheckSla
from domain.ticket.events import SlaBreached
from domain.values import Priority, SlaMetric, TicketState, Visibility
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    POLICY,
    H,
    at,
    given,
    move,
    open_cmd,
    reply,
    state_of,
    when,
)

FR, NR, RES = SlaMetric.FIRST_RESPONSE, SlaMetric.NEXT_REPLY, SlaMetric.RESOLUTION


def clock(history: list[Event], metric: SlaMetric) -> SlaClock:
    return state_of(history).clocks[metric]


# --- first response --------------------------------------------------------------------


def test_first_response_fulfilled_by_first_public_agent_reply() -> None:
    history = given(open_cmd(), reply(at(1)))
    fr = clock(history, FR)
    assert fr.fulfilled_at == at(1) and fr.due_at == at(8) and fr.breached_at is None


def test_internal_note_and_customer_message_do_not_count_as_response() -> None:
    history = given(
        open_cmd(),
        reply(at(1), visibility=Visibility.INTERNAL),
        reply(at(2), actor=CUSTOMER, n=2),
    )
    fr = clock(history, FR)
    assert fr.fulfilled_at is None and fr.running
    assert clock(history, NR).started_at is None  # first response still measures the wait


def test_first_response_never_pauses() -> None:
    history = given(open_cmd(), move(TicketState.PENDING, at(1)))
    assert clock(history, FR).running and clock(history, FR).due_at == at(8)


def test_second_reply_does_not_move_first_response() -> None:
    history = given(open_cmd(), reply(at(1)), reply(at(3), n=2))
    assert clock(history, FR).fulfilled_at == at(1)


# --- resolution --------------------------------------------------------------------------


def test_resolution_pauses_in_pending_and_resumes_with_remaining_budget() -> None:
    history = given(open_cmd(), move(TicketState.PENDING, at(10)))
    res = clock(history, RES)
    assert res.paused and res.due_at is None and res.remaining_ms == 62 * H
    history += when(history, move(TicketState.OPEN, at(30)))
    res = clock(history, RES)
    assert not res.paused and res.due_at == at(30 + 62) and res.remaining_ms is None


def test_resolution_fulfilled_when_solved_and_resumed_on_reopen() -> None:
    history = given(open_cmd(), move(TicketState.SOLVED, at(5)))
    res = clock(history, RES)
    assert res.fulfilled_at == at(5) and res.paused and res.remaining_ms == 67 * H
    history += when(history, reply(at(50), actor=CUSTOMER))
    res = clock(history, RES)
    assert res.fulfilled_at is None and res.running and res.due_at == at(50 + 67)
    assert res.started_at == at(0)  # never reset


def test_on_hold_does_not_pause_by_default_but_policy_can_say_so() -> None:
    history = given(open_cmd(), move(TicketState.ON_HOLD, at(1)))
    assert clock(history, RES).running
    policy = SlaPolicy(paused_states=frozenset({TicketState.PENDING, TicketState.ON_HOLD}))
    history = given(open_cmd(), move(TicketState.ON_HOLD, at(1)), policy=policy)
    assert clock(history, RES).paused


def test_closing_stops_every_clock() -> None:
    history = given(open_cmd(), move(TicketState.SOLVED, at(1)), move(TicketState.CLOSED, at(2)))
    for metric in (FR, RES):
        assert not clock(history, metric).running
    assert when(history, CheckSla(metric=FR, at=at(500))) == []


# --- priority change ------------------------------------------------------------------------


def test_priority_change_keeps_elapsed_time() -> None:
    # normal: 8h / 72h. After 1h, urgent (1h / 8h): first response due now, resolution 7h on.
    history = given(open_cmd(), ChangePriority(priority=Priority.URGENT, actor=AGENT, at=at(1)))
    assert clock(history, FR).due_at == at(1)  # budget spent: due at once, never back-dated
    assert clock(history, RES).due_at == at(8)
    assert clock(history, NR).target_ms == 1 * H
    history += when(history, ChangePriority(priority=Priority.LOW, actor=AGENT, at=at(2)))
    # low: 24h / 120h; 2h elapsed on both.
    assert clock(history, FR).due_at == at(24)
    assert clock(history, RES).due_at == at(120)


def test_priority_change_while_paused_adjusts_kept_budget() -> None:
    history = given(open_cmd(), move(TicketState.PENDING, at(2)),
                    ChangePriority(priority=Priority.HIGH, actor=AGENT, at=at(3)))
    res = clock(history, RES)
    assert res.paused and res.remaining_ms == 22 * H and res.target_ms == 24 * H
    history += when(history, move(TicketState.OPEN, at(10)))
    assert clock(history, RES).due_at == at(32)


def test_priority_change_leaves_fulfilled_clock_alone() -> None:
    history = given(open_cmd(), reply(at(1)),
                    ChangePriority(priority=Priority.URGENT, actor=AGENT, at=at(2)))
    fr = clock(history, FR)
    assert fr.fulfilled_at == at(1) and fr.target_ms == 8 * H


# --- next reply ------------------------------------------------------------------------------


def test_next_reply_starts_on_unanswered_customer_message_and_is_fulfilled_by_reply() -> None:
    history = given(open_cmd(), reply(at(1)), reply(at(2), actor=CUSTOMER, n=2))
    nr = clock(history, NR)
    assert nr.started_at == at(2) and nr.due_at == at(10) and nr.running
    history += when(history, reply(at(3), actor=CUSTOMER, n=3))
    assert clock(history, NR).started_at == at(2)  # one running at a time
    history += when(history, reply(at(4), visibility=Visibility.INTERNAL, n=4))
    assert clock(history, NR).fulfilled_at is None
    history += when(history, reply(at(5), n=5))
    assert clock(history, NR).fulfilled_at == at(5)
    history += when(history, reply(at(6), actor=CUSTOMER, n=6))
    nr = clock(history, NR)
    assert nr.started_at == at(6) and nr.fulfilled_at is None and nr.due_at == at(14)


def test_next_reply_pauses_while_pending() -> None:
    history = given(open_cmd(), reply(at(1)), reply(at(2), actor=CUSTOMER, n=2))
    history += when(history, move(TicketState.PENDING, at(4)))
    nr = clock(history, NR)
    assert nr.paused and nr.remaining_ms == 6 * H
    history += when(history, move(TicketState.OPEN, at(20)))
    assert clock(history, NR).due_at == at(26)


def test_reply_while_pending_fulfils_next_reply_for_good() -> None:
    history = given(open_cmd(), reply(at(1)), reply(at(2), actor=CUSTOMER, n=2),
                    move(TicketState.PENDING, at(3)), reply(at(4), n=3),
                    move(TicketState.OPEN, at(5)))
    nr = clock(history, NR)
    assert nr.fulfilled_at == at(4) and not nr.running and not nr.paused
    assert when(history, CheckSla(metric=NR, at=at(100))) == []


def test_customer_message_on_pending_starts_next_reply_after_reopen() -> None:
    history = given(open_cmd(), reply(at(1)), move(TicketState.PENDING, at(2)))
    history += when(history, reply(at(5), actor=CUSTOMER, n=2))
    nr = clock(history, NR)
    assert state_of(history).state is TicketState.OPEN
    assert nr.running and nr.started_at == at(5) and nr.due_at == at(13)


# --- breaches ------------------------------------------------------------------------------


def test_check_before_due_is_quiet() -> None:
    history = given(open_cmd())
    assert when(history, CheckSla(metric=FR, at=at(7.99))) == []


def test_breach_is_recorded_once_at_check_time() -> None:
    history = given(open_cmd())
    [event] = when(history, CheckSla(metric=FR, at=at(9)))
    assert event == SlaBreached(metric=FR, due_at=at(8), at=at(9))
    history.append(event)
    assert clock(history, FR).breached_at == at(9)
    assert when(history, CheckSla(metric=FR, at=at(10))) == []


def test_breach_latches_through_a_late_reply() -> None:
    history = given(open_cmd(), CheckSla(metric=FR, at=at(8)), reply(at(9)))
    fr = clock(history, FR)
    assert fr.breached_at == at(8) and fr.fulfilled_at == at(9)


def test_breach_latches_through_reopen_of_resolution() -> None:
    history = given(open_cmd(), CheckSla(metric=RES, at=at(80)),
                    move(TicketState.SOLVED, at(81)), reply(at(90), actor=CUSTOMER))
    res = clock(history, RES)
    assert res.breached_at == at(80) and res.running
    assert res.due_at == at(90)  # budget long spent: due at once
    assert when(history, CheckSla(metric=RES, at=at(91))) == []


def test_paused_or_idle_clocks_do_not_breach() -> None:
    history = given(open_cmd(), move(TicketState.PENDING, at(1)))
    assert when(history, CheckSla(metric=RES, at=at(1000))) == []
    assert when(history, CheckSla(metric=NR, at=at(1000))) == []


def test_business_hours_drive_due_times() -> None:
    office = Calendar(
        timezone="UTC",
        weekly={d: [("09:00", "17:00")] for d in range(5)},
        holidays=[date(2026, 6, 2)],
    )
    policy = SlaPolicy(calendar=office)
    history = given(open_cmd(at=at(7)), policy=policy)  # Monday 16:00
    # 8h first response: 1h Monday, Tuesday is a holiday, 7h Wednesday -> 16:00.
    assert clock(history, FR).due_at == at(2 * 24 + 7)
    history += when(history, move(TicketState.PENDING, at(7.5)), policy)
    assert clock(history, RES).remaining_ms == 72 * H - 30 * 60_000


def test_default_policy_targets() -> None:
    assert POLICY.target_ms(FR, Priority.URGENT) == 1 * H
    assert POLICY.target_ms(RES, Priority.LOW) == 120 * H
    assert POLICY.target_ms(NR, Priority.HIGH) == 2 * H
