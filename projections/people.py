"""Inline read models of contacts and organizations: rows kept in the command's own
transaction, from the state the command's events fold to, and the reads over them.

A ticket's ``organization_id`` column follows its contact's: when a contact changes
organization, its tickets' column moves with it (``set_contact``), so the ticket list
filters on one indexed column instead of joining contacts.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.contact import Contact
from domain.errors import CorruptStream
from domain.ids import TenantId
from domain.organization import Organization
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.rows import RecordRows, record_of_row
from projections.search import drop_contact, index_contacts, index_organizations

Q = load_queries(Path(__file__).with_name("people.sql"))

HoldKey = Callable[[UUID, bytes | None, str | None], None]
"""Takes a subject's wrapped data key (None: erased), and the fingerprint of the key-
encryption key that wraps it, that a read holds FOR SHARE."""

_INFINITY = datetime.max.replace(tzinfo=UTC)
_MAX_UUID = uuid.UUID(int=(1 << 128) - 1)


def contact_from_row(row: Mapping[str, Any]) -> Contact:
    return Contact.model_validate(dict(row))


def organization_from_row(row: Mapping[str, Any]) -> Organization:
    return Organization.model_validate(dict(row))


load_contact = RecordRows(Contact, Q["contact"], Q["contact_for_update"]).load


async def lock_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                        ids: list[UUID]) -> dict[UUID, Contact]:
    """Lock the contacts' rows (in id order) and return them by id."""
    rows = await conn.fetch(Q["contacts_for_update"], tenant_id, ids)
    return {r["id"]: contact_from_row(r) for r in rows}


async def merged_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                          contact_id: UUID) -> list[UUID]:
    """The contacts merged into this one, and into those, and so on."""
    return [r["id"] for r in await conn.fetch(Q["merged_contacts"], tenant_id, contact_id)]


async def lock_requester(conn: asyncpg.Connection, tenant_id: TenantId, email: str, *,
                         merging: bool = False) -> None:
    """Take an e-mail's requester lock for the transaction: shared to open a ticket
    for it, exclusive (``merging``) to merge its contact away."""
    await conn.execute(Q["merge_lock" if merging else "lock_requester"], tenant_id, email)


async def lock_requesters(conn: asyncpg.Connection, tenant_id: TenantId,
                          emails: Sequence[str], *, write: Write | None = None) -> None:
    """``lock_requester`` (shared) of each of ``emails`` in one statement, run by
    ``write`` when given (deferred, it is taken when the deferred writes are sent)."""
    if write is None:
        await conn.execute(Q["lock_requesters"], tenant_id, list(emails))
    else:
        await write(Q["lock_requesters"], tenant_id, list(emails))


async def contact_by_email(conn: asyncpg.Connection, tenant_id: TenantId,
                           email: str) -> Contact | None:
    """The contact holding ``email``, compared regardless of case."""
    return await record_of_row(conn, Contact, Q["contact_by_email"], tenant_id, email)


async def requester_contact(conn: asyncpg.Connection, tenant_id: TenantId, email: str, *,
                            hold_key: HoldKey | None = None
                            ) -> tuple[Contact | None, UUID | None]:
    """The contact holding ``email`` (any case), and the organization holding its
    domain, in one round trip. With ``hold_key``, the same statement holds the
    contact's data key until commit and hands it over (``UnitOfWork.held_key``)."""
    row = await conn.fetchrow(Q["requester_contact"], tenant_id, email, hold_key is not None)
    assert row is not None
    org: UUID | None = row["domain_organization"]
    if row["id"] is None:
        return None, org
    if hold_key is not None and row["has_key"]:
        hold_key(row["id"], None if row["wrapped"] is None else bytes(row["wrapped"]),
                 row["kek"])
    extra = ("domain_organization", "has_key", "wrapped", "kek")
    return contact_from_row({k: v for k, v in row.items() if k not in extra}), org


async def requester_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                             emails: Sequence[str], *, hold_key: HoldKey | None = None
                             ) -> list[tuple[Contact | None, UUID | None]]:
    """``requester_contact`` of each of ``emails``, in their order, in one round trip."""
    rows = await conn.fetch(Q["requester_contacts"], tenant_id, list(emails),
                            hold_key is not None)
    extra = ("n", "domain_organization", "has_key", "wrapped", "kek")
    out: list[tuple[Contact | None, UUID | None]] = []
    for row in rows:
        if row["id"] is None:
            out.append((None, row["domain_organization"]))
            continue
        if hold_key is not None and row["has_key"]:
            hold_key(row["id"], None if row["wrapped"] is None else bytes(row["wrapped"]),
                     row["kek"])
        out.append((contact_from_row({k: v for k, v in row.items() if k not in extra}),
                    row["domain_organization"]))
    return out


