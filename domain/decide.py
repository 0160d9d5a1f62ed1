"""Command handling: ``decide(command, state, policy) -> events``.

Pure: the same command on the same state under the same policy always yields the same
events. Choices worth knowing:

* A command that would change nothing (same assignee, priority or state, tags already
  as asked) returns ``[]``: the caller appends nothing and answers with the current
  state. That reads better for idempotent clients than an error.
* A closed ticket refuses every command with ``TicketClosed``, except ``CheckSla``
  (returns ``[]``: its clocks are stopped), ``ChangeRequester`` (a merge of contacts
  moves closed tickets too) and a customer's message, which raises
  ``FollowUpRequired``; ``decide_follow_up`` builds both streams' events for that case.
* Multi-event decisions are computed in order against the state each earlier event
  produced, so a message that reopens a pending ticket starts the next-reply clock
  paused and the ``StateChanged`` that follows resumes it.
"""

from __future__ import annotations

from datetime import datetime

from domain.commands import (
    AddMessage,
    Assign,
    ChangePriority,
    ChangeRequester,
    ChangeState,
    ChangeTags,
    CheckSla,
    Command,
    OpenTicket,
)
from domain.errors import (
    AlreadyExists,
    FollowUpRequired,
    InvalidTransition,
    NotFound,
    TicketClosed,
    ValidationFailed,
)
from domain.events import (
    Clocks,
    Event,
    FollowUpOpened,
    MessageAdded,
    PriorityChanged,
    RequesterChanged,
    SlaBreached,
    StateChanged,
    TagsChanged,
    TicketAssigned,
    TicketOpened,
)
from domain.ids import TicketId
from domain.sla import (
    Clock,
    SlaPolicy,
    breach_due,
    fulfil_clock,
    idle_clock,
    pause_clock,
    resume_clock,
    retarget_clock,
    solve_resolution,
    start_clock,
)
from domain.ticket import TRANSITIONS, Ticket, evolve
from domain.validation import (
    BODY_MAX,
    SUBJECT_MAX,
    check_reason,
    check_requester,
    check_tag_count,
    check_text,
    normalize_tags,
)
from domain.values import ActorKind, SlaMetric, TicketState, Visibility

FR, NR, RES = SlaMetric.FIRST_RESPONSE, SlaMetric.NEXT_REPLY, SlaMetric.RESOLUTION


def decide(command: Command, state: Ticket | None, policy: SlaPolicy) -> list[Event]:
    """Decide the events a command produces on a ticket (None: the stream is empty)."""
    if isinstance(command, OpenTicket):
        if state is not None:
            raise AlreadyExists()
        return [_open(command, policy)]
    if state is None:
        raise NotFound()
    if isinstance(command, CheckSla):
        return _check_sla(command, state)
    if isinstance(command, ChangeRequester):
        if command.requester == state.requester:
            return []
        if command.requester.contact_id is None:
            raise ValidationFailed("a ticket moves to a contact", field="requester.contact_id")
        return [RequesterChanged(requester=check_requester(command.requester), at=command.at)]
    if state.state is TicketState.CLOSED:
        if isinstance(command, AddMessage) and command.actor.kind is ActorKind.CUSTOMER:
            raise FollowUpRequired(state.id)
        raise TicketClosed()
    match command:
        case AddMessage():
            return _add_message(command, state, policy)
        case Assign():
            if command.agent_id == state.assignee:
                return []
            return [TicketAssigned(assignee=command.agent_id, at=command.at)]
        case ChangePriority():
            return _change_priority(command, state, policy)
        case ChangeState():
            reason = check_reason(command.reason)
            event = _state_change(state, command.to, reason, command.at, policy)
            return [] if event is None else [event]
        case ChangeTags():
            return _change_tags(command, state)
    raise TypeError(f"unknown command {type(command).__name__}")  # pragma: no cover


def decide_follow_up(
    command: AddMessage, closed: Ticket, follow_up_id: TicketId, policy: SlaPolicy
) -> tuple[list[Event], list[Event]]:
    """Turn a customer's message on a closed ticket into a follow-up ticket.

    Returns ``(events for the closed ticket's stream, events for the new stream)``:
    ``FollowUpOpened`` on the old one and ``TicketOpened`` (subject, requester,
    priority, source and tags copied; the message as its body) on the new one.
    """
    if closed.state is not TicketState.CLOSED:
        raise ValidationFailed("only a closed ticket takes a follow-up", field="state")
    if command.actor.kind is not ActorKind.CUSTOMER:
        raise TicketClosed()
    open_cmd = OpenTicket(
        ticket_id=follow_up_id,
        message_id=command.message_id,
        subject=closed.subject,
        body=command.body,
        requester=closed.requester,
        priority=closed.priority,
        source=closed.source,
        tags=closed.tags,
        actor=command.actor,
        at=command.at,
        follow_up_of=closed.id,
    )
    old: list[Event] = [FollowUpOpened(follow_up_id=follow_up_id, at=command.at)]
    return old, decide(open_cmd, None, policy)


# --- handlers -----------------------------------------------------------------------------


