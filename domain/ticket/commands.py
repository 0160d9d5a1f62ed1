"""Ticket commands: what a caller asks for. Frozen, typed, no behaviour.

Commands other than ``OpenTicket`` carry no ticket id: the caller loads the stream and
passes its state to ``decide``. ``at`` is the business time of the command, from the
injected clock, never read inside the domain.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from domain.aggregate import ActorCommand, BaseCommand
from domain.attachment import AttachmentRef
from domain.frozen import Frozen
from domain.ids import AgentId, GroupId, MessageId, TicketId
from domain.values import (
    ActorKind,
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


class OpenTicket(ActorCommand):
    """Open a ticket. ``message_id`` names the opening message; when omitted it is
    derived from the ticket id, so retrying the same command yields the same id."""

    ticket_id: TicketId
    subject: str
    body: str
    requester: Requester
    priority: Priority = Priority.NORMAL
    source: Source = Source.API
    tags: tuple[str, ...] = ()
    follow_up_of: TicketId | None = None
    message_id: MessageId | None = None
    group_id: GroupId | None = None
    """The group the ticket starts in (agents only; its SLA targets apply at once)."""
    fields: dict[str, Any] = {}
    """Ticket field values by key, as given (checked against the definitions)."""
    attachments: tuple[AttachmentRef, ...] = ()
    """The opening message's files, as the handler found their uploads."""

    def opening_message_id(self) -> MessageId:
        """The id of the opening message (explicit or derived)."""
        if self.message_id is not None:
            return self.message_id
        return MessageId(uuid.uuid5(self.ticket_id, "opening-message"))


class AddMessage(ActorCommand):
    message_id: MessageId
    body: str
    visibility: Visibility = Visibility.PUBLIC
    attachments: tuple[AttachmentRef, ...] = ()
    """The message's files, as the handler found their uploads."""


class Assign(ActorCommand):
    """Assign to an agent (``agent_id=None``: unassign), to a group, or both.

    ``set_agent`` / ``set_group`` say which of the two the command changes; the other
    stays as it is. ``group_members`` are the members of the group the ticket will be
    in, as the caller read them (None when it will be in no group): an agent who is not
    one of them cannot be the ticket's assignee.
    """

    agent_id: AgentId | None = None
    set_agent: bool = True
    group_id: GroupId | None = None
    set_group: bool = False
    group_members: frozenset[AgentId] | None = None


class ChangePriority(ActorCommand):
    priority: Priority


class ChangeState(ActorCommand):
    """Move the ticket; sweeps use this with a ``system`` actor."""

    to: TicketState
    reason: str | None = None


class ChangeTags(ActorCommand):
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


class ChangeFields(ActorCommand):
    """Set ticket field values by key; ``None`` clears one."""

    values: dict[str, Any]


class CheckSla(BaseCommand):
    """The scheduler's timer: record a breach of ``metric`` if it is due by ``at``."""

    metric: SlaMetric


class RetargetSla(BaseCommand):
    """Move the ticket's open clocks to the policy the tenant's SLA policies match now,
    if that is ``policy_id`` (``POST /v1/sla-policies/{id}/apply``; None: whichever
    matches, as after the requester's organization changed); otherwise, or if they
    already run on its current version, nothing. ``reason`` is recorded on
    ``SlaRetargeted``."""

    policy_id: uuid.UUID | None
    reason: Literal["apply", "organization"] = "apply"


class WarnSla(BaseCommand):
    """The warning pass: record ``SlaWarning`` if ``metric``'s clock has used
    ``percent`` of its target by ``at``."""

    metric: SlaMetric
    percent: int


class ChangeRequester(BaseCommand):
    """Give the ticket to another contact (a merge, or linking an old ticket); allowed
    on closed tickets too, since it changes who the ticket is for, not the ticket."""

    requester: Requester


class MergeTicket(ActorCommand):
    """Merge the ticket into ``into`` (``domain.ticket.decide.decide_merge`` decides on
    both tickets at once). ``message_ids`` are the ticket's thread as the caller read
    it under the ticket's lock, oldest first."""

    into: TicketId
    message_ids: tuple[MessageId, ...] = ()


class ThreadMessage(Frozen):
    """One message of a ticket's own thread, as a split decides on it."""

    message_id: MessageId
    visibility: Visibility
    author_kind: ActorKind
    at: UtcDatetime


class SplitTicket(ActorCommand):
    """Move ``message_ids`` of the ticket to a new ticket, ``ticket_id``
    (``domain.ticket.decide.decide_split``), whose subject is ``subject`` or the
    source's. ``thread`` is the ticket's own messages as the caller read them under the
    ticket's lock, oldest first."""

    ticket_id: TicketId
    message_ids: tuple[MessageId, ...]
    subject: str | None = None
    thread: tuple[ThreadMessage, ...] = ()


class LinkTicket(ActorCommand):
    """Link the ticket to ``ticket_id`` as ``kind`` (``remove``: take the link off);
    ``domain.ticket.decide.decide_link`` decides on both tickets. ``chain`` is, for a
    duplicate link, the original and the tickets it is itself a duplicate of, in turn,
    as the caller read them (a duplicate may not be an original of its own)."""

    kind: LinkKind
    ticket_id: TicketId
    remove: bool = False
    chain: tuple[TicketId, ...] = ()


class ChangeFollowers(ActorCommand):
    """Agents start (``add``) or stop (``remove``) following the ticket. ``agents`` are
    those of ``add`` that the caller found to be active agents of the tenant."""

    add: tuple[AgentId, ...] = ()
    remove: tuple[AgentId, ...] = ()
    agents: frozenset[AgentId] = frozenset()


class ChangeCcs(ActorCommand):
    """Copy customers on the ticket (``add``, each an e-mail and, when known, its
    contact) or take them off (``remove``: e-mails)."""

    add: tuple[Requester, ...] = ()
    remove: tuple[str, ...] = ()


class MoveCc(BaseCommand):
    """A contact merged into another: the ticket copies the survivor (``to``) in place of
    the merged contact's ``email``, unless the survivor is its requester or copied
    already. Allowed on closed and merged tickets, as ``ChangeRequester`` is."""

    email: str
    to: Requester


class RateSatisfaction(ActorCommand):
    """The requester rates the solved ticket (``via``: link, portal or widget)."""

    rating: Rating
    comment: str | None = None
    via: str


Command = (OpenTicket | AddMessage | Assign | ChangePriority | ChangeState | ChangeTags
           | CheckSla | ChangeFields | ChangeRequester | WarnSla | RetargetSla
           | ChangeFollowers | ChangeCcs | MoveCc | RateSatisfaction)

__all__ = [
    "AddMessage",
    "Assign",
    "ChangeCcs",
    "ChangeFields",
    "ChangeFollowers",
    "ChangePriority",
    "ChangeRequester",
    "ChangeState",
    "ChangeTags",
    "CheckSla",
    "Command",
    "LinkTicket",
    "MergeTicket",
    "MoveCc",
    "OpenTicket",
    "RateSatisfaction",
    "RetargetSla",
    "SplitTicket",
    "ThreadMessage",
    "WarnSla",
]
