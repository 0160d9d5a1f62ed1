"""Request and response bodies of the contact and organization routes. Requests forbid
unknown fields (422); the domain checks values (``domain.contact``,
``domain.organization``) with its own messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody, checked_by_domain, checked_items
from api.schemas.events import EventOut
from domain.contact import EXTERNAL_ID_MAX, PHONE_MAX, Contact
from domain.organization import DOMAIN_INPUT_PATTERN, DOMAIN_PATTERN, DOMAINS_MAX, Organization
from domain.validation import EMAIL_PATTERN, NAME_MAX, NOT_BLANK, TAG_INPUT_PATTERN, TAGS_MAX

_IN = ConfigDict(extra="forbid")


_NONE_GIVEN = "give at least one field to change"


class ContactIn(BaseModel):
    model_config = _IN

    email: str = Field(max_length=254, examples=["ann@example.com"],
                       json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str | None = Field(default=None, max_length=NAME_MAX)
    phone: str | None = Field(default=None, max_length=PHONE_MAX)
    external_id: str | None = Field(default=None, max_length=EXTERNAL_ID_MAX,
                                    description="Your system's id; unique in the tenant.")
    organization_id: UUID | None = Field(
        default=None, description="Left out: the organization holding the e-mail's domain.")
    tags: list[str] = Field(default_factory=list, max_length=TAGS_MAX,
                            json_schema_extra=checked_items(TAG_INPUT_PATTERN))


class ContactPatch(PatchBody):
    """Only the fields given change; null clears ``name``, ``phone``, ``external_id``
    and ``organization_id``."""

    nullable = frozenset({"name", "phone", "external_id", "organization_id"})
    none_given = _NONE_GIVEN

    email: str | None = Field(default=None, max_length=254,
                              json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str | None = Field(default=None, max_length=NAME_MAX)
    phone: str | None = Field(default=None, max_length=PHONE_MAX)
    external_id: str | None = Field(default=None, max_length=EXTERNAL_ID_MAX)
    organization_id: UUID | None = None
    tags: list[str] | None = Field(default=None, max_length=TAGS_MAX,
                                   json_schema_extra=checked_items(TAG_INPUT_PATTERN))


class MergeIn(BaseModel):
    model_config = _IN

    into: UUID = Field(description="The contact that survives and takes the tickets.")


class ContactOut(BaseModel):
    id: UUID
    version: int
    email: str
    name: str | None
    phone: str | None
    external_id: str | None
    organization_id: UUID | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime


class ContactPage(BaseModel):
    data: list[ContactOut]
    next_cursor: str | None


class MergedOut(BaseModel):
    """The survivor of a merge, and how many tickets moved to it."""

    contact: ContactOut
    tickets_moved: int


class EraseIn(BaseModel):
    model_config = _IN

    reason: str = Field(min_length=1, max_length=500,
                        description="Why (kept in ContactErased for the audit; write no "
                        "personal data in it).")


class ErasedOut(BaseModel):
    """What an erasure reached: events with fields now unreadable, those fields, the
    contact's tickets redacted, and events written in the clear before personal data
    was sealed (which no key erases: docs/erasure.md)."""

    contact_id: UUID
    events: int
    fields: int
    tickets: int
    unsealed_events: int
    files: int = Field(description="files on the contact's tickets, now deleted")


class ContactExportOut(BaseModel):
    """Everything held about a contact: the contact, its tickets (as ``GET
    /v1/tickets/{id}`` sends them), their messages, and the events of its stream and
    its tickets' streams, personal fields opened (or ``{"erased": true}``)."""

    contact: ContactOut
    tickets: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    attachments: list[dict[str, Any]] = Field(description=(
        "the files on its tickets: `GET /v1/attachments/{id}` gives each back"))
    events: list[EventOut]


class OrganizationIn(BaseModel):
    model_config = _IN

    name: str = Field(max_length=NAME_MAX, json_schema_extra=checked_by_domain(NOT_BLANK))
    domains: list[str] = Field(default_factory=list, max_length=DOMAINS_MAX,
                               json_schema_extra=checked_items(DOMAIN_INPUT_PATTERN),
                               description=f"E-mail domains, each matching `{DOMAIN_PATTERN}` "
                                           "once lower-cased.")
    move_contacts: bool = Field(default=False, strict=True, description=(
        "Also move existing contacts of these domains into it (new contacts always join)."))


class OrganizationPatch(PatchBody):
    """Only the fields given change. Existing contacts move with a change of domains
    only when ``move_contacts`` is true."""

    none_given = _NONE_GIVEN

    name: str | None = Field(default=None, max_length=NAME_MAX,
                             json_schema_extra=checked_by_domain(NOT_BLANK))
    domains: list[str] | None = Field(default=None, max_length=DOMAINS_MAX,
                                      json_schema_extra=checked_items(DOMAIN_INPUT_PATTERN))
    move_contacts: bool = Field(default=False, strict=True, description=(
        "Contacts of a domain it gains join it; its contacts of a domain it gives up "
        "leave it."))


class OrganizationOut(BaseModel):
    id: UUID
    version: int
    name: str
    domains: list[str]
    created_at: datetime
    updated_at: datetime


class OrganizationChanged(OrganizationOut):
    contacts_moved: int = Field(description="Contacts that joined or left by this change.")


class OrganizationPage(BaseModel):
    data: list[OrganizationOut]
    next_cursor: str | None


def contact_document(c: Contact) -> dict[str, Any]:
    """A contact as the API shows it (``ContactOut``)."""
    return {"id": c.id, "version": c.version, "email": c.email, "name": c.name,
            "phone": c.phone, "external_id": c.external_id,
            "organization_id": c.organization_id, "tags": list(c.tags),
            "created_at": c.created_at, "updated_at": c.updated_at}


def organization_document(o: Organization) -> dict[str, Any]:
    """An organization as the API shows it (``OrganizationOut``)."""
    return {"id": o.id, "version": o.version, "name": o.name, "domains": list(o.domains),
            "created_at": o.created_at, "updated_at": o.updated_at}
