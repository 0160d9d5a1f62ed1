"""Erasure of a contact's personal data (crypto-shredding), and its export.

Erasing destroys the contact's data key, so every sealed field of every event that
names the contact reads as ``{"erased": true}`` from then on, while the hash chain,
which covers the ciphertext, still verifies. In the same transaction it appends
``ContactErased`` (who, when, why) and redacts the inline read models, and ends the
contact's widget sessions, blanking the e-mail they hold (``handlers.widget``).

Concurrency: a command on one of the contact's tickets locks the ticket row and then
holds the contact's data key row FOR SHARE until it commits (eventstore/keys.py).
The erasure takes the requester lock of the contact's e-mail exclusively (openings in
flight finish first), locks the contact's tickets in id order, and then the key row:
a command that holds the key commits first and is erased with the rest; one that
comes after finds the key gone and is refused (``SubjectErased``, 410).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.contact import Contact, erased_email, evolve_contact
from domain.events import ContactErased
from domain.personal import field_at, personal_paths
from domain.values import Actor
from eventstore.sealing import is_sealed, sealed_paths
from eventstore.store import Session
from eventstore.types import RecordedEvent
from handlers import widget
from handlers.contacts import stage
from handlers.errors import Conflict, Gone, Invalid, Missing
from projections import people
from projections.redaction import contact_tickets, lock_contact_tickets, redact_tickets
from projections.search import drop_contact, index_tickets

REASON_MAX = 500


@dataclass(frozen=True, slots=True)
class EraseContact:
    contact_id: UUID
    reason: str
    by: Actor
    at: datetime


@dataclass(frozen=True, slots=True)
class Erased:
    """What an erasure reached: events with fields now unreadable, and those fields;
    and events of the contact's streams whose personal fields were written in the
    clear before sealing existed, which no key erases (docs/erasure.md)."""

    contact_id: UUID
    events: int
    fields: int
    tickets: int
    unsealed_events: int


async def erase_contact(uow: Session, command: EraseContact) -> Erased:
    """Erase a contact's personal data: see the module's docstring."""
    reason = command.reason.strip()
    if not reason or len(reason) > REASON_MAX:
        raise Invalid("invalid_reason", f"reason must be 1 to {REASON_MAX} characters",
                      field="reason")
    if uow.keyring is None:
        raise Conflict("erasure_unavailable", "personal data is not sealed on this store")
    found = await people.load_contact(uow.conn, uow.tenant_id, command.contact_id)
    if found is None:
        raise Missing("not_found", "the contact does not exist")
    if found.email == erased_email(found.id):
        raise Gone("contact_erased", "the contact was erased already")
    await people.lock_requester(uow.conn, uow.tenant_id, found.email, merging=True)
    before = (await people.lock_contacts(uow.conn, uow.tenant_id, [found.id]))[found.id]
    await lock_contact_tickets(uow.conn, uow.tenant_id, found.id)
    # Waits for the commands that hold the key to commit; they are erased below.
    await uow.keyring.erase(uow.conn, uow.tenant_id, found.id)
    tickets = await redact_tickets(uow.conn, uow.tenant_id, found.id)
    await widget.forget_contact(uow, found.email, tickets, command.at)
    events, fields, unsealed = _census(await uow.read_streams_stored([found.id, *tickets]),
                                       found.id)
    event = ContactErased(reason=reason, by=command.by, at=command.at)
    after = evolve_contact(before, event)
    await people.set_contact(uow.conn, uow.tenant_id, before, after)
    # The search index held the same words: recompute the tickets' rows from their
    # redacted rows, and find the contact no more.
    await index_tickets(uow.conn, uow.tenant_id, tickets)
    await drop_contact(uow.conn, uow.tenant_id, found.id)
    await stage(uow, found.id, before.version, [event])
    return Erased(contact_id=found.id, events=events, fields=fields, tickets=len(tickets),
                  unsealed_events=unsealed)


@dataclass(frozen=True, slots=True)
class ContactExport:
    """Everything held about a contact: the contact, its tickets as stored documents,
    their messages, and the events of its stream and its tickets' streams (personal
    fields opened, or marked erased)."""

    contact: Contact
    tickets: list[bytes]
    messages: list[dict[str, Any]]
    events: list[RecordedEvent]


async def export_contact(uow: Session, contact_id: UUID) -> ContactExport:
    """Everything held about a contact (GDPR Article 15)."""
    found = await people.load_contact(uow.conn, uow.tenant_id, contact_id)
    if found is None:
        raise Missing("not_found", "the contact does not exist")
    ids, views, messages = await contact_tickets(uow.conn, uow.tenant_id, found.id)
    events: list[RecordedEvent] = []
    for stream in (found.id, *ids):
        events += await uow.read_stream(stream)
    return ContactExport(contact=found, tickets=views, messages=messages, events=events)


def _census(recorded: list[RecordedEvent], subject: UUID) -> tuple[int, int, int]:
    events = fields = unsealed = 0
    mine = str(subject)
    for r in recorded:
        paths = [p for p in sealed_paths(r.type, r.data) if field_at(r.data, p)["subject"] == mine]
        if paths:
            events += 1
            fields += len(paths)
        elif any(isinstance(field_at(r.data, p), str) for p in personal_paths(r.type)
                 if not is_sealed(field_at(r.data, p))):
            unsealed += 1
    return events, fields, unsealed


__all__ = ["ContactExport", "EraseContact", "Erased", "erase_contact", "export_contact"]
