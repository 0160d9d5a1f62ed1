"""Operator commands that run as the owner role: creating tenants.

Tenants are created by the operator, never over the API. The owner connection still
runs under forced row-level security, so ``operator_unit_of_work`` arms the tenant like
any writer, with the operator (the OS user) as the actor. A new tenant gets its
per-tenant periodic jobs in the same transaction, so its sweep, its purges, the
time-rule pass and the SLA-warning pass exist from the start rather than from the
seeder's next run.
"""

from __future__ import annotations

import getpass
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import asyncpg

from domain.ids import TenantId
from domain.validation import check_slug, slug_of
from domain.values import Role
from eventstore.pool import connect
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork, arm
from eventstore.types import StoreActor
from handlers import rule_timers, sla_warnings, sweep
from handlers.api_keys import IssuedKey, IssueKey, issue_key
from scheduler import idempotency, uploads
from scheduler.tenant_seed import ensure_tenant_jobs

Q = load_queries(Path(__file__).with_name("queries.sql"))

TENANT_JOBS = ((sweep.KIND, sweep.KIND), (idempotency.KIND, idempotency.KIND),
               (uploads.KIND, uploads.KIND), (rule_timers.PASS, rule_timers.PASS),
               (sla_warnings.KIND, sla_warnings.KIND))
"""``(kind, dedupe_key)`` of every per-tenant periodic job, as ``api.root.job_registry``
registers them (a test holds the two together)."""


@dataclass(frozen=True, slots=True)
class CreateTenant:
    name: str
    at: datetime
    tenant_id: TenantId = field(default_factory=lambda: TenantId(uuid.uuid4()))
    slug: str | None = None
    """None: one made from the name (with a piece of the id if that one is taken)."""


@dataclass(frozen=True, slots=True)
class NewTenant:
    tenant_id: TenantId
    name: str
    admin_key: IssuedKey
    slug: str = ""
    """What people type to sign in."""


def operator_actor() -> StoreActor:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "unknown"
    return StoreActor("operator", who)


@asynccontextmanager
async def operator_unit_of_work(owner_dsn: str, tenant_id: TenantId) -> AsyncIterator[UnitOfWork]:
    """A unit of work as the owner role, armed for ``tenant_id`` with the operator as
    the actor; commits when the block exits normally."""
    conn = await connect(owner_dsn)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await arm(conn, tenant_id, operator_actor())
            session = UnitOfWork(conn, tenant_id)
            yield session
            # An operator's connection is no unit of work of the store: its appends go
            # out here, before the commit (nobody queues on this tenant's head yet).
            await session.flush()
    finally:
        await conn.close()


async def create_tenant(uow: UnitOfWork, command: CreateTenant) -> NewTenant:
    """Create the tenant of ``uow`` (armed for ``command.tenant_id``), its head row, its
    periodic jobs (due at ``command.at``) and its first admin key; the key is on the
    audit trail like every other."""
    name = command.name.strip()
    if not 1 <= len(name) <= 200:
        raise ValueError("a tenant name has 1 to 200 characters")
    if uow.tenant_id != command.tenant_id:
        raise ValueError("the unit of work is armed for another tenant")
    if command.slug is not None:
        slug = check_slug(command.slug)
        if await uow.conn.fetchval(Q["slug_taken"], slug):
            raise ValueError(f"the slug {slug!r} is taken by another tenant")
    else:
        slug = slug_of(name)
        if await uow.conn.fetchval(Q["slug_taken"], slug):
            slug = f"{slug}-{str(command.tenant_id)[:8]}"
    await uow.conn.execute(Q["insert_tenant"], command.tenant_id, name, slug)
    await uow.conn.execute(Q["insert_tenant_head"], command.tenant_id)
    await ensure_tenant_jobs(uow.conn, command.tenant_id, TENANT_JOBS, command.at)
    key = await issue_key(uow, IssueKey(name="first admin key", role=Role.ADMIN,
                                        at=command.at))
    return NewTenant(command.tenant_id, name, key, slug)


async def create_tenant_as_operator(owner_dsn: str, name: str, *,
                                    at: datetime | None = None,
                                    slug: str | None = None) -> NewTenant:
    """``create_tenant`` in an operator unit of work of its own (the CLI's entry point), at
    ``at`` (default: now)."""
    command = CreateTenant(name=name, at=at or datetime.now(UTC), slug=slug)
    async with operator_unit_of_work(owner_dsn, command.tenant_id) as uow:
        return await create_tenant(uow, command)


async def set_slug(owner_dsn: str, tenant_id: TenantId, slug: str) -> str:
    """Give a tenant another slug (the operator's ``helpdesk tenants slug``); returns the
    one it had. ``ValueError`` for a malformed or taken slug, or an unknown tenant.
    Sign-in takes the new slug at once; the old one stops working."""
    slug = check_slug(slug)
    async with operator_unit_of_work(owner_dsn, tenant_id) as uow:
        if await uow.conn.fetchval(Q["slug_taken"], slug):
            raise ValueError(f"the slug {slug!r} is taken")
        previous: str | None = await uow.conn.fetchval(Q["set_tenant_slug"], tenant_id, slug)
    if previous is None:
        raise ValueError(f"no tenant {tenant_id}")
    return previous


async def resolve_tenant(conn: asyncpg.Connection, given: str) -> TenantId | None:
    """The tenant a person typed at sign-in: its id, or its slug (any case); None when
    it is neither, told apart from a wrong password by nobody (the caller answers the
    same 401)."""
    text = given.strip()
    try:
        return TenantId(uuid.UUID(text))
    except ValueError:
        pass
    found: uuid.UUID | None = await conn.fetchval(Q["tenant_by_slug"], text[:63])
    return None if found is None else TenantId(found)


__all__ = ["CreateTenant", "NewTenant", "create_tenant", "create_tenant_as_operator",
           "operator_actor", "operator_unit_of_work", "resolve_tenant", "set_slug"]
