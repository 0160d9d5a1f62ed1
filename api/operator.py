"""Operator commands that run as the owner role: creating tenants.

Tenants are created by the operator, never over the API. The owner connection still
runs under forced row-level security, so it arms the new tenant like any writer.
"""

from __future__ import annotations

import getpass
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from api.keys import IssuedKey, insert_key
from api.tenant_stream import record
from domain.events import ApiKeyIssued
from domain.ids import ApiKeyId, TenantId
from domain.values import Role
from eventstore.pool import connect
from eventstore.sqlfile import load_queries
from eventstore.store import Session, arm
from eventstore.types import StoreActor

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class NewTenant:
    tenant_id: TenantId
    name: str
    admin_key: IssuedKey


def operator_actor() -> StoreActor:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = "unknown"
    return StoreActor("operator", who)


async def create_tenant(owner_dsn: str, name: str) -> NewTenant:
    """Create a tenant, its head row and its first admin key."""
    name = name.strip()
    if not 1 <= len(name) <= 200:
        raise ValueError("a tenant name has 1 to 200 characters")
    tenant_id = TenantId(uuid.uuid4())
    conn = await connect(owner_dsn)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await arm(conn, tenant_id, operator_actor())
            await conn.execute(Q["insert_tenant"], tenant_id, name)
            await conn.execute(Q["insert_tenant_head"], tenant_id)
            key = await insert_key(conn, tenant_id, name="first admin key", role="admin")
            # The first key is on the audit trail like every other, with the operator
            # as its actor.
            await record(Session(conn, tenant_id),
                         ApiKeyIssued(key_id=ApiKeyId(key.id), name=key.name, role=Role.ADMIN,
                                      prefix=key.prefix, at=datetime.now(UTC)))
    finally:
        await conn.close()
    return NewTenant(tenant_id, name, key)
