"""The ticket's events: immutable, past-tense facts of one ticket's stream.

They carry the *decided* facts, computed SLA clocks included, so ``evolve`` never needs
the policy or calendar and a replay shows exactly what was shown at the time. The base
class and the rules every event keeps (``TYPE``, ``SCHEMA_VERSION``, ``at``, ints only)
are in domain/events.py; domain/event_types.py lists these with every other stream's.
"""

from __future__ import annotations

from domain.attachment import AttachmentRef, TicketFile
from domain.events import Event
from domain.fields import FieldValue
from domain.ids import (
    AgentId,
    GroupId,
    MessageId,
    TicketId,
)
from domain.sla import ClockBasis, SlaClock
from domain.values import (
    Actor,
    LinkKind,
    Priority,
    Rating,
    Requester,
    SlaMetric,
    Source,
    TicketState,
    UtcDatetime,
    Visibility,
)

Clocks = dict[SlaMetric, SlaClock]


class TicketOpened(Event):
    """A ticket was opened. v2 nests the requester (v1 had a flat ``requester_email``)."""

    TYPE = "TicketOpened"
    SCHEMA_VERSION = 2

    ticket_id: TicketId
    message_id: MessageId
    subject: str
    body: str
    requester: Requester
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    author: Actor
    follow_up_of: TicketId | None = None
    clocks: Clocks
    fields: dict[str, FieldValue] = {}
    """Ticket field values by key (absent from events written before fields)."""
    attachments: tuple[AttachmentRef, ...] = ()
    """The opening message's files (absent when it has none)."""
    OMIT_EMPTY = frozenset({"attachments"})


class MessageAdded(Event):
    """A message was added; ``clocks`` holds the clocks it changed."""

    TYPE = "MessageAdded"
    OMIT_EMPTY = frozenset({"attachments"})

    message_id: MessageId
    body: str
    visibility: Visibility
    author: Actor
    clocks: Clocks = {}
    attachments: tuple[AttachmentRef, ...] = ()
    """The message's files (absent when it has none)."""


class TicketAssigned(Event):
    TYPE = "TicketAssigned"

    assignee: AgentId | None


class PriorityChanged(Event):
    """The priority changed; ``clocks`` holds the retargeted clocks."""

    TYPE = "PriorityChanged"

    priority: Priority
    clocks: Clocks = {}


class StateChanged(Event):
    """The ticket moved between states; ``clocks`` holds paused/resumed clocks."""

    TYPE = "StateChanged"

    from_state: TicketState
    to_state: TicketState
    reason: str | None = None
    clocks: Clocks = {}


class TagsChanged(Event):
    TYPE = "TagsChanged"

    added: tuple[str, ...]
    removed: tuple[str, ...]
    tags: tuple[str, ...]


class SlaRetargeted(Event):
    """The ticket's open clocks moved to another SLA policy, or to another version of
    their own: re-matched after a change of priority, group or organization, or asked
    for (``apply``). Names the policy before (None: the tenant's settings) and after;
    ``clocks`` holds the retargeted clocks, elapsed business time kept."""

    TYPE = "SlaRetargeted"

    from_policy: ClockBasis | None
    to_policy: ClockBasis
    reason: str
    clocks: Clocks


class SlaBreached(Event):
    """A clock passed its due time; ``at`` is when this was noticed, never earlier."""

    TYPE = "SlaBreached"

    metric: SlaMetric
    due_at: UtcDatetime


class SlaWarning(Event):
    """A running clock passed the tenant's warning share of its target (``share``, in
    percent); ``at`` is when this was noticed."""

    TYPE = "SlaWarning"

    metric: SlaMetric
    share: int
    due_at: UtcDatetime


class FieldValuesChanged(Event):
    """Ticket field values set (or cleared: ``None``), by key; never by title."""

    TYPE = "FieldValuesChanged"

    values: dict[str, FieldValue | None]


class FollowUpOpened(Event):
    """Appended to a closed ticket when a customer's message opened a follow-up."""

    TYPE = "FollowUpOpened"

    follow_up_id: TicketId


class TicketGroupChanged(Event):
    """The ticket moved to another group (None: to no group); ``clocks`` holds the
    clocks retargeted to the new group's SLA targets."""

    TYPE = "TicketGroupChanged"

    group_id: GroupId | None
    clocks: Clocks = {}


class TicketMerged(Event):
    """The ticket was merged into ``into`` (closed by the ``StateChanged`` before this
    event, reason ``merged``): its thread is read from there, and it takes no command."""

    TYPE = "TicketMerged"

    into: TicketId


