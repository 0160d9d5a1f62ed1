"""Who a new ticket is for: its requester resolved to a contact, in the ticket's own
transaction.

An e-mail that a contact holds (compared regardless of case) links the ticket to that
contact, or to the one it was merged into; an unknown e-mail creates the contact, in
the organization that holds its domain if one does. Concurrent openings for one new
e-mail create one contact: the contact row's insert waits on the unique e-mail of a
concurrent one and, once that commits, finds it taken and links to it instead
(``insert_contact`` in projections/people.sql). Every opening holds its e-mail's
requester lock (shared) to commit, and a merge takes it exclusively, so no ticket is
linked to a contact while it is being merged away (``lock_requester``).

The contact's events are returned, not staged: the caller stages them with the
ticket's, once nothing can fail any more, so a lost race undone by a savepoint never
leaves an event behind without its row.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from uuid import UUID

import asyncpg

from domain.contact import Contact, ContactFields, CreateContact, decide_contact
from domain.contact import evolve_contact as _evolve
from domain.errors import CorruptStream
from domain.events import Event
from domain.ids import ContactId, OrganizationId, TenantId
from domain.validation import check_requester
from domain.values import Requester, UtcDatetime
from eventstore.store import UnitOfWork
from eventstore.types import Write
from handlers.errors import Invalid
from projections import people

MAX_HOPS = 10


async def survivor(conn: asyncpg.Connection, tenant_id: TenantId, contact: Contact) -> Contact:
    """The contact itself, or the one it was merged into (following merges of merges)."""
    for _ in range(MAX_HOPS):
        if contact.merged_into is None:
            return contact
        nxt = await people.load_contact(conn, tenant_id, contact.merged_into)
        if nxt is None:
            raise CorruptStream(f"contact {contact.id} was merged into a missing contact")
        contact = nxt
    raise CorruptStream(f"contact {contact.id} is merged more than {MAX_HOPS} times over")


async def requester_of_contact(uow: UnitOfWork, contact_id: UUID) -> Requester:
    """The requester for a ticket opened for a contact by id; 422 ``unknown_contact``
    naming it when the tenant has no such contact."""
    conn, tenant_id = uow.conn, uow.tenant_id
    contact = await people.load_contact(conn, tenant_id, contact_id)
    if contact is None:
        raise Invalid("unknown_contact", f"contact {contact_id} does not exist",
                      field="requester.contact_id")
    # Read again under the e-mail's lock: a merge in flight is then seen, or waits.
    await people.lock_requester(conn, tenant_id, contact.email)
    contact = await people.load_contact(conn, tenant_id, contact_id) or contact
    contact = await survivor(conn, tenant_id, contact)
    return Requester(email=contact.email, name=contact.name, contact_id=ContactId(contact.id))


async def resolve_requester(conn: asyncpg.Connection, tenant_id: TenantId,
                            requester: Requester, at: UtcDatetime, *, lock: bool = True,
                            write: Write | None = None, locked: bool = False,
                            hold_key: people.HoldKey | None = None,
                            ) -> tuple[Requester, list[tuple[UUID, Event]]]:
    """The requester linked to its contact, and the events of a contact it created
    (``(stream, event)``, to stage at version 0). ``lock=False`` leaves out the
    requester lock, for a transaction that resolves thousands of e-mails (each lock
    holds a slot of the server's lock table until commit); ``locked`` says the caller
    took it already, in an earlier statement of the transaction. ``hold_key`` is
    handed a linked contact's data key, held by the same read. A created contact's search
    row is written by ``write`` (``eventstore.types.Write``) when given; its row itself
    is inserted at once, since whether it went in decides what the ticket links to."""
    requester = check_requester(requester)
    if lock and not locked:
        await people.lock_requester(conn, tenant_id, requester.email)
    for _ in range(2):
        found, org = await people.requester_contact(conn, tenant_id, requester.email,
                                                    hold_key=hold_key)
        if found is not None:
            contact = await survivor(conn, tenant_id, found)
            return _linked(requester, contact), []
        contact_id = ContactId(uuid.uuid4())
        fields = ContactFields(email=requester.email, name=requester.name,
                               organization_id=None if org is None else OrganizationId(org))
        events = decide_contact(CreateContact(contact_id=contact_id, fields=fields, at=at), None)
        contact = _evolve(None, events[0])
        if await people.insert_contact(conn, tenant_id, contact, write=write):
            return _linked(requester, contact), [(contact_id, e) for e in events]
        # A concurrent opening created it and committed: read it on the next pass.
    raise CorruptStream(f"no contact holds {requester.email} yet its insert conflicts")


async def resolve_requesters(uow: UnitOfWork, requesters: Sequence[Requester],
                             at: UtcDatetime) -> list[tuple[Requester, list[tuple[UUID, Event]]]]:
    """``resolve_requester`` of the requesters of several new tickets (distinct
    e-mails) in ``uow``, in three round trips whatever their number, each with its
    requester lock (shared) and its contact's data key held as there: the locks go with
    the unit of work's deferred writes (sent now, so the look-up reads after them), then
    one look-up of the contacts holding the e-mails, then one insert of the contacts to
    create. A contact that a concurrent opening created first is read and linked by
    ``resolve_requester``, as one opening would. In the order given."""
    requesters = [check_requester(r) for r in requesters]
    conn, tenant_id = uow.conn, uow.tenant_id
    emails = [r.email for r in requesters]
    await people.lock_requesters(conn, tenant_id, emails, write=uow.write)
    if uow.writes:
        await uow.flush_writes()
    found = await people.requester_contacts(conn, tenant_id, emails, hold_key=uow.held_key)
    out: list[tuple[Requester, list[tuple[UUID, Event]]] | None] = []
    created: dict[int, tuple[Contact, list[Event]]] = {}
    for i, (requester, (contact, org)) in enumerate(zip(requesters, found, strict=True)):
        if contact is not None:
            out.append((_linked(requester, await survivor(conn, tenant_id, contact)), []))
            continue
        fields = ContactFields(email=requester.email, name=requester.name,
                               organization_id=None if org is None else OrganizationId(org))
        events = decide_contact(CreateContact(contact_id=ContactId(uuid.uuid4()),
                                              fields=fields, at=at), None)
        created[i] = (_evolve(None, events[0]), events)
        out.append(None)
    inserted = (await people.insert_contacts(conn, tenant_id, [c for c, _ in created.values()],
                                             write=uow.write)
                if created else set())
    for i, (contact, events) in created.items():
        if contact.id in inserted:
            out[i] = (_linked(requesters[i], contact), [(contact.id, e) for e in events])
        else:
            out[i] = await resolve_requester(conn, tenant_id, requesters[i], at, locked=True,
                                             write=uow.write, hold_key=uow.held_key)
    return [r for r in out if r is not None]


def _linked(requester: Requester, contact: Contact) -> Requester:
    return Requester(email=requester.email, name=requester.name or contact.name,
                     contact_id=ContactId(contact.id))


__all__ = ["requester_of_contact", "resolve_requester", "resolve_requesters", "survivor"]
