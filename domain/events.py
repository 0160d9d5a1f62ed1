"""Domain events: immutable, past-tense facts.

Each event names itself (``TYPE``) and its payload shape (``SCHEMA_VERSION``) and
carries ``at``, the business time it happened. Ticket events carry the *decided*
facts, computed SLA clocks included, so ``evolve`` never needs the policy or calendar
and a replay shows exactly what was shown at the time. Numbers are ints only: the
store hashes canonical JSON and floats have no canonical form.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, field_validator

from domain.ids import AgentId, ApiKeyId, MessageId, TicketId
from domain.sla import Clock
from domain.values import (
    Actor,
    Priority,
    Requester,
    Role,
    SlaMetric,
    Source,
    TicketState,
    UtcDatetime,
    Visibility,
)

Clocks = dict[SlaMetric, Clock]


class Event(BaseModel):
    """Base of every event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    TYPE: ClassVar[str]
    SCHEMA_VERSION: ClassVar[int] = 1

    at: UtcDatetime


# --- ticket stream ---------------------------------------------------------------------


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


class MessageAdded(Event):
    """A message was added; ``clocks`` holds the clocks it changed."""

    TYPE = "MessageAdded"

    message_id: MessageId
    body: str
    visibility: Visibility
    author: Actor
    clocks: Clocks = {}


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


class SlaBreached(Event):
    """A clock passed its due time; ``at`` is when this was noticed, never earlier."""

    TYPE = "SlaBreached"

    metric: SlaMetric
    due_at: UtcDatetime


class FollowUpOpened(Event):
    """Appended to a closed ticket when a customer's message opened a follow-up."""

    TYPE = "FollowUpOpened"

    follow_up_id: TicketId


# --- tenant stream (audit trail of configuration) ----------------------------------------


def _no_floats(value: Any) -> Any:
    if isinstance(value, float):
        raise ValueError("numbers in event data must be integers")
    if isinstance(value, dict):
        for item in value.values():
            _no_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _no_floats(item)
    return value


class ApiKeyIssued(Event):
    TYPE = "ApiKeyIssued"

    key_id: ApiKeyId
    name: str
    role: Role
    prefix: str


class ApiKeyRevoked(Event):
    TYPE = "ApiKeyRevoked"

    key_id: ApiKeyId


class AgentAdded(Event):
    TYPE = "AgentAdded"

    agent_id: AgentId
    email: str
    name: str
    role: Role


class AgentUpdated(Event):
    """Only the fields that changed are set."""

    TYPE = "AgentUpdated"

    agent_id: AgentId
    email: str | None = None
    name: str | None = None
    role: Role | None = None
    active: bool | None = None


class SettingsChanged(Event):
    """The tenant's settings document after the change (JSON, ints only)."""

    TYPE = "SettingsChanged"

    settings: dict[str, Any]

    @field_validator("settings")
    @classmethod
    def _ints_only(cls, value: dict[str, Any]) -> dict[str, Any]:
        _no_floats(value)
        return value


class WebhookConfigured(Event):
    TYPE = "WebhookConfigured"

    url: str
    event_types: tuple[str, ...]
    enabled: bool


TICKET_EVENTS: tuple[type[Event], ...] = (
    TicketOpened,
    MessageAdded,
    TicketAssigned,
    PriorityChanged,
    StateChanged,
    TagsChanged,
    SlaBreached,
    FollowUpOpened,
)
TENANT_EVENTS: tuple[type[Event], ...] = (
    ApiKeyIssued,
    ApiKeyRevoked,
    AgentAdded,
    AgentUpdated,
    SettingsChanged,
    WebhookConfigured,
)
EVENT_TYPES: dict[str, type[Event]] = {cls.TYPE: cls for cls in TICKET_EVENTS + TENANT_EVENTS}
"""Every event class by its ``TYPE``."""

STREAM_KINDS: dict[str, tuple[type[Event], ...]] = {
    "ticket": TICKET_EVENTS,
    "tenant": TENANT_EVENTS,
}
"""The kinds of stream and the events each holds; a new aggregate adds its row here."""

STREAM_TYPES: dict[str, str] = {cls.TYPE: kind for kind, classes in STREAM_KINDS.items()
                                for cls in classes}
"""The kind of stream (``ticket``, ``tenant``) each event type is appended to."""

__all__ = [
    "EVENT_TYPES",
    "STREAM_KINDS",
    "STREAM_TYPES",
    "TENANT_EVENTS",
    "TICKET_EVENTS",
    "AgentAdded",
    "AgentUpdated",
    "ApiKeyIssued",
    "ApiKeyRevoked",
    "Clocks",
    "Event",
    "FollowUpOpened",
    "MessageAdded",
    "PriorityChanged",
    "SettingsChanged",
    "SlaBreached",
    "StateChanged",
    "TagsChanged",
    "TicketAssigned",
    "TicketOpened",
    "WebhookConfigured",
]