def _open(cmd: OpenTicket, policy: SlaPolicy) -> TicketOpened:
    if cmd.actor.kind is ActorKind.SYSTEM:
        raise ValidationFailed("the system does not open tickets", field="actor")
    tags = check_tag_count(normalize_tags(cmd.tags))
    cal = policy.calendar
    clocks: Clocks = {
        FR: start_clock(cal, FR, policy.target_ms(FR, cmd.priority), cmd.at),
        NR: idle_clock(NR, policy.target_ms(NR, cmd.priority)),
        RES: start_clock(cal, RES, policy.target_ms(RES, cmd.priority), cmd.at),
    }
    return TicketOpened(
        ticket_id=cmd.ticket_id,
        message_id=cmd.opening_message_id(),
        subject=check_text(cmd.subject, "subject", SUBJECT_MAX),
        body=check_text(cmd.body, "body", BODY_MAX),
        requester=check_requester(cmd.requester),
        priority=cmd.priority,
        source=cmd.source,
        tags=tags,
        author=cmd.actor,
        follow_up_of=cmd.follow_up_of,
        clocks=clocks,
        at=cmd.at,
    )


def _add_message(cmd: AddMessage, state: Ticket, policy: SlaPolicy) -> list[Event]:
    body = check_text(cmd.body, "body", BODY_MAX)
    kind = cmd.actor.kind
    if kind is ActorKind.CUSTOMER and cmd.visibility is Visibility.INTERNAL:
        raise ValidationFailed("customers cannot write internal notes", field="visibility")
    clocks: Clocks = {}
    # Internal notes and system messages never count as a response or a question.
    if cmd.visibility is Visibility.PUBLIC and kind is ActorKind.AGENT:
        for metric in (FR, NR):
            clock = state.clocks[metric]
            if clock.active:
                clocks[metric] = fulfil_clock(clock, cmd.at)
    elif kind is ActorKind.CUSTOMER:
        next_reply = state.clocks[NR]
        # Before the first response, that clock already measures the wait; and only one
        # next-reply clock runs at a time, so a second unanswered message keeps the first.
        # Each unanswered message after a reply starts a fresh cycle with its own breach
        # latch; earlier breaches stay in the stream as SlaBreached events.
        if state.clocks[FR].fulfilled_at is not None and not next_reply.active:
            clocks[NR] = start_clock(
                policy.calendar,
                NR,
                policy.target_ms(NR, state.priority),
                cmd.at,
                paused=state.state in policy.paused_states,
            )
    message = MessageAdded(
        message_id=cmd.message_id,
        body=body,
        visibility=cmd.visibility,
        author=cmd.actor,
        clocks=clocks,
        at=cmd.at,
    )
    events: list[Event] = [message]
    if kind is ActorKind.CUSTOMER and state.state in (TicketState.PENDING, TicketState.SOLVED):
        after = evolve(state, message)
        reopen = _state_change(after, TicketState.OPEN, "customer_reply", cmd.at, policy)
        if reopen is not None:
            events.append(reopen)
    return events


def _change_priority(cmd: ChangePriority, state: Ticket, policy: SlaPolicy) -> list[Event]:
    if cmd.priority is state.priority:
        return []
    clocks: Clocks = {}
    for metric, clock in state.clocks.items():
        new = retarget_clock(policy.calendar, clock, policy.target_ms(metric, cmd.priority), cmd.at)
        if new != clock:
            clocks[metric] = new
    return [PriorityChanged(priority=cmd.priority, clocks=clocks, at=cmd.at)]


def _state_change(
    state: Ticket, to: TicketState, reason: str | None, at: datetime, policy: SlaPolicy
) -> StateChanged | None:
    if to is state.state:
        return None
    if to not in TRANSITIONS[state.state]:
        raise InvalidTransition(state.state.value, to.value)
    clocks: Clocks = {}
    for metric, clock in state.clocks.items():
        new = _clock_for_state(metric, clock, to, at, policy)
        if new != clock:
            clocks[metric] = new
    return StateChanged(from_state=state.state, to_state=to, reason=reason, clocks=clocks, at=at)


def _clock_for_state(
    metric: SlaMetric, clock: Clock, to: TicketState, at: datetime, policy: SlaPolicy
) -> Clock:
    cal = policy.calendar
    if to is TicketState.CLOSED:
        return pause_clock(cal, clock, at)  # closed: every clock stops for good
    if metric is FR:
        return clock  # first response never pauses
    if metric is RES and to is TicketState.SOLVED:
        return solve_resolution(cal, clock, at)
    if to in policy.paused_states:
        return pause_clock(cal, clock, at)
    return resume_clock(cal, clock, at)


def _change_tags(cmd: ChangeTags, state: Ticket) -> list[Event]:
    add = normalize_tags(cmd.add, "add")
    remove = normalize_tags(cmd.remove, "remove")
    if set(add) & set(remove):
        raise ValidationFailed("a tag cannot be both added and removed", field="tags")
    current = set(state.tags)
    added = tuple(sorted(set(add) - current))
    removed = tuple(sorted(set(remove) & current))
    if not added and not removed:
        return []
    tags = check_tag_count(tuple(sorted((current | set(added)) - set(removed))))
    return [TagsChanged(added=added, removed=removed, tags=tags, at=cmd.at)]


def _check_sla(cmd: CheckSla, state: Ticket) -> list[Event]:
    clock = state.clocks.get(cmd.metric)
    if clock is None or clock.due_at is None or not breach_due(clock, cmd.at):
        return []
    return [SlaBreached(metric=cmd.metric, due_at=clock.due_at, at=cmd.at)]


__all__ = ["decide", "decide_follow_up"]
