"""Value types shared by commands, events and state."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator

from domain.frozen import Frozen
from domain.ids import ContactId


def _utc(value: datetime) -> datetime:
    # Naive datetimes are ambiguous about their zone; the domain refuses to guess.
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("datetime must be timezone-aware")
    return value.astimezone(UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]
"""An aware datetime, normalised to UTC on validation."""


class Priority(StrEnum):
    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    URGENT = "urgent"


class Source(StrEnum):
    API = "api"
    EMAIL = "email"
    PORTAL = "portal"
    CHAT = "chat"
    PHONE = "phone"
    SLACK = "slack"


class TicketState(StrEnum):
    OPEN = "open"
    PENDING = "pending"
    ON_HOLD = "on_hold"
    SOLVED = "solved"
    CLOSED = "closed"


class Visibility(StrEnum):
    PUBLIC = "public"
    INTERNAL = "internal"


class ActorKind(StrEnum):
    """Who acts: ``agent`` (an agent or admin key), ``customer`` (an intake key posting as
    the requester), ``system`` (the scheduler and its sweeps) or ``rule`` (a tenant's
    rule, by its id: domain/rule.py)."""

    AGENT = "agent"
    CUSTOMER = "customer"
    SYSTEM = "system"
    RULE = "rule"


class Role(StrEnum):
    """API key and agent roles."""

    ADMIN = "admin"
    AGENT = "agent"
    INTAKE = "intake"
    ANALYST = "analyst"
    AUDITOR = "auditor"


class SlaMetric(StrEnum):
    FIRST_RESPONSE = "first_response"
    NEXT_REPLY = "next_reply"
    RESOLUTION = "resolution"
    PERIODIC_UPDATE = "periodic_update"
    """From each public agent reply to the next one (docs/sla.md); on SLA policies only."""
    REQUESTER_WAIT = "requester_wait"
    """The time the requester waits on the desk: open and on hold, not pending."""
    AGENT_WORK = "agent_work"
    """The time the ticket is in the agents' court: open only (docs/sla.md)."""


class Actor(Frozen):
    """The one who issues a command; ``id`` is an agent id, key id or ``"scheduler"``."""

    kind: ActorKind
    id: str


class Rating(StrEnum):
    """A requester's satisfaction rating of a solved ticket."""

    GOOD = "good"
    BAD = "bad"


class LinkKind(StrEnum):
    """How one ticket is linked to another, as the ticket holding the link sees it.

    Each link is held by both tickets, each its own side of it: ``related`` on both,
    ``duplicate_of`` on the duplicate and ``duplicates`` on the original, ``problem``
    on an incident (naming its problem) and ``incident`` on the problem."""

    RELATED = "related"
    DUPLICATE_OF = "duplicate_of"
    DUPLICATES = "duplicates"
    PROBLEM = "problem"
    INCIDENT = "incident"

    @property
    def other_side(self) -> LinkKind:
        """The kind the other ticket holds the same link as."""
        return _OTHER_SIDE[self]


_OTHER_SIDE = {
    LinkKind.RELATED: LinkKind.RELATED,
    LinkKind.DUPLICATE_OF: LinkKind.DUPLICATES,
    LinkKind.DUPLICATES: LinkKind.DUPLICATE_OF,
    LinkKind.PROBLEM: LinkKind.INCIDENT,
    LinkKind.INCIDENT: LinkKind.PROBLEM,
}


class Requester(Frozen):
    """The customer a ticket is for: the contact it resolved to (None on tickets opened
    before contacts existed, until ``helpdesk migrate`` links them) and the e-mail and
    name the ticket was opened with."""

    email: str
    name: str | None = None
    contact_id: ContactId | None = None


__all__ = [
    "Actor",
    "ActorKind",
    "LinkKind",
    "Priority",
    "Requester",
    "Role",
    "SlaMetric",
    "Source",
    "TicketState",
    "UtcDatetime",
    "Visibility",
]
