"""The contact aggregate: a customer of the tenant, with a stream of its own.

Commands, ``decide`` and ``evolve`` for one contact. Rules that need the other
contacts (an e-mail or external id unique per tenant, an organization that exists,
the organization an e-mail's domain joins) are the handler's: it holds the read
models that can tell, and passes what it found in the command.
"""

from __future__ import annotations

from domain.aggregate import AggregateState, BaseCommand
from domain.errors import AlreadyExists, CorruptStream, DomainError, NotFound, ValidationFailed
from domain.events import (
    ContactCreated,
    ContactErased,
    ContactFields,
    ContactMerged,
    ContactUpdated,
    Event,
)
from domain.evolution import first_version, fold_with, one_version_on, stream_start
from domain.ids import ContactId
from domain.validation import (
    NAME_MAX,
    check_email,
    check_tag_count,
    normalize_tags,
)
from domain.values import UtcDatetime

PHONE_MAX = 50
EXTERNAL_ID_MAX = 200


class Contact(ContactFields, AggregateState):
    """A contact as of ``version`` events: its id and version, the fields a caller
    sets, then whom it was merged into."""

    id: ContactId
    merged_into: ContactId | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateContact(BaseCommand):
    contact_id: ContactId
    fields: ContactFields


class UpdateContact(BaseCommand):
    """Set the contact's fields to ``fields`` (the handler merges a patch onto the
    current values first)."""

    fields: ContactFields


class MergeContact(BaseCommand):
    """Merge this contact into ``into`` (the survivor)."""

    into: ContactId


ContactCommand = CreateContact | UpdateContact | MergeContact


class ContactMergedAway(DomainError):
    """The contact was merged into another; commands go to the survivor."""

    code = "contact_merged"

    def __init__(self, into: ContactId) -> None:
        super().__init__(f"the contact was merged into {into}")
        self.into = into


def _optional(value: str | None, field: str, maximum: int) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if len(value) > maximum:
        raise ValidationFailed(f"{field} must be at most {maximum} characters", field=field)
    return value


def check_fields(fields: ContactFields) -> ContactFields:
    """The fields with their rules applied: a well-formed e-mail, bounded text (blank
    text is no value), tags as slugs."""
    return ContactFields(
        email=check_email(fields.email.strip(), "email"),
        name=_optional(fields.name, "name", NAME_MAX),
        phone=_optional(fields.phone, "phone", PHONE_MAX),
        external_id=_optional(fields.external_id, "external_id", EXTERNAL_ID_MAX),
        organization_id=fields.organization_id,
        tags=check_tag_count(normalize_tags(fields.tags)),
    )


def email_domain(email: str) -> str:
    """The part of an e-mail after the @, lower-cased: what an organization's domain
    is compared with."""
    return email.rpartition("@")[2].lower()


def decide_contact(command: ContactCommand, state: Contact | None) -> list[Event]:
    """The events a command produces on a contact (None: the stream is empty)."""
    if isinstance(command, CreateContact):
        if state is not None:
            raise AlreadyExists("the contact already exists")
        f = check_fields(command.fields)
        return [ContactCreated(contact_id=command.contact_id, at=command.at,
                               **f.model_dump())]
    if state is None:
        raise NotFound("the contact does not exist")
    if state.merged_into is not None:
        raise ContactMergedAway(state.merged_into)
    match command:
        case UpdateContact():
            f = check_fields(command.fields)
            if f == fields_of(state):
                return []
            return [ContactUpdated(at=command.at, **f.model_dump())]
        case MergeContact():
            if command.into == state.id:
                raise ValidationFailed("a contact cannot be merged into itself", field="into")
            return [ContactMerged(into=command.into, at=command.at)]
    raise TypeError(f"unknown command {type(command).__name__}")  # pragma: no cover


def fields_of(state: Contact) -> ContactFields:
    """The settable fields of a contact."""
    return ContactFields.model_validate(state.model_dump(include=set(ContactFields.model_fields)))


def erased_email(contact_id: ContactId) -> str:
    """What an erased contact's e-mail reads as: unique, as e-mails are, and no one's."""
    return f"erased-{contact_id}@erased.invalid"


def evolve_contact(state: Contact | None, event: Event) -> Contact:
    """Apply one event to the contact (None before the stream's first event)."""
    if state is None:
        created = stream_start(event, ContactCreated, "a contact stream")
        return first_version(Contact, created, id=created.contact_id)
    match event:
        case ContactUpdated():
            return one_version_on(state, event, also=event.model_dump(exclude={"at"}))
        case ContactMerged():
            return one_version_on(state, event, also={"merged_into": event.into})
        case ContactErased():
            return one_version_on(state, event, also={
                "email": erased_email(state.id), "name": None, "phone": None,
                "external_id": None})
    raise CorruptStream(f"{event.TYPE} does not belong to a contact stream")


fold_contact = fold_with(evolve_contact)


__all__ = [
    "Contact",
    "ContactCommand",
    "ContactFields",
    "ContactMergedAway",
    "CreateContact",
    "MergeContact",
    "UpdateContact",
    "check_fields",
    "decide_contact",
    "email_domain",
    "erased_email",
    "evolve_contact",
    "fields_of",
    "fold_contact",
]
