"""Request and response bodies of the ticket and message routes, and the views that
turn domain state into them. Requests forbid unknown fields (422)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import checked_by_domain
from domain.sla import Clock
from domain.ticket import Ticket
from domain.validation import (
    BODY_MAX,
    EMAIL_PATTERN,
    NOT_BLANK,
    REASON_MAX,
    SUBJECT_MAX,
    TAGS_MAX,
)
from domain.values import Priority, Source, TicketState, Visibility

_IN = ConfigDict(extra="forbid")


class RequesterIn(BaseModel):
    model_config = _IN

    email: str = Field(max_length=254, examples=["ann@example.com"],
                       json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str | None = Field(default=None, max_length=200)


class OpenTicketIn(BaseModel):
    model_config = _IN

    subject: str = Field(max_length=SUBJECT_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    body: str = Field(max_length=BODY_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    requester: RequesterIn
    priority: Priority = Priority.NORMAL
    source: Source = Source.API
    tags: list[str] = Field(default_factory=list, max_length=TAGS_MAX)


class MessageIn(BaseModel):
    model_config = _IN

    body: str = Field(max_length=BODY_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    visibility: Visibility = Visibility.PUBLIC


class AssigneeIn(BaseModel):
    model_config = _IN

    agent_id: UUID | None = Field(description="An active agent of the tenant, or null.")


class PriorityIn(BaseModel):
    model_config = _IN

    priority: Priority


class StateIn(BaseModel):
    model_config = _IN

    state: TicketState
    reason: str | None = Field(default=None, max_length=REASON_MAX)


class TagsIn(BaseModel):
    model_config = _IN

    add: list[str] = Field(default_factory=list, max_length=TAGS_MAX)
    remove: list[str] = Field(default_factory=list, max_length=TAGS_MAX)


class RequesterOut(BaseModel):
    email: str
    name: str | None


class ClockOut(BaseModel):
    """One SLA metric: when it is due, whether it is paused, when it was fulfilled or
    breached (a breach latches)."""

    target_ms: int
    started_at: datetime | None
    due_at: datetime | None
    paused: bool
    remaining_ms: int | None = Field(description="Budget kept while paused.")
    fulfilled_at: datetime | None
    breached_at: datetime | None


class SlaOut(BaseModel):
    first_response: ClockOut
    next_reply: ClockOut
    resolution: ClockOut


class TicketOut(BaseModel):
    id: UUID
    version: int
    state: TicketState
    subject: str
    requester: RequesterOut
    priority: Priority
    source: Source
    tags: list[str]
    assignee: UUID | None
    follow_up_of: UUID | None
    follow_up_ids: list[UUID]
    created_at: datetime
    updated_at: datetime
    solved_at: datetime | None
    closed_at: datetime | None
    reopen_count: int
    awaiting_reply: bool
    sla: SlaOut


class TicketPage(BaseModel):
    data: list[TicketOut]
    next_cursor: str | None


class AuthorOut(BaseModel):
    kind: str = Field(description="`agent`, `customer` or `system`.")
    id: str


class MessageOut(BaseModel):
    id: UUID
    ticket_id: UUID
    visibility: Visibility
    author: AuthorOut
    body: str
    created_at: datetime


class MessagePage(BaseModel):
    data: list[MessageOut]
    next_cursor: str | None


class MessagePosted(BaseModel):
    """The message and the ticket it landed on: a customer's message on a closed ticket
    lands on a new follow-up ticket (``ticket.follow_up_of`` names the closed one)."""

    message: MessageOut
    ticket: TicketOut


def _clock(clock: Clock) -> dict[str, Any]:
    return {
        "target_ms": clock.target_ms,
        "started_at": clock.started_at,
        "due_at": clock.due_at,
        "paused": clock.paused,
        "remaining_ms": clock.remaining_ms,
        "fulfilled_at": clock.fulfilled_at,
        "breached_at": clock.breached_at,
    }


def ticket_view(t: Ticket) -> dict[str, Any]:
    """The JSON body of a ticket (validated against ``TicketOut``)."""
    body = {
        "id": t.id, "version": t.version, "state": t.state, "subject": t.subject,
        "requester": {"email": t.requester.email, "name": t.requester.name},
        "priority": t.priority, "source": t.source, "tags": list(t.tags),
        "assignee": t.assignee, "follow_up_of": t.follow_up_of,
        "follow_up_ids": list(t.follow_up_ids), "created_at": t.created_at,
        "updated_at": t.updated_at, "solved_at": t.solved_at, "closed_at": t.closed_at,
        "reopen_count": t.reopen_count, "awaiting_reply": t.awaiting_reply,
        "sla": {m.value: _clock(c) for m, c in t.clocks.items()},
    }
    return TicketOut.model_validate(body).model_dump(mode="json")


def message_view(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a message from its read-model row."""
    body = {
        "id": row["id"], "ticket_id": row["ticket_id"], "visibility": row["visibility"],
        "author": {"kind": row["author_kind"], "id": row["author_id"]},
        "body": row["body"], "created_at": row["created_at"],
    }
    return MessageOut.model_validate(body).model_dump(mode="json")


def etag(version: int) -> str:
    return f'"{version}"'
