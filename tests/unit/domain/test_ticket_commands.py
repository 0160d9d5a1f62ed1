"""Given events, when a command, then events: every ticket command."""

from __future__ import annotations

import itertools
import uuid

import pytest

from domain.errors import (
    AlreadyExists,
    CorruptStream,
    FollowUpRequired,
    InvalidTransition,
    NotFound,
    TicketClosed,
    ValidationFailed,
)
from domain.ids import AgentId, TicketId
from domain.ticket import evolve, fold
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangePriority,
    ChangeState,
    ChangeTags,
    CheckSla,
    Command,
)
from domain.ticket.decide import decide, decide_follow_up
from domain.ticket.events import (
    FollowUpOpened,
    MessageAdded,
    PriorityChanged,
    StateChanged,
    TagsChanged,
    TicketAssigned,
    TicketOpened,
)
from domain.values import Priority, Requester, SlaMetric, Source, TicketState, Visibility
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    POLICY,
    SYSTEM,
    TICKET,
    at,
    given,
    mid,
    move,
    open_cmd,
    path_to,
    reply,
    state_of,
    when,
)

AGENT_2 = AgentId(uuid.UUID(int=2))
ALL_STATES = list(TicketState)
ALLOWED = {
    (TicketState.OPEN, TicketState.PENDING),
    (TicketState.OPEN, TicketState.ON_HOLD),
    (TicketState.OPEN, TicketState.SOLVED),
    (TicketState.PENDING, TicketState.OPEN),
    (TicketState.PENDING, TicketState.ON_HOLD),
    (TicketState.PENDING, TicketState.SOLVED),
    (TicketState.ON_HOLD, TicketState.OPEN),
    (TicketState.ON_HOLD, TicketState.PENDING),
    (TicketState.ON_HOLD, TicketState.SOLVED),
    (TicketState.SOLVED, TicketState.OPEN),
    (TicketState.SOLVED, TicketState.CLOSED),
}


# --- OpenTicket ------------------------------------------------------------------------


def test_open_ticket() -> None:
    [event] = when([], open_cmd(tags=("Billing", "vip", "billing"), priority=Priority.HIGH,
                                source=Source.EMAIL))
    assert isinstance(event, TicketOpened)
    assert event.ticket_id == TICKET
    assert event.tags == ("billing", "vip")
    assert event.priority is Priority.HIGH and event.source is Source.EMAIL
    assert event.requester == Requester(email="ann@example.com", name="Ann")
    assert event.at == at()
    assert event.clocks[SlaMetric.FIRST_RESPONSE].due_at == at(2)
    assert event.clocks[SlaMetric.RESOLUTION].due_at == at(24)
    assert event.clocks[SlaMetric.NEXT_REPLY].started_at is None
    state = state_of([event])
    assert state.state is TicketState.OPEN and state.version == 1
    assert state.awaiting_reply  # opened by the customer


def test_open_ticket_message_id_is_derived_deterministically() -> None:
    [a] = when([], open_cmd())
    [b] = when([], open_cmd())
    [c] = when([], open_cmd(message_id=mid(7)))
    assert isinstance(a, TicketOpened) and isinstance(b, TicketOpened)
    assert isinstance(c, TicketOpened)
    assert a.message_id == b.message_id != c.message_id == mid(7)


def test_open_on_existing_stream_fails() -> None:
    with pytest.raises(AlreadyExists):
        when(given(open_cmd()), open_cmd())


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"subject": ""}, "subject"),
        ({"subject": "   "}, "subject"),
        ({"subject": "x" * 201}, "subject"),
        ({"body": ""}, "body"),
        ({"body": "x" * 50_001}, "body"),
        ({"tags": ("no spaces",)}, "tags"),
        ({"tags": ("-lead",)}, "tags"),
        ({"tags": ("x" * 41,)}, "tags"),
        ({"tags": tuple(f"t{i}" for i in range(21))}, "tags"),
        ({"requester": Requester(email="not-an-email")}, "requester.email"),
        ({"requester": Requester(email="a b@example.com")}, "requester.email"),
        ({"actor": SYSTEM}, "actor"),
    ],
)
def test_open_ticket_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        when([], open_cmd(**kwargs))
    assert info.value.field == field
    assert info.value.code == "validation_failed"


def test_limits_are_inclusive() -> None:
    [event] = when([], open_cmd(subject="x" * 200, body="y" * 50_000,
                                tags=tuple(f"t{i}" for i in range(20))))
    assert isinstance(event, TicketOpened)


# --- commands on a missing ticket ------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        reply(at(1)),
        Assign(agent_id=AGENT_2, actor=AGENT, at=at(1)),
        ChangePriority(priority=Priority.LOW, actor=AGENT, at=at(1)),
        move(TicketState.PENDING, at(1)),
        ChangeTags(add=("a",), actor=AGENT, at=at(1)),
        CheckSla(metric=SlaMetric.RESOLUTION, at=at(1)),
    ],
)
def test_commands_on_missing_ticket_fail(command: Command) -> None:
    with pytest.raises(NotFound):
        decide(command, None, POLICY)


# --- AddMessage ------------------------------------------------------------------------


