"""The analytics projection's in-memory fold, against values worked out by hand.

``projections.analytics.Fold`` is what a batch does before anything is written: given
envelopes, it builds the per-ticket rows and the per-day and per-agent counters
(definitions in docs/analytics.md). No database: the rows a batch would load are
passed in as plain ``TicketRow`` values.

Monday is 2026-06-01. Times are UTC.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import defaultdict
from datetime import UTC, date, datetime

from domain.business_hours import Calendar, CALENDAR_24x7
from domain.events import Event
from domain.ids import AgentId, MessageId, TenantId, TicketId
from domain.ticket.events import (
    MessageAdded,
    PriorityChanged,
    SlaBreached,
    StateChanged,
    TicketAssigned,
)
from domain.values import Actor, ActorKind, Priority, SlaMetric, Source, TicketState, Visibility
from projections.analytics import Fold, TicketRow
from projections.base import Envelope
from tests.unit.domain.support import CUSTOMER, TICKET, given, move, open_cmd
from tests.unit.domain.support import at as hours
from tests.unit.domain.test_agent_work import WORK, view

TENANT = TenantId(uuid.UUID("00000000-0000-4000-8000-0000000000aa"))
T1 = TicketId(uuid.UUID("00000000-0000-4000-8000-000000000001"))
T2 = TicketId(uuid.UUID("00000000-0000-4000-8000-000000000002"))
X = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000a1"))
Y = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000a2"))
AGENT_X = Actor(kind=ActorKind.AGENT, id=str(X))
AGENT_Y = Actor(kind=ActorKind.AGENT, id=str(Y))
MON, TUE, WED = date(2026, 6, 1), date(2026, 6, 2), date(2026, 6, 3)
H = 3_600_000
OFFICE = Calendar(timezone="UTC", weekly={d: [("09:00", "17:00")] for d in range(5)})


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 6, day, hour, minute, tzinfo=UTC)


def opened(ticket: TicketId, when: datetime, priority: Priority = Priority.NORMAL,
           source: Source = Source.EMAIL) -> Event:
    return given(open_cmd(ticket_id=ticket, at=when, priority=priority, source=source))[0]


def message(when: datetime, author: Actor = AGENT_X,
            visibility: Visibility = Visibility.PUBLIC) -> MessageAdded:
    return MessageAdded(message_id=MessageId(uuid.uuid4()), body="hello",
                        visibility=visibility, author=author, at=when)


def moved(frm: TicketState, to: TicketState, when: datetime) -> StateChanged:
    return StateChanged(from_state=frm, to_state=to, at=when)


def assigned(agent: AgentId | None, when: datetime) -> TicketAssigned:
    return TicketAssigned(assignee=agent, at=when)


def breached(metric: SlaMetric, when: datetime) -> SlaBreached:
    return SlaBreached(metric=metric, due_at=when, at=when)


def new_fold(calendar: Calendar = CALENDAR_24x7,
             tickets: dict[uuid.UUID, TicketRow] | None = None) -> Fold:
    """A fold as ``AnalyticsProjection.apply_batch`` starts one."""
    return Fold(calendar=calendar, tickets=dict(tickets or {}),
                daily=defaultdict(lambda: [0, 0, 0, 0]), agents=defaultdict(lambda: [0, 0, 0]))


def fold(*history: tuple[uuid.UUID, Event], calendar: Calendar = CALENDAR_24x7,
         tickets: dict[uuid.UUID, TicketRow] | None = None, first_seq: int = 1) -> Fold:
    """Fold ``(stream, event)`` pairs, numbered with consecutive seqs."""
    f = new_fold(calendar, tickets)
    for seq, (stream, event) in enumerate(history, start=first_seq):
        f.apply(Envelope(TENANT, seq, stream, event))
    return f


# --- first reply -----------------------------------------------------------------------


def test_first_reply_is_the_first_public_agent_message() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9))),
        (T1, message(at(1, 9, 30), visibility=Visibility.INTERNAL)),  # a note: not a reply
        (T1, message(at(1, 10), author=CUSTOMER)),                     # the customer
        (T1, message(at(1, 11, 15))),                                  # the first reply
        (T1, message(at(1, 12), author=AGENT_Y)),
    )
    row = f.tickets[T1]
    assert row.first_reply_at == at(1, 11, 15)
    assert row.first_reply_ms == row.first_reply_business_ms == 2 * H + 15 * 60_000
    assert row.public_agent_replies == 2 and row.last_seq == 5
    assert dict(f.agents) == {(MON, str(X)): [0, 1, 0], (MON, str(Y)): [0, 1, 0]}


def test_a_ticket_without_an_agent_reply_has_no_first_reply() -> None:
    f = fold((T1, opened(T1, at(1, 9))), (T1, message(at(1, 10), author=CUSTOMER)))
    row = f.tickets[T1]
    assert (row.first_reply_at, row.first_reply_ms, row.first_reply_business_ms) == (
        None, None, None)
    assert row.public_agent_replies == 0 and dict(f.agents) == {}


def test_first_reply_in_business_time_counts_only_office_hours() -> None:
    # Opened Friday 16:00, answered Monday 10:00: 66 hours of calendar time,
    # of which Friday 16-17 and Monday 9-10 are office hours.
    f = fold((T1, opened(T1, datetime(2026, 6, 5, 16, tzinfo=UTC))),
             (T1, message(datetime(2026, 6, 8, 10, tzinfo=UTC))), calendar=OFFICE)
    row = f.tickets[T1]
    assert row.first_reply_ms == 66 * H
    assert row.first_reply_business_ms == 2 * H


# --- resolution, pauses, reopens -------------------------------------------------------


def lifecycle() -> Fold:
    """T1 urgent/chat, assigned to X:

    Mon 09:00 opened; 11:00 X replies; 11:30 pending; 13:30 the customer writes (open);
    14:00 solved; Tue 09:00 the customer writes (reopened); 10:00 X replies;
    11:00 solved; Wed 11:00 closed.
    """
    return fold(
        (T1, opened(T1, at(1, 9), Priority.URGENT, Source.CHAT)),
        (T1, assigned(X, at(1, 10))),
        (T1, message(at(1, 11))),
        (T1, moved(TicketState.OPEN, TicketState.PENDING, at(1, 11, 30))),
        (T1, message(at(1, 13, 30), author=CUSTOMER)),
        (T1, moved(TicketState.PENDING, TicketState.OPEN, at(1, 13, 30))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 14))),
        (T1, message(at(2, 9), author=CUSTOMER)),
        (T1, moved(TicketState.SOLVED, TicketState.OPEN, at(2, 9))),
        (T1, message(at(2, 10))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(2, 11))),
        (T1, moved(TicketState.SOLVED, TicketState.CLOSED, at(3, 11))),
    )


def test_the_full_lifecycle_of_a_ticket() -> None:
    f = lifecycle()
    assert f.tickets[T1] == TicketRow(
        ticket_id=T1, priority="urgent", source="chat", state="closed", assignee=str(X),
        created_at=at(1, 9), state_since=at(3, 11),
        first_reply_at=at(1, 11), first_reply_ms=2 * H, first_reply_business_ms=2 * H,
        solved_at=at(2, 11), solves=2,
        resolution_ms=26 * H,            # Mon 09:00 to the latest solve, Tue 11:00
        # open Mon 09:00-11:30 and 13:30-14:00, Tue 09:00-11:00; pending and solved
        # time is left out
        open_ms=5 * H, resolution_open_ms=5 * H,
        reopens=1, public_agent_replies=2, last_seq=12,
    )
    assert dict(f.daily) == {
        (MON, "urgent", "chat"): [1, 1, 0, 0],
        (TUE, "urgent", "chat"): [0, 1, 1, 0],
    }
    assert dict(f.agents) == {(MON, str(X)): [1, 1, 1], (TUE, str(X)): [0, 1, 1]}


def test_a_reopen_clears_the_resolution_until_the_next_solve() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 10))),
        (T1, moved(TicketState.SOLVED, TicketState.OPEN, at(1, 12))),
    )
    row = f.tickets[T1]
    assert (row.solved_at, row.resolution_ms, row.resolution_open_ms) == (None, None, None)
    assert (row.solves, row.reopens, row.state, row.state_since) == (1, 1, "open", at(1, 12))
    assert row.open_ms == 1 * H  # the solved stretch is not open time


def test_time_on_hold_is_left_out_of_the_pause_aware_resolution() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9))),
        (T1, moved(TicketState.OPEN, TicketState.ON_HOLD, at(1, 9, 45))),
        (T1, moved(TicketState.ON_HOLD, TicketState.PENDING, at(1, 15))),
        (T1, moved(TicketState.PENDING, TicketState.OPEN, at(1, 16))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 16, 30))),
    )
    row = f.tickets[T1]
    assert row.resolution_ms == 7 * H + 30 * 60_000
    assert row.resolution_open_ms == row.open_ms == 45 * 60_000 + 30 * 60_000


def test_solving_straight_from_pending_adds_no_open_time() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9))),
        (T1, moved(TicketState.OPEN, TicketState.PENDING, at(1, 10))),
        (T1, moved(TicketState.PENDING, TicketState.SOLVED, at(1, 18))),
    )
    row = f.tickets[T1]
    assert (row.resolution_ms, row.resolution_open_ms) == (9 * H, 1 * H)


# --- priority at the time of the event, breaches ---------------------------------------


def test_daily_counters_use_the_priority_at_the_time_of_the_event() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9), Priority.NORMAL, Source.PORTAL)),
        (T1, PriorityChanged(priority=Priority.URGENT, at=at(1, 10))),
        (T1, breached(SlaMetric.FIRST_RESPONSE, at(1, 11))),
        (T1, breached(SlaMetric.RESOLUTION, at(1, 17))),
        (T1, PriorityChanged(priority=Priority.LOW, at=at(2, 8))),
        (T1, breached(SlaMetric.NEXT_REPLY, at(2, 9))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(2, 10))),
    )
    row = f.tickets[T1]
    assert row.priority == "low"
    assert (row.breaches_first_response, row.breaches_next_reply,
            row.breaches_resolution) == (1, 1, 1)
    assert dict(f.daily) == {
        (MON, "normal", "portal"): [1, 0, 0, 0],
        (MON, "urgent", "portal"): [0, 0, 0, 2],
        (TUE, "low", "portal"): [0, 1, 0, 1],
    }


# --- agents ----------------------------------------------------------------------------


def test_agents_are_credited_for_assignments_and_for_solves_while_assigned() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9))),
        (T1, assigned(X, at(1, 9, 5))),
        (T1, assigned(Y, at(1, 9, 10))),
        (T1, assigned(None, at(1, 9, 15))),  # unassigning counts nothing
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 10))),  # nobody credited
        (T1, moved(TicketState.SOLVED, TicketState.OPEN, at(2, 9))),
        (T1, assigned(X, at(2, 9, 30))),
        (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(3, 9))),
    )
    assert f.tickets[T1].assignee == str(X)
    assert dict(f.agents) == {
        (MON, str(X)): [1, 0, 0],
        (MON, str(Y)): [1, 0, 0],
        (TUE, str(X)): [1, 0, 0],
        (WED, str(X)): [0, 0, 1],
    }
    assert dict(f.daily)[(MON, "normal", "email")] == [1, 1, 0, 0]
    assert dict(f.daily)[(TUE, "normal", "email")] == [0, 0, 1, 0]
    assert dict(f.daily)[(WED, "normal", "email")] == [0, 1, 0, 0]


# --- streams and batches ---------------------------------------------------------------


def test_events_of_a_stream_that_was_never_opened_are_not_ours() -> None:
    f = fold(
        (T2, message(at(1, 9))),
        (T2, assigned(X, at(1, 9))),
        (T2, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 10))),
        (T2, breached(SlaMetric.RESOLUTION, at(1, 11))),
    )
    assert f.tickets == {} and dict(f.daily) == {} and dict(f.agents) == {}


def test_two_tickets_in_one_batch_keep_their_own_rows() -> None:
    f = fold(
        (T1, opened(T1, at(1, 9), Priority.HIGH)),
        (T2, opened(T2, at(1, 9, 30), Priority.HIGH)),
        (T2, message(at(1, 10))),
        (T1, message(at(1, 12))),
    )
    assert (f.tickets[T1].first_reply_ms, f.tickets[T1].last_seq) == (3 * H, 4)
    assert (f.tickets[T2].first_reply_ms, f.tickets[T2].last_seq) == (30 * 60_000, 3)
    assert dict(f.daily) == {(MON, "high", "email"): [2, 0, 0, 0]}


def test_a_row_loaded_from_an_earlier_batch_carries_on() -> None:
    earlier = TicketRow(ticket_id=T1, priority="high", source="api", state="open",
                        assignee=str(Y), created_at=at(1, 9), state_since=at(1, 12),
                        open_ms=2 * H, public_agent_replies=1, first_reply_at=at(1, 10),
                        first_reply_ms=H, first_reply_business_ms=H, last_seq=40)
    f = fold((T1, message(at(1, 13))),
             (T1, moved(TicketState.OPEN, TicketState.SOLVED, at(1, 14))),
             tickets={T1: dataclasses.replace(earlier)}, first_seq=41)
    row = f.tickets[T1]
    assert (row.first_reply_at, row.first_reply_ms) == (at(1, 10), H)  # unchanged
    assert row.public_agent_replies == 2 and row.last_seq == 42
    assert (row.resolution_ms, row.open_ms, row.resolution_open_ms) == (5 * H, 4 * H, 4 * H)
    assert dict(f.daily) == {(MON, "high", "api"): [0, 1, 0, 0]}
    assert dict(f.agents) == {(MON, str(X)): [0, 1, 0], (MON, str(Y)): [0, 0, 1]}


def test_folding_event_by_event_equals_folding_the_batch() -> None:
    """``apply`` is a batch of one: rows carried between batches, counters added."""
    whole = lifecycle()
    history = [(T1, e) for e in [
        opened(T1, at(1, 9), Priority.URGENT, Source.CHAT), assigned(X, at(1, 10)),
        message(at(1, 11)), moved(TicketState.OPEN, TicketState.PENDING, at(1, 11, 30)),
        message(at(1, 13, 30), author=CUSTOMER),
        moved(TicketState.PENDING, TicketState.OPEN, at(1, 13, 30)),
        moved(TicketState.OPEN, TicketState.SOLVED, at(1, 14)),
        message(at(2, 9), author=CUSTOMER), moved(TicketState.SOLVED, TicketState.OPEN, at(2, 9)),
        message(at(2, 10)), moved(TicketState.OPEN, TicketState.SOLVED, at(2, 11)),
        moved(TicketState.SOLVED, TicketState.CLOSED, at(3, 11)),
    ]]
    rows: dict[uuid.UUID, TicketRow] = {}
    daily: dict[tuple[date, str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    agents: dict[tuple[date, str], list[int]] = defaultdict(lambda: [0, 0, 0])
    for seq, item in enumerate(history, start=1):
        one = fold(item, tickets={k: dataclasses.replace(v) for k, v in rows.items()},
                   first_seq=seq)
        rows.update(one.tickets)
        for key, counts in one.daily.items():
            daily[key] = [a + b for a, b in zip(daily[key], counts, strict=True)]
        for key, counts in one.agents.items():
            agents[key] = [a + b for a, b in zip(agents[key], counts, strict=True)]
    assert rows == whole.tickets
    assert dict(daily) == dict(whole.daily) and dict(agents) == dict(whole.agents)


# --- the metrics that follow the state ---------------------------------------------------


def test_requester_wait_and_agent_work_fold_alike_each_from_its_own_clock() -> None:
    # On a policy with requester wait 6 h and agent work 4 h: open 09-10, on hold 10-12
    # (the requester waits, no one works), open 12-13, solved 13:00: waited 4 h (met),
    # worked 2 h (met). An agent-work breach marks agent work missed, not the wait.
    events = given(open_cmd(), move(TicketState.ON_HOLD, hours(1)),
                   move(TicketState.OPEN, hours(3)), move(TicketState.SOLVED, hours(4)),
                   policy=view(WORK))
    row = fold(*((TICKET, e) for e in events)).tickets[TICKET]
    assert (row.requester_wait_measured, row.requester_wait_missed, row.requester_wait_ms,
            row.agent_work_measured, row.agent_work_missed, row.agent_work_ms) == (
        True, False, 4 * H, True, False, 2 * H)
    late = fold((TICKET, events[0]), (TICKET, breached(SlaMetric.AGENT_WORK, hours(4))))
    row = late.tickets[TICKET]
    assert (row.agent_work_missed, row.requester_wait_missed) == (True, False)
    # A reopen clears both until the next solve.
    reopen = moved(TicketState.SOLVED, TicketState.OPEN, hours(5))
    row = fold(*((TICKET, e) for e in [*events, reopen])).tickets[TICKET]
    assert (row.requester_wait_ms, row.agent_work_ms) == (None, None)
