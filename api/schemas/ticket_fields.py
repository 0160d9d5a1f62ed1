"""Bodies of ``/v1/ticket-fields``. Requests forbid unknown attributes (422); the
domain checks what the models leave open (``domain.field_definitions``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody, checked_by_domain
from domain.fields import (
    FIELD_KEY_PATTERN,
    OPTION_VALUE_PATTERN,
    OPTIONS_MAX,
    TITLE_MAX,
    FieldType,
    RequiredOn,
)
from domain.validation import NOT_BLANK

_IN = ConfigDict(extra="forbid")


class OptionIn(BaseModel):
    model_config = _IN

    value: str = Field(max_length=64, description="Stable: what tickets hold and events "
                       "record.", json_schema_extra=checked_by_domain(OPTION_VALUE_PATTERN))
    title: str = Field(max_length=TITLE_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))


class TicketFieldIn(BaseModel):
    model_config = _IN

    key: str = Field(max_length=40, description="Stable and never reused.",
                     json_schema_extra=checked_by_domain(FIELD_KEY_PATTERN))
    title: str = Field(max_length=TITLE_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    type: FieldType
    options: list[OptionIn] = Field(default_factory=list, max_length=OPTIONS_MAX,
                                    description="For dropdown and multiselect only.")
    required_on: RequiredOn | None = Field(
        default=None, description="`open`: a value is needed to open a ticket (from whoever "
                                  "may set it); `solve`: to solve one.")
    active: bool = Field(default=True, strict=True)
    intake: bool = Field(default=False, strict=True,
                         description="Open to customers: intake keys may set it too, and "
                                     "the portal shows it on a new ticket and its value "
                                     "on the customer's ticket (else agents only).")
    customer_read_only: bool = Field(
        default=False, strict=True,
        description="With `intake`: customers see the value on their ticket but may not "
                    "set it (a customer's value is a 422 naming `fields.<key>`); agents "
                    "set it.")
    personal: bool = Field(default=False, strict=True,
                           description="A text field holding personal data.")


class TicketFieldPatch(PatchBody):
    """Only what is given changes; ``required_on`` may be null, nothing else may.
    ``options`` is the list to offer: an option left out stays, inactive, so the values
    tickets hold stay readable."""

    nullable = frozenset({"required_on"})
    none_given = "give at least one attribute to change"

    title: str | None = Field(default=None, max_length=TITLE_MAX,
                              json_schema_extra=checked_by_domain(NOT_BLANK))
    options: list[OptionIn] | None = Field(default=None, max_length=OPTIONS_MAX)
    required_on: RequiredOn | None = None
    active: bool | None = Field(default=None, strict=True)
    intake: bool | None = Field(default=None, strict=True)
    customer_read_only: bool | None = Field(default=None, strict=True)
    personal: bool | None = Field(default=None, strict=True)


class OptionOut(BaseModel):
    value: str
    title: str
    active: bool = Field(description="False once taken out of use: tickets keep the value.")


class TicketFieldOut(BaseModel):
    key: str
    title: str
    type: FieldType
    options: list[OptionOut]
    required_on: RequiredOn | None
    active: bool
    intake: bool
    customer_read_only: bool
    personal: bool
    version: int
    created_at: datetime
    updated_at: datetime


class TicketFieldList(BaseModel):
    data: list[TicketFieldOut]
