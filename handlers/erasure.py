"""Erasure of a contact's personal data (crypto-shredding), and its export.

Erasing destroys the contact's data key, so every sealed field of every event that
names the contact reads as ``{"erased": true}`` from then on, while the hash chain,
which covers the ciphertext, still verifies. The files on the contact's tickets were
sealed by keys that data key wrapped: their blobs are deleted as well (chunk rows
here, files in the storage directory once the erasure commits), and their uploads keep
their hash and size, not their names (handlers/attachments.py). In the same transaction it appends
``ContactErased`` (who, when, why) and redacts the inline read models, and ends the
contact's widget sessions, blanking the e-mail they hold (``handlers.widget``).
The tickets it is copied on (``ticket_contacts``, migration 0900) lose it from their
CCs, in their rows and kept versions, and it reads no ticket in the portal any more.
Its address in those tickets' events stays sealed by their requesters' keys (CCs are
sealed as the ticket's messages are, domain/personal.py), which this erasure keeps.

Concurrency: every writer takes its locks in one order: the requester lock of an
e-mail, contact rows, ticket rows (in id order), data key rows, and the tenant head
(at commit, with the events). A command on a ticket locks the ticket row, then holds
its requester's data key row FOR SHARE until it commits (eventstore/keys.py); a merge
locks both contacts, then the merged one's tickets, then the survivor's key. The
erasure takes the requester lock of the contact's e-mail exclusively (openings in
flight finish first), the contact rows (its own, then those merged into it), their
tickets in id order, and then the key rows. A command that holds a key commits first
and is erased with the rest (the tickets are looked up again once the keys are
gone, which finds a follow-up it opened); one that comes after finds the key gone
and is refused (``SubjectErased``, 410). No two wait on each other in a cycle. The
tickets it is only copied on are locked after the keys: a command on one holds its
requester's key, never the copied contact's, so the erasure waits on no key there.
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
from eventstore.store import UnitOfWork
from eventstore.types import RecordedEvent
from handlers import attachments, mail_in, widget
from handlers.contacts import stage
from handlers.errors import Conflict, Gone, Invalid, Missing
from projections import people
from projections.redaction import (
    contact_tickets,
    forget_readers,
    lock_tickets_copying,
    lock_tickets_naming,
    redact_tickets,
)
from projections.search import drop_contact, index_tickets
from scheduler.idempotency import withhold_answers

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
    files: tuple[tuple[UUID, str], ...] = ()
    """The blobs of the contact's files deleted, by (id, storage kind): the caller
    removes those kept outside Postgres once the erasure commits
    (``handlers.attachments.forget_blobs``)."""


async def erase_contact(uow: UnitOfWork, command: EraseContact) -> Erased:
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
    before = await people.lock_contacts(uow.conn, uow.tenant_id, [found.id])
    if before[found.id].email == erased_email(found.id):
        raise Gone("contact_erased", "the contact was erased already")
    # The contacts merged into it are the same person under other records. A merge
    # into it holds its row, so none is added from here on.
    merged = await people.merged_contacts(uow.conn, uow.tenant_id, found.id)
    before |= await people.lock_contacts(uow.conn, uow.tenant_id, merged)
    subjects = [found.id, *merged]
    await lock_tickets_naming(uow.conn, uow.tenant_id, subjects)
    # A merged contact erased on its own before keeps its tombstone as it was.
    alive = sorted(c.id for c in before.values() if c.email != erased_email(c.id))
    for subject in alive:
        # Waits for the commands that hold the key to commit; they are erased below.
        await uow.keyring.erase(uow.conn, uow.tenant_id, subject)
    # Their files were sealed by those keys: their bytes go too.
    files = await attachments.erase_files(uow, alive)
    # Again: the follow-ups those commands opened are found now.
    tickets = await lock_tickets_naming(uow.conn, uow.tenant_id, subjects)
    # The tickets it is copied on lose it from their CCs (no key of its seals those).
    copying = await lock_tickets_copying(uow.conn, uow.tenant_id, subjects, tickets)
    recorded = await uow.read_streams_stored([*subjects, *tickets, *copying])
    streams: dict[UUID, list[RecordedEvent]] = {t: [] for t in [*tickets, *copying]}
    for r in recorded:
        streams.get(r.stream_id, []).append(r)
    redacted = await redact_tickets(uow.conn, uow.tenant_id, streams, set(subjects))
    await forget_readers(uow.conn, uow.tenant_id, subjects)
    for subject in alive:
        await widget.forget_contact(uow, before[subject].email, tickets, command.at)
    await mail_in.forget_contact_mail(uow, tickets, [c.email for c in before.values()])
    events, fields, unsealed = _census(recorded, set(subjects))
    # The search index held the same words: recompute the tickets' rows from their
    # redacted rows, and find the contacts no more.
    await index_tickets(uow.conn, uow.tenant_id, redacted)
    # Answers recorded for Idempotency-Key replays held the same data.
    await withhold_answers(uow.conn, uow.tenant_id,
                           [*map(str, [*subjects, *tickets, *copying]),
                            *(c.email for c in before.values())])
    for contact in (before[subject] for subject in alive):
        event = ContactErased(reason=reason, by=command.by, at=command.at)
        await people.set_contact(uow.conn, uow.tenant_id, contact,
                                 evolve_contact(contact, event))
        await drop_contact(uow.conn, uow.tenant_id, contact.id)
        await stage(uow, contact.id, contact.version, [event])
    return Erased(contact_id=found.id, events=events, fields=fields, tickets=len(redacted),
                  unsealed_events=unsealed, files=tuple(files))


@dataclass(frozen=True, slots=True)
class ContactExport:
    """Everything held about a contact: the contact, its tickets as stored documents,
    their messages, and the events of its stream and its tickets' streams (personal
    fields opened, or marked erased)."""

    contact: Contact
    tickets: list[bytes]
    messages: list[dict[str, Any]]
    events: list[RecordedEvent]
    attachments: list[dict[str, Any]]
    """The files on its tickets (each given back by ``GET /v1/attachments/{id}``)."""


async def export_contact(uow: UnitOfWork, contact_id: UUID) -> ContactExport:
    """Everything held about a contact (GDPR Article 15)."""
    found = await people.load_contact(uow.conn, uow.tenant_id, contact_id)
    if found is None:
        raise Missing("not_found", "the contact does not exist")
    ids, views, messages = await contact_tickets(uow.conn, uow.tenant_id, found.id)
    events: list[RecordedEvent] = []
    for stream in (found.id, *ids):
        events += await uow.read_stream(stream)
    files = await attachments.ticket_files(uow.conn, uow.tenant_id, ids)
    return ContactExport(contact=found, tickets=views, messages=messages, events=events,
                         attachments=files)


def _census(recorded: list[RecordedEvent], subjects: set[UUID]) -> tuple[int, int, int]:
    events = fields = unsealed = 0
    mine = {str(s) for s in subjects}
    for r in recorded:
        paths = [p for p in sealed_paths(r.data) if field_at(r.data, p)["subject"] in mine]
        if paths:
            events += 1
            fields += len(paths)
        elif any(isinstance(field_at(r.data, p), str) for p in personal_paths(r.type)
                 if not is_sealed(field_at(r.data, p))):
            unsealed += 1
    return events, fields, unsealed


__all__ = ["ContactExport", "EraseContact", "Erased", "erase_contact", "export_contact"]