async def contact_by_external_id(conn: asyncpg.Connection, tenant_id: TenantId,
                                 external_id: str) -> UUID | None:
    found: UUID | None = await conn.fetchval(Q["contact_by_external_id"], tenant_id,
                                             external_id)
    return found


async def insert_contact(conn: asyncpg.Connection, tenant_id: TenantId, c: Contact, *,
                         write: Write | None = None) -> bool:
    """Insert a new contact's row; False when its e-mail or external id is taken. Its
    search row is written by ``write`` when given (``eventstore.types.Write``)."""
    inserted = await conn.fetchval(
        Q["insert_contact"], tenant_id, c.id, c.version, c.email, c.name, c.phone,
        c.external_id, c.organization_id, list(c.tags), c.created_at, c.updated_at)
    if inserted is None:
        return False
    await index_contacts(conn, tenant_id, [c.id], write=write)
    return True


async def insert_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                          contacts: Sequence[Contact], *, write: Write | None = None
                          ) -> set[UUID]:
    """``insert_contact`` of several new contacts (none with a phone, an external id or
    tags) in one statement; the ids of those that went in (one whose e-mail is taken
    is left out). Their search rows are written by ``write`` when given."""
    assert all(c.phone is None and c.external_id is None and not c.tags for c in contacts)
    rows = await conn.fetch(
        Q["insert_contacts"], tenant_id, [c.id for c in contacts],
        [c.version for c in contacts], [c.email for c in contacts],
        [c.name for c in contacts], [c.organization_id for c in contacts],
        [c.created_at for c in contacts], [c.updated_at for c in contacts])
    inserted = {r["id"] for r in rows}
    if inserted:
        await index_contacts(conn, tenant_id, [c.id for c in contacts if c.id in inserted],
                             write=write)
    return inserted


async def set_contact(conn: asyncpg.Connection, tenant_id: TenantId, before: Contact,
                      after: Contact) -> None:
    """Write a changed contact's row (it must still be at ``before.version``) and move
    its tickets' organization with it."""
    status = await conn.execute(
        Q["update_contact"], tenant_id, after.id, after.version, after.email, after.name,
        after.phone, after.external_id, after.organization_id, list(after.tags),
        after.merged_into, after.updated_at, before.version)
    if status != "UPDATE 1":
        raise CorruptStream(f"inline contact {after.id} is not at version {before.version}")
    if after.organization_id != before.organization_id:
        await conn.execute(Q["move_contact_tickets"], tenant_id, after.id,
                           after.organization_id)
    if after.merged_into is None:
        await index_contacts(conn, tenant_id, [after.id])
    else:
        await drop_contact(conn, tenant_id, after.id)


@dataclass(frozen=True, slots=True)
class ContactFilters:
    """Contact list filters; None means any."""

    email: str | None = None
    organization_id: UUID | None = None
    no_organization: bool = False
    tag: str | None = None


async def list_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                        filters: ContactFilters, after: tuple[datetime, UUID] | None,
                        limit: int) -> list[Contact]:
    """Contacts newest first, strictly after the keyset position ``after``; merged
    contacts are left out."""
    at, last = after if after is not None else (_INFINITY, _MAX_UUID)
    rows = await conn.fetch(Q["list_contacts"], tenant_id, at, last, limit, filters.email,
                            filters.organization_id, filters.no_organization, filters.tag)
    return [contact_from_row(r) for r in rows]


async def contact_ticket_ids(conn: asyncpg.Connection, tenant_id: TenantId,
                             contact_id: UUID) -> list[UUID]:
    return [r["id"] for r in await conn.fetch(Q["contact_ticket_ids"], tenant_id, contact_id)]


async def contact_cc_ticket_ids(conn: asyncpg.Connection, tenant_id: TenantId,
                                contact_id: UUID) -> list[UUID]:
    return [r["id"] for r in await conn.fetch(Q["contact_cc_ticket_ids"], tenant_id,
                                              contact_id)]


