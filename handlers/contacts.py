"""Contacts: create, change and merge, each an event on the contact's own stream with
its inline row written in the same transaction.

An e-mail (regardless of case) and an external id belong to at most one contact of a
tenant; the conflict names the contact holding it. A contact created without an
organization joins the one holding its e-mail's domain. Merging moves every ticket
of the merged contact to the survivor, one ``RequesterChanged`` per ticket, and the
tickets that copy it (its CC entries) to copy the survivor, one ``CcsChanged`` each, in
the merge's own transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.contact import (
    Contact,
    ContactCommand,
    ContactFields,
    CreateContact,
    MergeContact,
    UpdateContact,
    check_fields,
    decide_contact,
    email_domain,
    evolve_contact,
    fields_of,
)
from domain.events import Event
from domain.ids import ContactId, OrganizationId
from domain.mapper import to_stored
from domain.ticket.commands import ChangeRequester, MoveCc, RetargetSla
from domain.values import Requester
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, Missing, VersionMismatch
from handlers.portal import revoke_merged
from handlers.sealing import stored_event
from handlers.tickets import run_command
from projections import people
from projections import sla_policies as sla_reads

CONTACT_FIELDS = frozenset(ContactFields.model_fields)


@dataclass(frozen=True, slots=True)
class NewContact:
    fields: ContactFields
    at: datetime
    contact_id: UUID = field(default_factory=uuid.uuid4)


@dataclass(frozen=True, slots=True)
class ChangeContact:
    """Change the given fields only (``changes`` names each field given)."""

    contact_id: UUID
    changes: Mapping[str, Any]
    at: datetime
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class Merge:
    contact_id: UUID
    into: UUID
    at: datetime
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class Merged:
    """The survivor of a merge and how many tickets moved to it."""

    survivor: Contact
    tickets_moved: int


async def stage(uow: UnitOfWork, stream: UUID, version: int, events: list[Event]) -> None:
    """Stage a contact's or organization's events at ``version``."""
    stored = [to_stored(e) for e in events]
    await uow.append(stream, version, [stored_event(t, d, v, stream) for t, v, d in stored])


async def _check_unique(uow: UnitOfWork, f: ContactFields, own: UUID | None) -> None:
    conn, tenant = uow.conn, uow.tenant_id
    holder = await people.contact_by_email(conn, tenant, f.email)
    if holder is not None and holder.id != own:
        raise Conflict("contact_exists", f"a contact with e-mail {f.email} exists",
                       contact_id=str(holder.merged_into or holder.id))
    if f.external_id is not None:
        other = await people.contact_by_external_id(conn, tenant, f.external_id)
        if other is not None and other != own:
            raise Conflict("external_id_taken",
                           f"contact {other} has external id {f.external_id}",
                           contact_id=str(other))


async def _check_organization(uow: UnitOfWork, organization_id: UUID | None) -> None:
    if organization_id is not None and await people.load_organization(
            uow.conn, uow.tenant_id, organization_id) is None:
        raise Invalid("unknown_organization", f"organization {organization_id} does not exist",
                      field="organization_id")


async def create_contact(uow: UnitOfWork, command: NewContact) -> Contact:
    """Create a contact; 409 ``contact_exists`` (with the holder's ``contact_id``) for a
    taken e-mail, 422 ``unknown_organization`` naming an organization that is not."""
    conn, tenant = uow.conn, uow.tenant_id
    f = check_fields(command.fields)
    await _check_organization(uow, f.organization_id)
    if f.organization_id is None:
        org = await people.organization_of_domain(conn, tenant, email_domain(f.email))
        if org is not None:
            f = f.model_copy(update={"organization_id": OrganizationId(org)})
    await _check_unique(uow, f, None)
    events = decide_contact(CreateContact(contact_id=ContactId(command.contact_id), fields=f,
                                          at=command.at), None)
    contact = evolve_contact(None, events[0])
    if not await people.insert_contact(conn, tenant, contact):
        await _check_unique(uow, f, None)  # a concurrent create took it
        raise Conflict("contact_exists", f"a contact with e-mail {f.email} exists")
    await stage(uow, contact.id, 0, events)
    return contact


async def _decide_and_write(uow: UnitOfWork, current: Contact, command: ContactCommand
                            ) -> Contact:
    events = decide_contact(command, current)
    if not events:
        return current
    after = current
    for event in events:
        after = evolve_contact(after, event)
    await people.set_contact(uow.conn, uow.tenant_id, current, after)
    await stage(uow, current.id, current.version, events)
    if after.organization_id != current.organization_id:
        await _rematch_tickets(uow, after.id, events[-1].at)
    return after


async def _rematch_tickets(uow: UnitOfWork, contact_id: UUID, at: datetime) -> None:
    """A contact moved to another organization (or out of any): its open tickets are
    re-matched against the tenant's SLA policies, as after a change of group or
    priority (``SlaRetargeted``, reason ``organization``); only if a policy has a
    condition on the organization, since no other match can change."""
    if not await sla_reads.policies_ask_organization(uow.conn, uow.tenant_id):
        return
    for ticket_id in await people.contact_ticket_ids(uow.conn, uow.tenant_id, contact_id):
        await run_command(uow, ticket_id, RetargetSla(policy_id=None, at=at,
                                                      reason="organization"))


async def _locked(uow: UnitOfWork, contact_id: UUID, expected_version: int | None) -> Contact:
    current = await people.load_contact(uow.conn, uow.tenant_id, contact_id, for_update=True)
    if current is None:
        raise Missing("not_found", "the contact does not exist")
    if expected_version is not None and expected_version != current.version:
        raise VersionMismatch(f"If-Match asked for version {expected_version}; the contact "
                              f"is at {current.version}", current.version)
    return current


async def update_contact(uow: UnitOfWork, command: ChangeContact) -> Contact:
    """Change the given fields; a change to nothing records nothing."""
    unknown = set(command.changes) - CONTACT_FIELDS
    if unknown:
        raise ValueError(f"not contact fields: {sorted(unknown)}")
    current = await _locked(uow, command.contact_id, command.expected_version)
    f = check_fields(fields_of(current).model_copy(update=dict(command.changes)))
    if f.organization_id != current.organization_id:
        await _check_organization(uow, f.organization_id)
    if current.merged_into is None:
        await _check_unique(uow, f, current.id)
    return await _decide_and_write(uow, current, UpdateContact(fields=f, at=command.at))


async def set_organization_of(uow: UnitOfWork, contact: Contact, organization_id: UUID | None,
                              at: datetime) -> Contact:
    """Move a (locked) contact to another organization, or out of any."""
    org = None if organization_id is None else OrganizationId(organization_id)
    f = fields_of(contact).model_copy(update={"organization_id": org})
    return await _decide_and_write(uow, contact, UpdateContact(fields=f, at=at))


async def merge_contact(uow: UnitOfWork, command: Merge) -> Merged:
    """Merge a contact into another: ``ContactMerged`` on the merged one, each of its
    tickets moved to the survivor, the tickets copying it copying the survivor instead
    (``MoveCc``), and its portal sessions revoked (the survivor's
    login is the one that signs in from now on)."""
    found = await people.load_contact(uow.conn, uow.tenant_id, command.contact_id)
    if found is None:
        raise Missing("not_found", "the contact does not exist")
    # Openings for its e-mail in flight commit first (their tickets are then moved
    # too); later ones wait, and then find it merged (handlers/requesters.py).
    await people.lock_requester(uow.conn, uow.tenant_id, found.email, merging=True)
    locked = await people.lock_contacts(uow.conn, uow.tenant_id,
                                        [command.contact_id, command.into])
    source = locked[command.contact_id]
    target = locked.get(command.into)
    if target is None:
        raise Invalid("unknown_contact", f"contact {command.into} does not exist", field="into")
    if target.merged_into is not None:
        raise Invalid("unknown_contact", f"contact {command.into} was merged into "
                      f"{target.merged_into}; merge into that one", field="into")
    if command.expected_version is not None and command.expected_version != source.version:
        raise VersionMismatch(f"If-Match asked for version {command.expected_version}; the "
                              f"contact is at {source.version}", source.version)
    await _decide_and_write(uow, source, MergeContact(into=ContactId(target.id),
                                                      at=command.at))
    requester = Requester(email=target.email, name=target.name,
                          contact_id=ContactId(target.id))
    tickets = await people.contact_ticket_ids(uow.conn, uow.tenant_id, source.id)
    for ticket_id in tickets:
        await run_command(uow, ticket_id, ChangeRequester(requester=requester, at=command.at))
    # The tickets copying the merged contact copy the survivor in its place.
    for ticket_id in await people.contact_cc_ticket_ids(uow.conn, uow.tenant_id, source.id):
        await run_command(uow, ticket_id, MoveCc(email=source.email, to=requester,
                                                 at=command.at))
    await revoke_merged(uow, source.id, command.at)
    return Merged(survivor=target, tickets_moved=len(tickets))


async def get_contact(uow: UnitOfWork, contact_id: UUID) -> Contact | None:
    return await people.load_contact(uow.conn, uow.tenant_id, contact_id)


__all__ = [
    "CONTACT_FIELDS",
    "ChangeContact",
    "Merge",
    "Merged",
    "NewContact",
    "create_contact",
    "get_contact",
    "merge_contact",
    "set_organization_of",
    "stage",
    "update_contact",
]
