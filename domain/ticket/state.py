"""The ticket aggregate's state and how events build it.

``evolve`` only applies facts: it never consults a policy, a calendar or a clock, so
folding a stream always reproduces what was decided at the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import UUID

from domain.attachment import AttachmentRef, TicketFile
from domain.errors import CorruptStream
from domain.events import Event
from domain.evolution import replay
from domain.fields import FieldValue
from domain.frozen import Frozen
from domain.ids import AgentId, GroupId, MessageId, TicketId
from domain.sla import breach_clock, warn_clock
from domain.ticket import events as ev
from domain.values import (
    ActorKind,
    LinkKind,
    Priority,
    Rating,
    Requester,
    Source,
    TicketState,
    UtcDatetime,
    Visibility,
)

# Moves allowed by a ChangeState command. Closed is terminal.
TRANSITIONS: dict[TicketState, frozenset[TicketState]] = {
    TicketState.OPEN: frozenset({TicketState.PENDING, TicketState.ON_HOLD, TicketState.SOLVED}),
    TicketState.PENDING: frozenset({TicketState.OPEN, TicketState.ON_HOLD, TicketState.SOLVED}),
    TicketState.ON_HOLD: frozenset({TicketState.OPEN, TicketState.PENDING, TicketState.SOLVED}),
    TicketState.SOLVED: frozenset({TicketState.OPEN, TicketState.CLOSED}),
    TicketState.CLOSED: frozenset(),
}


class Links(Frozen):
    """A ticket's links to other tickets, by kind (``domain.values.LinkKind``): the
    original it duplicates and the problem it is an incident of are one ticket each."""

    related: tuple[TicketId, ...] = ()
    duplicate_of: TicketId | None = None
    duplicates: tuple[TicketId, ...] = ()
    problem: TicketId | None = None
    incidents: tuple[TicketId, ...] = ()

    def has(self, kind: LinkKind, ticket_id: TicketId) -> bool:
        """Whether this link is held."""
        held = getattr(self, kind.value if kind is not LinkKind.INCIDENT else "incidents")
        return held == ticket_id if not isinstance(held, tuple) else ticket_id in held

    def with_link(self, kind: LinkKind, ticket_id: TicketId, *, on: bool) -> Links:
        """These links with ``kind`` to ``ticket_id`` added (``on``) or taken off."""
        name = kind.value if kind is not LinkKind.INCIDENT else "incidents"
        held = getattr(self, name)
        if not isinstance(held, tuple):
            value: object = ticket_id if on else None
        elif on:
            value = held if ticket_id in held else (*held, ticket_id)
        else:
            value = tuple(t for t in held if t != ticket_id)
        return self.model_copy(update={name: value})

    def empty(self) -> bool:
        return self == Links()


class Satisfaction(Frozen):
    """The requester's latest satisfaction rating of the ticket."""

    rating: Rating
    comment: str | None = None
    via: str
    rated_at: UtcDatetime


class Ticket(Frozen):
    """A ticket as of ``version`` events."""

    id: TicketId
    version: int
    state: TicketState
    subject: str
    requester: Requester
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    assignee: AgentId | None = None
    group_id: GroupId | None = None
    follow_up_of: TicketId | None = None
    follow_up_ids: tuple[TicketId, ...] = ()
    created_at: UtcDatetime
    updated_at: UtcDatetime
    solved_at: UtcDatetime | None = None
    closed_at: UtcDatetime | None = None
    reopen_count: int = 0
    clocks: ev.Clocks
    awaiting_reply: bool = False
    """True while the last public message is the customer's and no agent answered."""
    fields: dict[str, FieldValue] = {}
    """Ticket field values by key (a field with no value is absent)."""
    files: tuple[TicketFile, ...] = ()
    """The files on its public messages, oldest message first (internal notes' files
    are on the notes only: a customer's transaction reads its ticket's row)."""
    merged_into: TicketId | None = None
    """The ticket this one was merged into: it is closed and takes no command."""
    merged_from: tuple[TicketId, ...] = ()
    """The tickets merged into this one (and into them before), whose messages its
    thread references, in the order they were merged."""
    links: Links = Links()
    followers: tuple[AgentId, ...] = ()
    """The agents following the ticket, in the order they started."""
    ccs: tuple[Requester, ...] = ()
    """The customers copied on the ticket (by e-mail, each its contact when known)."""
    satisfaction: Satisfaction | None = None
    """The requester's latest rating (None until they rate)."""
    split_from: TicketId | None = None
    """The ticket this one was split off (its first event is ``TicketSplitFrom``)."""
    split_into: tuple[TicketId, ...] = ()
    """The tickets split off this one, in the order they were."""
    moved: dict[MessageId, TicketId] = {}
    """Messages split off this ticket, each with the ticket it moved to."""


def _files(message_id: UUID, refs: tuple[AttachmentRef, ...]) -> tuple[TicketFile, ...]:
    return tuple(TicketFile(message_id=message_id, **r.model_dump()) for r in refs)


