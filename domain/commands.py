"""Ticket commands: what a caller asks for. Frozen, typed, no behaviour.

Commands other than ``OpenTicket`` carry no ticket id: the caller loads the stream and
passes its state to ``decide``. ``at`` is the business time of the command, from the
injected clock, never read inside the domain.
"""

from __future__ import annotations

import uuid

from pydantic import BaseModel, ConfigDict

from domain.ids import AgentId, MessageId, TicketId
from domain.values import (
    Actor,
    Priority,
    Requester,
    SlaMetric,
    Source,
    TicketState,
    UtcDatetime,
    Visibility,
)

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class OpenTicket(BaseModel):
    """Open a ticket. ``message_id`` names the opening message; when omitted it is
    derived from the ticket id, so retrying the same command yields the same id."""

    model_config = _FROZEN

    ticket_id: TicketId
    subject: str
    body: str
    requester: Requester
    priority: Priority = Priority.NORMAL
    source: Source = Source.API
    tags: tuple[str, ...] = ()
    actor: Actor
    at: UtcDatetime
    follow_up_of: TicketId | None = None
    message_id: MessageId | None = None

    def opening_message_id(self) -> MessageId:
        """The id of the opening message (explicit or derived)."""
        if self.message_id is not None:
            return self.message_id
        return MessageId(uuid.uuid5(self.ticket_id, "opening-message"))


class AddMessage(BaseModel):
    model_config = _FROZEN

    message_id: MessageId
    body: str
    visibility: Visibility = Visibility.PUBLIC
    actor: Actor
    at: UtcDatetime


class Assign(BaseModel):
    """Assign to an agent, or unassign with ``agent_id=None``."""

    model_config = _FROZEN

    agent_id: AgentId | None
    actor: Actor
    at: UtcDatetime


class ChangePriority(BaseModel):
    model_config = _FROZEN

    priority: Priority
    actor: Actor
    at: UtcDatetime


class ChangeState(BaseModel):
    """Move the ticket; sweeps use this with a ``system`` actor."""

    model_config = _FROZEN

    to: TicketState
    reason: str | None = None
    actor: Actor
    at: UtcDatetime


class ChangeTags(BaseModel):
    model_config = _FROZEN

    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()
    actor: Actor
    at: UtcDatetime


class CheckSla(BaseModel):
    """The scheduler's timer: record a breach of ``metric`` if it is due by ``at``."""

    model_config = _FROZEN

    metric: SlaMetric
    at: UtcDatetime


class ChangeRequester(BaseModel):
    """Give the ticket to another contact (a merge, or linking an old ticket); allowed
    on closed tickets too, since it changes who the ticket is for, not the ticket."""

    model_config = _FROZEN

    requester: Requester
    at: UtcDatetime


Command = (OpenTicket | AddMessage | Assign | ChangePriority | ChangeState | ChangeTags
           | CheckSla | ChangeRequester)

__all__ = [
    "AddMessage",
    "Assign",
    "ChangePriority",
    "ChangeRequester",
    "ChangeState",
    "ChangeTags",
    "CheckSla",
    "Command",
    "OpenTicket",
]
