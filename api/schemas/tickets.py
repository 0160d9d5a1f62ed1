"""Request and response bodies of the ticket and message routes. Requests forbid
unknown fields (422). The response models document the answers; the answers
themselves are the documents of ``projections.views``, which tests validate against
these models (not every request)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from api.schemas import checked_by_domain, checked_items
from api.schemas.attachments import AttachmentOut, attachments_field
from domain.fields import NUMBER_MAX, OPTIONS_MAX, TEXT_MAX
from domain.ticket import Ticket
from domain.ticket.decide import CCS_MAX
from domain.validation import (
    BODY_MAX,
    EMAIL_PATTERN,
    NOT_BLANK,
    REASON_MAX,
    SUBJECT_MAX,
    TAG_INPUT_PATTERN,
    TAGS_MAX,
)
from domain.values import LinkKind, Priority, Rating, Source, TicketState, Visibility
from projections.views import message_document, ticket_json

_IN = ConfigDict(extra="forbid")
FOLLOWERS_MAX = 100
"""The most agents one request adds or removes as followers."""
FIELDS_MAX = 100
"""The most fields one request sets (a tenant has at most as many)."""
FieldKeyIn = Annotated[str, Field(max_length=40)]
FieldValueIn = (StrictBool | Annotated[StrictInt, Field(ge=-NUMBER_MAX, le=NUMBER_MAX)]
                | Annotated[StrictStr, Field(max_length=TEXT_MAX)]
                | Annotated[list[Annotated[StrictStr, Field(max_length=64)]],
                            Field(max_length=OPTIONS_MAX)]
                | None)
"""A value as a request gives it; the domain checks it against the field's type."""


def _add_or_remove(body: Any) -> Any:
    """A change to a list of people on a ticket (followers, copies) names someone: a
    body with neither ``add`` nor ``remove`` is a 422, not a change that does nothing."""
    if not body.add and not body.remove:
        raise ValueError("give add, remove or both")
    return body