async def unlinked_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                           limit: int) -> list[tuple[UUID, dict[str, Any]]]:
    """Tickets linked to no contact (opened before contacts), oldest first, with the
    requester each was opened for."""
    rows = await conn.fetch(Q["unlinked_tickets"], tenant_id, limit)
    return [(r["id"], r["requester"]) for r in rows]


async def contacts_joining(conn: asyncpg.Connection, tenant_id: TenantId,
                           domains: tuple[str, ...], organization_id: UUID) -> list[Contact]:
    """Locked: contacts of those domains not yet in the organization."""
    rows = await conn.fetch(Q["contacts_of_domains"], tenant_id, list(domains), organization_id)
    return [contact_from_row(r) for r in rows]


async def contacts_leaving(conn: asyncpg.Connection, tenant_id: TenantId,
                           organization_id: UUID, domains: tuple[str, ...]) -> list[Contact]:
    """Locked: the organization's contacts whose domain is among those it gave up."""
    rows = await conn.fetch(Q["contacts_leaving"], tenant_id, organization_id, list(domains))
    return [contact_from_row(r) for r in rows]


load_organization = RecordRows(Organization, Q["organization"],
                               Q["organization_for_update"]).load


async def organization_of_domain(conn: asyncpg.Connection, tenant_id: TenantId,
                                 domain: str) -> UUID | None:
    """The organization holding an e-mail domain (lower case), if one does."""
    found: UUID | None = await conn.fetchval(Q["organization_of_domain"], tenant_id, domain)
    return found


async def domain_holders(conn: asyncpg.Connection, tenant_id: TenantId,
                         domains: tuple[str, ...], organization_id: UUID) -> dict[str, UUID]:
    """Which of ``domains`` another organization holds, and which one."""
    rows = await conn.fetch(Q["domain_holders"], tenant_id, list(domains), organization_id)
    return {r["domain"]: r["organization_id"] for r in rows}


async def organization_by_name(conn: asyncpg.Connection, tenant_id: TenantId,
                               name: str) -> UUID | None:
    found: UUID | None = await conn.fetchval(Q["organization_by_name"], tenant_id, name)
    return found


async def insert_organization(conn: asyncpg.Connection, tenant_id: TenantId,
                              o: Organization) -> bool:
    """Insert a new organization with its domains; False when the name is taken."""
    inserted = await conn.fetchval(Q["insert_organization"], tenant_id, o.id, o.version,
                                   o.name, list(o.domains), o.created_at, o.updated_at)
    if inserted is None:
        return False
    await conn.execute(Q["set_domains"], tenant_id, o.id, list(o.domains))
    await index_organizations(conn, tenant_id, [o.id])
    return True


async def set_organization(conn: asyncpg.Connection, tenant_id: TenantId,
                           before: Organization, after: Organization) -> None:
    status = await conn.execute(Q["update_organization"], tenant_id, after.id, after.version,
                                after.name, list(after.domains), after.updated_at,
                                before.version)
    if status != "UPDATE 1":
        raise CorruptStream(f"inline organization {after.id} is not at version "
                            f"{before.version}")
    if after.domains != before.domains:
        await conn.execute(Q["set_domains"], tenant_id, after.id, list(after.domains))
    await index_organizations(conn, tenant_id, [after.id])


async def list_organizations(conn: asyncpg.Connection, tenant_id: TenantId,
                             name: str | None, domain: str | None,
                             after: tuple[datetime, UUID] | None,
                             limit: int) -> list[Organization]:
    """Organizations newest first, strictly after the keyset position ``after``."""
    at, last = after if after is not None else (_INFINITY, _MAX_UUID)
    rows = await conn.fetch(Q["list_organizations"], tenant_id, at, last, limit, name, domain)
    return [organization_from_row(r) for r in rows]


__all__ = [
    "ContactFilters",
    "HoldKey",
    "contact_by_email",
    "contact_by_external_id",
    "contact_from_row",
    "contact_ticket_ids",
    "contacts_joining",
    "contacts_leaving",
    "domain_holders",
    "insert_contact",
    "insert_contacts",
    "insert_organization",
    "list_contacts",
    "list_organizations",
    "load_contact",
    "load_organization",
    "lock_contacts",
    "lock_requester",
    "lock_requesters",
    "merged_contacts",
    "organization_by_name",
    "organization_from_row",
    "organization_of_domain",
    "requester_contact",
    "requester_contacts",
    "set_contact",
    "set_organization",
    "unlinked_tickets",
]