def evolve(state: Ticket | None, event: Event) -> Ticket:
    """Apply one event to the state (None before the stream's first event)."""
    if state is None:
        if isinstance(event, ev.TicketSplitFrom):
            return _split_off(event)
        if not isinstance(event, ev.TicketOpened):
            raise CorruptStream(f"a ticket stream must start with TicketOpened, not {event.TYPE}")
        return _first(event, awaiting_reply=event.author.kind is ActorKind.CUSTOMER,
                      follow_up_of=event.follow_up_of,
                      files=_files(event.message_id, event.attachments))
    changes: dict[str, object] = {"version": state.version + 1, "updated_at": event.at}
    match event:
        case ev.TicketOpened() | ev.TicketSplitFrom():
            raise CorruptStream(f"{event.TYPE} on a stream that already holds a ticket")
        case ev.TicketSplit():
            gone = set(event.message_ids)
            changes["split_into"] = (*state.split_into, event.into)
            changes["moved"] = state.moved | dict.fromkeys(event.message_ids, event.into)
            changes["files"] = tuple(f for f in state.files if f.message_id not in gone)
            changes["awaiting_reply"] = event.awaiting_reply
        case ev.MessageAdded():
            changes["clocks"] = state.clocks | event.clocks
            # Public messages' only: a customer reads the ticket's row, never a note.
            if event.attachments and event.visibility is Visibility.PUBLIC:
                changes["files"] = state.files + _files(event.message_id, event.attachments)
            if event.visibility is Visibility.PUBLIC:
                if event.author.kind is ActorKind.CUSTOMER:
                    changes["awaiting_reply"] = True
                elif event.author.kind is ActorKind.AGENT:
                    changes["awaiting_reply"] = False
        case ev.TicketAssigned():
            changes["assignee"] = event.assignee
        case ev.PriorityChanged():
            changes["priority"] = event.priority
            changes["clocks"] = state.clocks | event.clocks
        case ev.TicketGroupChanged():
            changes["group_id"] = event.group_id
            changes["clocks"] = state.clocks | event.clocks
        case ev.StateChanged():
            changes.update(_state_change(state, event))
        case ev.TagsChanged():
            changes["tags"] = event.tags
        case ev.SlaBreached():
            clock = state.clocks.get(event.metric)
            if clock is None:
                raise CorruptStream(f"breach of {event.metric} which has no clock")
            changes["clocks"] = state.clocks | {event.metric: breach_clock(clock, event.at)}
            # A breach is a scheduler observation, not a change a customer sees.
            del changes["updated_at"]
        case ev.SlaRetargeted():
            changes["clocks"] = state.clocks | event.clocks
            del changes["updated_at"]  # the SLA's bookkeeping, not a change to the ticket
        case ev.SlaWarning():
            clock = state.clocks.get(event.metric)
            if clock is None:
                raise CorruptStream(f"warning of {event.metric} which has no clock")
            changes["clocks"] = state.clocks | {event.metric: warn_clock(clock, event.at)}
            del changes["updated_at"]  # an observation, like a breach
        case ev.FieldValuesChanged():
            fields = dict(state.fields)
            for key, value in event.values.items():
                if value is None:
                    fields.pop(key, None)
                else:
                    fields[key] = value
            changes["fields"] = fields
        case ev.RequesterChanged():
            changes["requester"] = event.requester
            # Moving a ticket between contacts is bookkeeping, not a change a customer sees.
            del changes["updated_at"]
        case ev.FollowUpOpened():
            changes["follow_up_ids"] = (*state.follow_up_ids, event.follow_up_id)
        case ev.TicketMerged():
            if state.state is not TicketState.CLOSED:
                raise CorruptStream("TicketMerged on a ticket that is not closed")
            changes["merged_into"] = event.into
        case ev.TicketMergeReceived():
            known = set(state.merged_from)
            changes["merged_from"] = (*state.merged_from,
                                      *(t for t in event.merged_ids if t not in known))
            changes["ccs"] = (*state.ccs, *event.ccs)
        case ev.TicketLinked():
            changes["links"] = state.links.with_link(event.kind, event.ticket_id, on=True)
        case ev.TicketUnlinked():
            changes["links"] = state.links.with_link(event.kind, event.ticket_id, on=False)
        case ev.FollowersChanged():
            changes["followers"] = event.followers
        case ev.SatisfactionRated():
            changes["satisfaction"] = Satisfaction(rating=event.rating, comment=event.comment,
                                                   via=event.via, rated_at=event.at)
        case ev.CcsChanged():
            changes["ccs"] = event.ccs
        case _:
            raise CorruptStream(f"{event.TYPE} does not belong to a ticket stream")
    return state.model_copy(update=changes)


def _split_off(event: ev.TicketSplitFrom) -> Ticket:
    """A ticket's state from its first event when it was split off another."""
    return _first(event, awaiting_reply=event.awaiting_reply, files=event.attachments,
                  split_from=event.source_id)


def _first(event: ev.TicketOpened | ev.TicketSplitFrom, **rest: Any) -> Ticket:
    """What an opening and a split-off opening set alike, and what each sets of its own."""
    return Ticket(id=event.ticket_id, version=1, state=TicketState.OPEN,
                  subject=event.subject, requester=event.requester, priority=event.priority,
                  source=event.source, tags=event.tags, created_at=event.at,
                  updated_at=event.at, clocks=dict(event.clocks), fields=dict(event.fields),
                  **rest)


def _state_change(state: Ticket, event: ev.StateChanged) -> dict[str, object]:
    if event.from_state is not state.state:
        raise CorruptStream(f"StateChanged from {event.from_state} but ticket is {state.state}")
    out: dict[str, object] = {"state": event.to_state, "clocks": state.clocks | event.clocks}
    if event.to_state is TicketState.SOLVED:
        out["solved_at"] = event.at
    elif event.to_state is TicketState.CLOSED:
        out["closed_at"] = event.at
    elif event.from_state is TicketState.SOLVED:
        out["reopen_count"] = state.reopen_count + 1
        out["solved_at"] = None
    return out


def fold(events: Iterable[Event]) -> Ticket | None:
    """Replay a stream from the start; None for an empty stream."""
    return replay(evolve, events)


__all__ = ["TRANSITIONS", "Links", "Ticket", "evolve", "fold"]