def test_agent_reply() -> None:
    [event] = when(given(open_cmd()), reply(at(1)))
    assert isinstance(event, MessageAdded)
    assert event.author == AGENT and event.visibility is Visibility.PUBLIC
    assert set(event.clocks) == {SlaMetric.FIRST_RESPONSE}
    state = state_of([*given(open_cmd()), event])
    assert not state.awaiting_reply and state.version == 2 and state.updated_at == at(1)


def test_customer_cannot_write_internal_notes() -> None:
    with pytest.raises(ValidationFailed):
        when(given(open_cmd()), reply(at(1), actor=CUSTOMER, visibility=Visibility.INTERNAL))


def test_empty_message_is_rejected() -> None:
    with pytest.raises(ValidationFailed):
        when(given(open_cmd()), reply(at(1), body=" "))


@pytest.mark.parametrize("start", [TicketState.PENDING, TicketState.SOLVED])
def test_customer_message_reopens(start: TicketState) -> None:
    history = given(*path_to(start))
    events = when(history, reply(at(5), actor=CUSTOMER))
    assert [type(e) for e in events] == [MessageAdded, StateChanged]
    change = events[1]
    assert isinstance(change, StateChanged)
    assert (change.from_state, change.to_state, change.reason) == (
        start, TicketState.OPEN, "customer_reply")
    state = state_of(history + events)
    assert state.state is TicketState.OPEN and state.awaiting_reply
    assert state.reopen_count == (1 if start is TicketState.SOLVED else 0)
    assert state.solved_at is None


@pytest.mark.parametrize("start", [TicketState.OPEN, TicketState.ON_HOLD])
def test_customer_message_does_not_move_open_or_on_hold(start: TicketState) -> None:
    events = when(given(*path_to(start)), reply(at(5), actor=CUSTOMER))
    assert [type(e) for e in events] == [MessageAdded]


def test_customer_message_on_closed_ticket_requires_follow_up() -> None:
    history = given(*path_to(TicketState.CLOSED))
    with pytest.raises(FollowUpRequired) as info:
        when(history, reply(at(9), actor=CUSTOMER))
    assert info.value.closed_ticket_id == TICKET
    assert info.value.code == "follow_up_required"


def test_agent_message_on_closed_ticket_is_refused() -> None:
    with pytest.raises(TicketClosed):
        when(given(*path_to(TicketState.CLOSED)), reply(at(9)))


def test_decide_follow_up_builds_both_streams() -> None:
    first = open_cmd(tags=("vip",), priority=Priority.HIGH)
    history = given(first, *path_to(TicketState.CLOSED)[1:])
    closed = state_of(history)
    new_id = TicketId(uuid.UUID(int=99))
    message = reply(at(30), actor=CUSTOMER, n=5, body="It is on fire again.")
    old, new = decide_follow_up(message, closed, new_id, POLICY)
    assert old == [FollowUpOpened(follow_up_id=new_id, at=at(30))]
    [opened] = new
    assert isinstance(opened, TicketOpened)
    assert opened.ticket_id == new_id and opened.follow_up_of == TICKET
    assert opened.message_id == mid(5) and opened.body == "It is on fire again."
    assert (opened.subject, opened.priority, opened.tags) == (
        closed.subject, Priority.HIGH, ("vip",))
    assert state_of(history + old).follow_up_ids == (new_id,)
    assert state_of(new).follow_up_of == TICKET


def test_decide_follow_up_refuses_agents_and_open_tickets() -> None:
    closed = state_of(given(*path_to(TicketState.CLOSED)))
    with pytest.raises(TicketClosed):
        decide_follow_up(reply(at(9)), closed, TicketId(uuid.UUID(int=9)), POLICY)
    with pytest.raises(ValidationFailed):
        decide_follow_up(reply(at(9), actor=CUSTOMER), state_of(given(open_cmd())),
                         TicketId(uuid.UUID(int=9)), POLICY)


# --- Assign ------------------------------------------------------------------------------


def test_assign_and_unassign() -> None:
    history = given(open_cmd())
    [event] = when(history, Assign(agent_id=AGENT_2, actor=AGENT, at=at(1)))
    assert event == TicketAssigned(assignee=AGENT_2, at=at(1))
    history.append(event)
    assert state_of(history).assignee == AGENT_2
    [event] = when(history, Assign(agent_id=None, actor=AGENT, at=at(2)))
    assert event == TicketAssigned(assignee=None, at=at(2))
    assert state_of([*history, event]).assignee is None


def test_assign_same_agent_is_a_no_op() -> None:
    history = given(open_cmd(), Assign(agent_id=AGENT_2, actor=AGENT, at=at(1)))
    assert when(history, Assign(agent_id=AGENT_2, actor=AGENT, at=at(2))) == []
    assert when(given(open_cmd()), Assign(agent_id=None, actor=AGENT, at=at(2))) == []


# --- ChangePriority ----------------------------------------------------------------------


def test_change_priority() -> None:
    [event] = when(given(open_cmd()), ChangePriority(priority=Priority.URGENT, actor=AGENT,
                                                      at=at(0.5)))
    assert isinstance(event, PriorityChanged) and event.priority is Priority.URGENT
    assert state_of([*given(open_cmd()), event]).priority is Priority.URGENT


