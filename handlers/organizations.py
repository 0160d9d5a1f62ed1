"""Organizations: create and change, each an event on the organization's own stream
with its inline rows (the organization and the domains it holds) in the same
transaction.

A name (regardless of case) and a domain belong to at most one organization of a
tenant. Changing the domains moves no contact unless the command asks for it
(``move_contacts``): then contacts of a domain it gained join it, and its contacts of
a domain it gave up leave it, each by a ``ContactUpdated`` on the contact's stream.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

import asyncpg

from domain.ids import OrganizationId
from domain.organization import (
    CreateOrganization,
    Organization,
    UpdateOrganization,
    decide_organization,
    evolve_organization,
)
from eventstore.store import UnitOfWork
from handlers.contacts import set_organization_of, stage
from handlers.errors import Conflict, Missing, VersionMismatch
from projections import people


@dataclass(frozen=True, slots=True)
class NewOrganization:
    name: str
    domains: tuple[str, ...]
    at: datetime
    move_contacts: bool = False
    organization_id: UUID = field(default_factory=uuid.uuid4)


@dataclass(frozen=True, slots=True)
class ChangeOrganization:
    """Change the name and/or domains (None: left as they are)."""

    organization_id: UUID
    at: datetime
    name: str | None = None
    domains: tuple[str, ...] | None = None
    move_contacts: bool = False
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class OrganizationResult:
    organization: Organization
    contacts_moved: int = 0


async def _check_unique(uow: UnitOfWork, o: Organization) -> None:
    conn, tenant = uow.conn, uow.tenant_id
    holder = await people.organization_by_name(conn, tenant, o.name)
    if holder is not None and holder != o.id:
        raise Conflict("organization_exists", f"an organization named {o.name} exists",
                       organization_id=str(holder))
    taken = await people.domain_holders(conn, tenant, o.domains, o.id)
    for domain, other in taken.items():
        raise Conflict("domain_taken", f"organization {other} holds the domain {domain}",
                       organization_id=str(other), domain=domain)


async def _move_contacts(uow: UnitOfWork, before: tuple[str, ...], after: Organization,
                         at: datetime) -> int:
    moved = 0
    for contact in await people.contacts_joining(uow.conn, uow.tenant_id, after.domains,
                                                 after.id):
        await set_organization_of(uow, contact, after.id, at)
        moved += 1
    gone = tuple(d for d in before if d not in after.domains)
    if gone:
        for contact in await people.contacts_leaving(uow.conn, uow.tenant_id, after.id, gone):
            await set_organization_of(uow, contact, None, at)
            moved += 1
    return moved


async def create_organization(uow: UnitOfWork, command: NewOrganization) -> OrganizationResult:
    """Create an organization; 409 ``organization_exists`` or ``domain_taken`` naming
    the organization that holds the name or domain."""
    events = decide_organization(CreateOrganization(
        organization_id=OrganizationId(command.organization_id), name=command.name,
        domains=command.domains, at=command.at), None)
    org = evolve_organization(None, events[0])
    await _check_unique(uow, org)
    try:
        async with uow.conn.transaction():
            inserted = await people.insert_organization(uow.conn, uow.tenant_id, org)
    except asyncpg.UniqueViolationError as exc:
        raise Conflict("domain_taken", "another organization claimed one of these domains "
                       "at the same time") from exc
    if not inserted:
        await _check_unique(uow, org)
        raise Conflict("organization_exists", f"an organization named {org.name} exists")
    await stage(uow, org.id, 0, events)
    moved = await _move_contacts(uow, (), org, command.at) if command.move_contacts else 0
    return OrganizationResult(org, moved)


async def update_organization(uow: UnitOfWork, command: ChangeOrganization) -> OrganizationResult:
    """Change the name or domains; a change to nothing records nothing."""
    current = await people.load_organization(uow.conn, uow.tenant_id,
                                             command.organization_id, for_update=True)
    if current is None:
        raise Missing("not_found", "the organization does not exist")
    if command.expected_version is not None and command.expected_version != current.version:
        raise VersionMismatch(f"If-Match asked for version {command.expected_version}; the "
                              f"organization is at {current.version}", current.version)
    events = decide_organization(UpdateOrganization(
        name=current.name if command.name is None else command.name,
        domains=current.domains if command.domains is None else command.domains,
        at=command.at), current)
    after = current
    for event in events:
        after = evolve_organization(after, event)
    if events:
        await _check_unique(uow, after)
        try:
            async with uow.conn.transaction():
                await people.set_organization(uow.conn, uow.tenant_id, current, after)
        except asyncpg.UniqueViolationError as exc:
            raise Conflict("organization_exists", "another organization took this name or "
                           "one of these domains at the same time") from exc
        await stage(uow, after.id, current.version, events)
    moved = (await _move_contacts(uow, current.domains, after, command.at)
             if command.move_contacts else 0)
    return OrganizationResult(after, moved)


async def get_organization(uow: UnitOfWork, organization_id: UUID) -> Organization | None:
    return await people.load_organization(uow.conn, uow.tenant_id, organization_id)


__all__ = [
    "ChangeOrganization",
    "NewOrganization",
    "OrganizationResult",
    "create_organization",
    "get_organization",
    "update_organization",
]
