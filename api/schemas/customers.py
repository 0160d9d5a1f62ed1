"""Bodies of the routes customers use: the portal (a contact signed in) and the widget
(an anonymous visitor's session). Both show a customer the same reduced ticket and its
public messages, and take the same ticket and reply bodies, so one set of models
serves both; only how the customer is known differs (api/routes/portal.py,
api/routes/widget.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas.attachments import AttachmentOut, attachments_field
from api.schemas.tickets import (
    FIELDS_MAX,
    FieldKeyIn,
    FieldValueIn,
    FieldValueOut,
    SatisfactionOut,
)
from domain.validation import BODY_MAX, SUBJECT_MAX
from domain.values import Rating


class CustomerCcOut(BaseModel):
    email: str
    name: str | None


class CustomerTicketOut(BaseModel):
    id: UUID
    subject: str
    state: str
    created_at: datetime
    updated_at: datetime
    ccs: list[CustomerCcOut] | None = Field(
        None, exclude_if=lambda v: v is None,
        description="`GET /v1/portal/tickets/{id}` only: the customers copied on the "
                    "ticket; absent when none.")
    satisfaction: SatisfactionOut | None = Field(
        None, exclude_if=lambda v: v is None,
        description="The customer's latest rating of the ticket; absent until they rate.")


class PortalTicketOut(CustomerTicketOut):
    copied: bool | None = Field(
        None, exclude_if=lambda v: v is None,
        description="`true` when the customer reading is copied on the ticket rather "
                    "than its requester: they read it, but only the requester replies "
                    "to it and rates it (403 `copied_only`); absent for the requester.")
    fields: dict[str, FieldValueOut] = Field(
        default_factory=dict,
        description="The values of the ticket's fields open to customers (`intake`); "
                    "staff-only fields are never shown")


class CustomerTicketPage(BaseModel):
    data: list[CustomerTicketOut]
    next_cursor: str | None


class CustomerMessageOut(BaseModel):
    id: UUID
    ticket_id: UUID
    author_kind: str = Field(description="`customer` (the ticket's requester) or `agent` "
                                         "(staff)")
    body: str
    created_at: datetime
    attachments: list[AttachmentOut] = []


class CustomerMessagePage(BaseModel):
    data: list[CustomerMessageOut]
    next_cursor: str | None


class CustomerTicketIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, max_length=SUBJECT_MAX)
    body: str = Field(min_length=1, max_length=BODY_MAX)
    attachments: list[UUID] = attachments_field()


class PortalTicketIn(CustomerTicketIn):
    fields: dict[FieldKeyIn, FieldValueIn] = Field(
        default_factory=dict, max_length=FIELDS_MAX,
        description="Values of the tenant's fields open to customers "
                    "(`GET /v1/portal/ticket-fields`), checked as staff-set values are: a "
                    "bad value, a staff-only field or a required one missing is a 422 "
                    "naming `fields.<key>`.")


class PortalFieldOptionOut(BaseModel):
    value: str
    title: str


class PortalFieldOut(BaseModel):
    key: str
    title: str
    type: str = Field(description="`text`, `number`, `checkbox`, `date`, `dropdown` or "
                                  "`multiselect`")
    options: list[PortalFieldOptionOut] = Field(description="the active choices of a "
                                                            "dropdown or multiselect")
    required: bool = Field(description="a new ticket must have a value")
    read_only: bool = Field(description="shown on the customer's ticket, set by agents "
                                        "only: not asked for in a form")


class PortalFieldList(BaseModel):
    data: list[PortalFieldOut]


class CustomerReplyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: str = Field(min_length=1, max_length=BODY_MAX)
    attachments: list[UUID] = attachments_field()


class RatingIn(BaseModel):
    """A satisfaction rating of a solved ticket (docs/teamwork.md)."""

    model_config = ConfigDict(extra="forbid")

    rating: Rating
    comment: str | None = Field(None, max_length=2000)


class CustomerReplyOut(BaseModel):
    message: CustomerMessageOut
    ticket: CustomerTicketOut


def customer_message(row: Mapping[str, Any]) -> dict[str, Any]:
    """A public message row as ``CustomerMessageOut`` shows it."""
    out = {k: row[k] for k in ("id", "ticket_id", "author_kind", "body", "created_at")}
    out["attachments"] = row.get("attachments") or []
    return out


__all__ = [
    "CustomerMessageOut",
    "CustomerMessagePage",
    "CustomerReplyIn",
    "CustomerReplyOut",
    "CustomerTicketIn",
    "CustomerTicketOut",
    "CustomerTicketPage",
    "PortalFieldList",
    "PortalFieldOut",
    "PortalTicketIn",
    "PortalTicketOut",
    "RatingIn",
    "customer_message",
]