class RequesterIn(BaseModel):
    """Either an ``email`` (with an optional ``name``) or a ``contact_id``."""

    model_config = _IN

    email: str | None = Field(default=None, max_length=254, examples=["ann@example.com"],
                              json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str | None = Field(default=None, max_length=200)
    contact_id: UUID | None = Field(default=None, description="An existing contact.")

    @model_validator(mode="after")
    def _one_way(self) -> RequesterIn:
        if (self.email is None) == (self.contact_id is None):
            raise ValueError("give either email or contact_id")
        if self.contact_id is not None and self.name is not None:
            raise ValueError("name goes with email; a contact has its own")
        return self


class OpenTicketIn(BaseModel):
    model_config = _IN

    subject: str = Field(max_length=SUBJECT_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    body: str = Field(max_length=BODY_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    requester: RequesterIn
    priority: Priority = Priority.NORMAL
    source: Source = Source.API
    tags: list[str] = Field(default_factory=list, max_length=TAGS_MAX,
                            json_schema_extra=checked_items(TAG_INPUT_PATTERN))
    group_id: UUID | None = Field(default=None, description=(
        "A group of the tenant to route the ticket to; agents and admins only (an intake "
        "key's ticket is routed by staff)."))
    fields: dict[FieldKeyIn, FieldValueIn] = Field(
        default_factory=dict, max_length=FIELDS_MAX,
        description="Ticket field values by key, checked against the tenant's field "
                    "definitions (`/v1/ticket-fields`): type, options, who may set them, "
                    "required fields.")
    attachments: list[UUID] = attachments_field()


class FieldsIn(BaseModel):
    model_config = _IN

    fields: dict[FieldKeyIn, FieldValueIn] = Field(
        min_length=1, max_length=FIELDS_MAX,
        description="Values by key; `null` (or `[]` for a multiselect) clears one.")


class MessageIn(BaseModel):
    model_config = _IN

    body: str = Field(max_length=BODY_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    visibility: Visibility = Visibility.PUBLIC
    attachments: list[UUID] = attachments_field()


class AssigneeIn(BaseModel):
    """Give at least one of the two; a field left out stays as it is. With both a group
    and an agent on the ticket, the agent must be a member of the group (else 409
    ``not_group_member``)."""

    model_config = _IN

    agent_id: UUID | None = Field(default=None,
                                  description="An active agent of the tenant, or null.")
    group_id: UUID | None = Field(default=None,
                                  description="A group of the tenant, or null for none.")

    @model_validator(mode="after")
    def _something(self) -> AssigneeIn:
        if not self.model_fields_set:
            raise ValueError("give agent_id, group_id or both")
        return self


class PriorityIn(BaseModel):
    model_config = _IN

    priority: Priority


class StateIn(BaseModel):
    model_config = _IN

    state: TicketState
    reason: str | None = Field(default=None, max_length=REASON_MAX)


class TagsIn(BaseModel):
    model_config = _IN

    add: list[str] = Field(default_factory=list, max_length=TAGS_MAX,
                           json_schema_extra=checked_items(TAG_INPUT_PATTERN))
    remove: list[str] = Field(default_factory=list, max_length=TAGS_MAX,
                              json_schema_extra=checked_items(TAG_INPUT_PATTERN))


class TicketMergeIn(BaseModel):
    model_config = _IN

    into: UUID = Field(description="The ticket to merge this one into (of the same tenant).")


class TicketSplitIn(BaseModel):
    model_config = _IN

    message_ids: list[UUID] = Field(
        max_length=500,
        description="The messages to move to the new ticket (of this ticket's own thread, "
                    "each once; at least one, and not every public one).")
    subject: str | None = Field(
        None, description="The new ticket's subject; the source's when absent.")


class LinkIn(BaseModel):
    """One link: this ticket is ``kind`` of ``ticket_id`` (``duplicate_of``: a duplicate
    of it; ``duplicates``: its original; ``problem``: an incident of that problem;
    ``incident``: the problem of that incident; ``related``). Both tickets hold it."""

    model_config = _IN

    kind: LinkKind
    ticket_id: UUID = Field(description="The other ticket (of the same tenant).")
    remove: bool = Field(False, description="true: take the link off both tickets.")


class FollowersIn(BaseModel):
    """Agents to start or stop following the ticket (each an active agent's id)."""

    model_config = _IN

    add: list[UUID] = Field(default_factory=list, max_length=FOLLOWERS_MAX)
    remove: list[UUID] = Field(default_factory=list, max_length=FOLLOWERS_MAX)

    _something = model_validator(mode="after")(_add_or_remove)


class CcsIn(BaseModel):
    """Customers to copy on the ticket (each an e-mail, with an optional name, or a
    contact) or to take off it (by e-mail)."""

    model_config = _IN

    add: list[RequesterIn] = Field(default_factory=list, max_length=CCS_MAX)
    remove: list[Annotated[str, Field(max_length=254)]] = Field(default_factory=list,
                                                                max_length=CCS_MAX)

    _something = model_validator(mode="after")(_add_or_remove)


class RequesterOut(BaseModel):
    contact_id: UUID | None = Field(description="The contact the ticket belongs to (null "
                                    "only on a ticket from before contacts, until "
                                    "`helpdesk migrate` links it).")
    email: str
    name: str | None


def _absent(value: object) -> bool:
    """A field the document leaves out, rather than sending null (as the rendered
    documents of ``projections.views`` and the routes do)."""
    return value is None


class ClockPolicyOut(BaseModel):
    policy_id: UUID
    policy_version: int
    calendar_id: UUID | None = Field(description="null: calendar time")
    calendar_version: int | None
    policy_name: str | None = Field(
        default=None, exclude_if=_absent,
        description="The policy's name at that version, recorded with the clock: it "
                    "stays after the policy is renamed (until the clock is retargeted) "
                    "or deleted. Absent on clocks recorded before names were.")


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
    warned_at: datetime | None = Field(
        default=None, description="When the clock passed the tenant's warning share of its "
                                  "target (settings sla_warning_percent); latches.")
    policy: ClockPolicyOut | None = Field(
        default=None, exclude_if=_absent,
        description="The SLA policy (and version) the clock started or was last "
                    "retargeted under, with its calendar then; absent while the tenant "
                    "has no SLA policies.")


class SlaOut(BaseModel):
    first_response: ClockOut
    next_reply: ClockOut
    resolution: ClockOut
    periodic_update: ClockOut | None = Field(
        default=None, exclude_if=_absent,
        description="From each public agent reply to the next (docs/sla.md); absent on "
                    "tickets opened before SLA policies.")
    requester_wait: ClockOut | None = Field(
        default=None, exclude_if=_absent,
        description="While the ticket is open or on hold, until solved; absent on "
                    "tickets opened before SLA policies.")
    agent_work: ClockOut | None = Field(
        default=None, exclude_if=_absent,
        description="While the ticket is open, until solved; absent unless the ticket's "
                    "policy measures agent work.")


FieldValueOut = bool | int | str | list[str]
"""checkbox: bool; number: int; text, date (YYYY-MM-DD), dropdown: str; multiselect: list."""


class TicketAttachmentOut(AttachmentOut):
    message_id: UUID = Field(description="the message the file is on")


class LinksOut(BaseModel):
    """Each link is held by both tickets (docs/teamwork.md)."""

    related: list[UUID]
    duplicate_of: UUID | None = Field(description="The original this ticket duplicates.")
    duplicates: list[UUID] = Field(description="The tickets that duplicate this one.")
    problem: UUID | None = Field(description="The problem this ticket is an incident of.")
    incidents: list[UUID] = Field(description="The incidents of this problem.")


class CcOut(BaseModel):
    contact_id: UUID | None
    email: str
    name: str | None


class SatisfactionOut(BaseModel):
    """The requester's latest satisfaction rating (docs/teamwork.md)."""

    rating: Rating
    comment: str | None
    via: str = Field(description="How they rated: `link`, `portal` or `widget`.")
    rated_at: datetime


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
    group_id: UUID | None
    follow_up_of: UUID | None
    follow_up_ids: list[UUID]
    created_at: datetime
    updated_at: datetime
    solved_at: datetime | None
    closed_at: datetime | None
    reopen_count: int
    awaiting_reply: bool
    sla: SlaOut
    fields: dict[str, FieldValueOut] = Field(
        description="Ticket field values by key (`/v1/ticket-fields`); a field with no "
                    "value is absent. A value whose option was taken out of use stays.")
    attachments: list[TicketAttachmentOut] = Field(
        description="The files on the ticket's public messages, oldest message first: "
                    "each as its message lists it, with the message's id. Internal notes' "
                    "files are listed on the notes (`GET /v1/tickets/{id}/messages`).")
    merged_into: UUID | None = Field(
        None, exclude_if=_absent,
        description="The ticket this one was merged into (it is closed, and every command "
                    "on it answers 409 `ticket_merged` naming that ticket); absent unless "
                    "merged.")
    merged_from: list[UUID] | None = Field(
        None, exclude_if=_absent,
        description="The tickets merged into this one (and into those before), whose "
                    "messages its thread lists; absent when none.")
    split_from: UUID | None = Field(
        None, exclude_if=_absent,
        description="The ticket this one was split off (`POST /v1/tickets/{id}/split`): "
                    "its messages came from there; absent unless split off one.")
    split_into: list[UUID] | None = Field(
        None, exclude_if=_absent,
        description="The tickets split off this one, in order, each holding the messages "
                    "moved to it; absent when none.")
    links: LinksOut | None = Field(None, exclude_if=_absent,
                                   description="Links to other tickets; absent when none.")
    followers: list[UUID] | None = Field(
        None, exclude_if=_absent,
        description="The agents following the ticket, in the order they started; absent "
                    "when none.")
    ccs: list[CcOut] | None = Field(
        None, exclude_if=_absent,
        description="The customers copied on the ticket; absent when none.")
    satisfaction: SatisfactionOut | None = Field(
        None, exclude_if=_absent,
        description="The requester's latest rating of the solved ticket; a later one "
                    "replaces it until the ticket closes. Absent until they rate.")


class TicketsMergedOut(BaseModel):
    """Both tickets after a merge: the merged one (closed, ``merged_into`` set) and the
    one it went into (``merged_from`` naming it)."""

    ticket: TicketOut
    into: TicketOut


class TicketSplitOut(BaseModel):
    """Both tickets after a split: the source (``split_into`` naming the new one) and
    the new ticket (``split_from`` naming the source), which holds the moved messages."""

    ticket: TicketOut
    new_ticket: TicketOut


class TicketPage(BaseModel):
    data: list[TicketOut]
    next_cursor: str | None
    as_of_seq: int | None = Field(None, exclude_if=_absent,
                                  description="With `as_of_seq` or `as_of`: the seq of the "
                                              "tenant's events the list describes. Absent "
                                              "otherwise.")


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
    attachments: list[AttachmentOut] = []


class MessagePage(BaseModel):
    data: list[MessageOut]
    next_cursor: str | None


class MessagePosted(BaseModel):
    """The message and the ticket it landed on: a customer's message on a closed ticket
    lands on a new follow-up ticket (``ticket.follow_up_of`` names the closed one)."""

    message: MessageOut
    ticket: TicketOut


def ticket_view(t: Ticket, document: bytes | None = None) -> orjson.Fragment:
    """The JSON body of a ticket (``TicketOut``), ready to embed in an answer:
    ``document`` when the command that wrote the ticket rendered it already
    (``CommandResult.documents``), else rendered now."""
    return orjson.Fragment(ticket_json(t) if document is None else document)


def message_view(row: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON body of a message (``MessageOut``) from its read-model row."""
    return message_document(row)


def etag(version: int) -> str:
    return f'"{version}"'