class TicketMergeReceived(Event):
    """Another ticket was merged into this one: ``merged_ids`` are the tickets whose
    messages this thread now references (the source and the tickets merged into it
    before), ``message_ids`` those messages, oldest first, as they stood at the merge;
    ``ccs`` the source's requester and CCs this ticket did not have yet."""

    TYPE = "TicketMergeReceived"

    source_id: TicketId
    merged_ids: tuple[TicketId, ...]
    message_ids: tuple[MessageId, ...]
    ccs: tuple[Requester, ...] = ()


class TicketSplit(Event):
    """Messages of this ticket (``message_ids``, oldest first) moved to a new ticket,
    ``into``, which ``TicketSplitFrom`` opens: this thread lists them no more (its
    history points there). ``awaiting_reply`` is whether the last public message left
    is a customer's."""

    TYPE = "TicketSplit"

    into: TicketId
    message_ids: tuple[MessageId, ...]
    awaiting_reply: bool


class TicketSplitFrom(Event):
    """The first event of a ticket split off ``source_id``: it takes the source's
    requester, priority, channel, tags and field values, and the moved messages
    (``message_ids``, oldest first, each with its original author and time; their
    files are ``attachments``). Its SLA clocks start as an opening's do. The group
    comes by the ``TicketGroupChanged`` after it, as an opening's does."""

    TYPE = "TicketSplitFrom"
    OMIT_EMPTY = frozenset({"attachments"})

    ticket_id: TicketId
    source_id: TicketId
    subject: str
    requester: Requester
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    author: Actor
    message_ids: tuple[MessageId, ...]
    awaiting_reply: bool
    clocks: Clocks
    fields: dict[str, FieldValue] = {}
    attachments: tuple[TicketFile, ...] = ()


class TicketLinked(Event):
    """This ticket now holds a link of ``kind`` to ``ticket_id`` (the other ticket
    holds the other side, ``LinkKind.other_side``, by its own event)."""

    TYPE = "TicketLinked"

    kind: LinkKind
    ticket_id: TicketId


class TicketUnlinked(Event):
    """The link of ``kind`` to ``ticket_id`` was taken off this ticket."""

    TYPE = "TicketUnlinked"

    kind: LinkKind
    ticket_id: TicketId


class FollowersChanged(Event):
    """Agents started or stopped following the ticket; ``followers`` is the whole set
    after the change, in the order they started following."""

    TYPE = "FollowersChanged"

    added: tuple[AgentId, ...]
    removed: tuple[AgentId, ...]
    followers: tuple[AgentId, ...]


class SatisfactionRated(Event):
    """The requester rated the solved ticket; a later rating replaces this one until the
    ticket closes. ``via`` is how they rated: ``link`` (a signed single-use link),
    ``portal`` or ``widget``."""

    TYPE = "SatisfactionRated"

    rating: Rating
    comment: str | None = None
    author: Actor
    via: str


class CcsChanged(Event):
    """Customers were copied on the ticket or taken off it (``removed``: their
    e-mails); ``ccs`` is the whole list after the change."""

    TYPE = "CcsChanged"

    added: tuple[Requester, ...]
    removed: tuple[str, ...]
    ccs: tuple[Requester, ...]


class RequesterChanged(Event):
    """The ticket now belongs to another contact (or to a contact at all: tickets
    opened before contacts existed are linked by ``helpdesk migrate``); a merge of
    contacts moves each ticket with one of these."""

    TYPE = "RequesterChanged"

    requester: Requester


TICKET_EVENTS: tuple[type[Event], ...] = (
    TicketOpened,
    MessageAdded,
    TicketAssigned,
    PriorityChanged,
    StateChanged,
    TagsChanged,
    SlaBreached,
    SlaWarning,
    FollowUpOpened,
    SlaRetargeted,
    TicketGroupChanged,
    FieldValuesChanged,
    RequesterChanged,
    TicketMerged,
    TicketMergeReceived,
    TicketSplit,
    TicketSplitFrom,
    TicketLinked,
    TicketUnlinked,
    FollowersChanged,
    CcsChanged,
    SatisfactionRated,
)

__all__ = [
    "TICKET_EVENTS",
    "Clocks",
    "FieldValuesChanged",
    "FollowUpOpened",
    "MessageAdded",
    "PriorityChanged",
    "RequesterChanged",
    "SlaBreached",
    "SlaRetargeted",
    "SlaWarning",
    "StateChanged",
    "TagsChanged",
    "TicketAssigned",
    "TicketGroupChanged",
    "TicketMerged",
    "TicketOpened",
    "TicketSplit",
    "TicketSplitFrom",
]
