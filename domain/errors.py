"""Errors raised by the domain.

Every error carries a stable ``code`` (a class attribute) that the API turns into the
``code`` of a problem+json response, and a human message. Nothing outside this package
should need to parse the message.
"""

from __future__ import annotations

from typing import ClassVar


class DomainError(Exception):
    """Base class of every error the domain raises."""

    code: ClassVar[str] = "domain_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidTransition(DomainError):
    """The ticket cannot move from its current state to the requested one."""

    code = "invalid_transition"

    def __init__(self, from_state: str, to_state: str) -> None:
        super().__init__(f"a ticket cannot move from {from_state} to {to_state}")
        self.from_state = from_state
        self.to_state = to_state


class TicketClosed(DomainError):
    """The ticket is closed, which is terminal: no command changes it."""

    code = "ticket_closed"

    def __init__(self, message: str = "the ticket is closed") -> None:
        super().__init__(message)


class NotSolved(DomainError):
    """Only a solved ticket takes a satisfaction rating."""

    code = "ticket_not_solved"

    def __init__(self, message: str = "only a solved ticket can be rated") -> None:
        super().__init__(message)


class ValidationFailed(DomainError):
    """Input breaks a domain rule (length, format, limits)."""

    code = "validation_failed"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(DomainError):
    """A command addressed a ticket that does not exist (its stream is empty)."""

    code = "not_found"

    def __init__(self, message: str = "the ticket does not exist") -> None:
        super().__init__(message)


class AlreadyExists(DomainError):
    """``OpenTicket`` was decided on a stream that already holds a ticket."""

    code = "already_exists"

    def __init__(self, message: str = "the ticket already exists") -> None:
        super().__init__(message)


class FollowUpRequired(DomainError):
    """A customer wrote on a closed ticket: open a follow-up instead.

    This is a signal, not a failure: the caller turns it into a new ticket linked to the
    closed one, most simply with ``domain.ticket.decide.decide_follow_up``.
    """

    code = "follow_up_required"

    def __init__(self, closed_ticket_id: object) -> None:
        super().__init__(f"ticket {closed_ticket_id} is closed; a follow-up is required")
        self.closed_ticket_id = closed_ticket_id


class NotGroupMember(DomainError):
    """The assignment would give a ticket an agent who is not a member of its group."""

    code = "not_group_member"

    def __init__(self, agent_id: object, group_id: object) -> None:
        super().__init__(f"agent {agent_id} is not a member of group {group_id}, the "
                         "ticket's group: add the agent to the group, or change the group "
                         "in the same request")
        self.agent_id = agent_id
        self.group_id = group_id


class TicketMergedAway(DomainError):
    """The ticket was merged into another: it takes no command; ``merged_into`` names
    where its thread went."""

    code = "ticket_merged"

    def __init__(self, merged_into: object) -> None:
        super().__init__(f"the ticket was merged into {merged_into}")
        self.merged_into = merged_into


class CorruptStream(DomainError):
    """Events cannot be folded: the stream does not start with ``TicketOpened`` or is
    otherwise out of order. Indicates a bug or tampering, never user input."""

    code = "corrupt_stream"


class UnknownEventType(DomainError):
    """The mapper met an event type or schema version it cannot read."""

    code = "unknown_event_type"


__all__ = [
    "AlreadyExists",
    "CorruptStream",
    "DomainError",
    "FollowUpRequired",
    "InvalidTransition",
    "NotFound",
    "NotGroupMember",
    "NotSolved",
    "TicketClosed",
    "TicketMergedAway",
    "UnknownEventType",
    "ValidationFailed",
]