def test_same_priority_is_a_no_op() -> None:
    assert when(given(open_cmd()), ChangePriority(priority=Priority.NORMAL, actor=AGENT,
                                                   at=at(1))) == []


# --- ChangeState ---------------------------------------------------------------------------


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(ALL_STATES, ALL_STATES)))
def test_state_transition_table(src: TicketState, dst: TicketState) -> None:
    history = given(*path_to(src))
    command = ChangeState(to=dst, reason="because", actor=AGENT, at=at(10))
    if src is TicketState.CLOSED:
        with pytest.raises(TicketClosed):
            when(history, command)
    elif src is dst:
        assert when(history, command) == []
    elif (src, dst) in ALLOWED:
        [event] = when(history, command)
        assert isinstance(event, StateChanged)
        assert (event.from_state, event.to_state, event.reason) == (src, dst, "because")
        assert state_of([*history, event]).state is dst
    else:
        with pytest.raises(InvalidTransition) as info:
            when(history, command)
        assert (info.value.from_state, info.value.to_state) == (src.value, dst.value)
        assert info.value.code == "invalid_transition"


def test_solve_close_and_reopen_bookkeeping() -> None:
    history = given(open_cmd(), move(TicketState.SOLVED, at(1)))
    assert state_of(history).solved_at == at(1)
    reopened = history + when(history, move(TicketState.OPEN, at(2)))
    assert state_of(reopened).reopen_count == 1
    closed = given(*path_to(TicketState.CLOSED))
    assert state_of(closed).closed_at == at(2)


def test_sweep_by_system_actor() -> None:
    history = given(open_cmd(), move(TicketState.PENDING, at(1)))
    [event] = when(history, ChangeState(to=TicketState.SOLVED, reason="sweep", actor=SYSTEM,
                                        at=at(100)))
    assert isinstance(event, StateChanged) and event.to_state is TicketState.SOLVED


def test_overlong_reason_is_rejected() -> None:
    with pytest.raises(ValidationFailed):
        when(given(open_cmd()), ChangeState(to=TicketState.PENDING, reason="x" * 501,
                                            actor=AGENT, at=at(1)))


# --- ChangeTags ----------------------------------------------------------------------------


def test_change_tags() -> None:
    history = given(open_cmd(tags=("a", "b")))
    [event] = when(history, ChangeTags(add=("C", "a"), remove=("b", "zz"), actor=AGENT, at=at(1)))
    assert event == TagsChanged(added=("c",), removed=("b",), tags=("a", "c"), at=at(1))
    assert state_of([*history, event]).tags == ("a", "c")


def test_tags_no_op_and_conflicts() -> None:
    history = given(open_cmd(tags=("a",)))
    assert when(history, ChangeTags(add=("a",), remove=("b",), actor=AGENT, at=at(1))) == []
    with pytest.raises(ValidationFailed):
        when(history, ChangeTags(add=("c",), remove=("c",), actor=AGENT, at=at(1)))
    with pytest.raises(ValidationFailed):
        when(history, ChangeTags(add=("Not A Slug",), actor=AGENT, at=at(1)))
    full = given(open_cmd(tags=tuple(f"t{i}" for i in range(20))))
    with pytest.raises(ValidationFailed):
        when(full, ChangeTags(add=("one-more",), actor=AGENT, at=at(1)))


# --- closed is terminal ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        Assign(agent_id=AGENT_2, actor=AGENT, at=at(9)),
        ChangePriority(priority=Priority.LOW, actor=AGENT, at=at(9)),
        ChangeTags(add=("x",), actor=AGENT, at=at(9)),
        move(TicketState.OPEN, at(9)),
        reply(at(9), visibility=Visibility.INTERNAL),
    ],
)
def test_closed_ticket_refuses_commands(command: Command) -> None:
    with pytest.raises(TicketClosed):
        decide(command, fold(given(*path_to(TicketState.CLOSED))), POLICY)


def test_check_sla_on_closed_ticket_is_quiet() -> None:
    history = given(*path_to(TicketState.CLOSED))
    assert when(history, CheckSla(metric=SlaMetric.FIRST_RESPONSE, at=at(1000))) == []


# --- evolve guards ---------------------------------------------------------------------------


def test_stream_must_start_with_ticket_opened() -> None:
    with pytest.raises(CorruptStream):
        evolve(None, TicketAssigned(assignee=None, at=at()))
    history = given(open_cmd())
    with pytest.raises(CorruptStream):
        evolve(state_of(history), history[0])
    with pytest.raises(CorruptStream):
        evolve(state_of(history), StateChanged(from_state=TicketState.SOLVED,
                                               to_state=TicketState.OPEN, at=at(1)))


def test_message_from_agent_as_internal_note_keeps_awaiting_reply() -> None:
    history = given(open_cmd(), AddMessage(message_id=mid(2), body="note", actor=AGENT,
                                           visibility=Visibility.INTERNAL, at=at(1)))
    assert state_of(history).awaiting_reply
