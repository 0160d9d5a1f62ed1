"""Row-level security on the sign-in tables, as the runtime role: a tenant's logins,
sessions, refresh tokens and invitations are invisible and unwritable under another
tenant's context, and under none at all."""

from __future__ import annotations

import base64
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from domain.ids import TenantId
from domain.values import Role
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import agents, invitations, sessions
from handlers.credentials import Passwords
from handlers.errors import NotAuthenticated

TABLES = ("agent_logins", "agent_sessions", "refresh_tokens", "agent_invitations")
PASSWORD = "correct horse battery"
LIFETIMES = sessions.Lifetimes(refresh=timedelta(days=30), session=timedelta(days=90))
OPERATOR = StoreActor("operator", "test")


async def _signed_in(store: EventStore, passwords: Passwords, tenant_id: TenantId
                     ) -> sessions.SignedIn:
    """An agent of the tenant with a password, an invitation, and an open session."""
    now = datetime.now(UTC)
    email = f"{uuid.uuid4()}@example.com"
    async with store.unit_of_work(tenant_id, OPERATOR) as uow:
        row = await agents.add_agent(uow, agents.AddAgent(email=email, name="A",
                                                          role=Role.AGENT, at=now))
        await sessions.store_password(uow, row["id"], passwords.hash(PASSWORD), now)
        await invitations.invite(uow, invitations.InviteAgent(
            email=f"{uuid.uuid4()}@example.com", name="B", role=Role.AGENT, at=now,
            valid_for=timedelta(hours=1)))
    return await sessions.sign_in(store, passwords, LIFETIMES,
                                  sessions.SignIn(tenant_id, email, PASSWORD, now))


async def _rows(conn: asyncpg.Connection, table: str) -> list[uuid.UUID]:
    return [r["tenant_id"] for r in await conn.fetch(f"SELECT tenant_id FROM {table}")]


async def test_every_sign_in_table_is_isolated_by_tenant(store, pool, make_tenant) -> None:
    passwords = Passwords(memory_kib=1024, time_cost=1)
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    signed_a = await _signed_in(store, passwords, a)
    await _signed_in(store, passwords, b)
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT current_user") != "postgres"
        for table in TABLES:
            assert await _rows(conn, table) == [], f"{table} is visible with no tenant"
        for tenant in (a, b):
            async with store.unit_of_work(tenant, readonly=True) as uow:
                for table in TABLES:
                    seen = await _rows(uow.conn, table)
                    assert seen and set(seen) == {tenant}, table
    # Writing another tenant's rows under one's own context is refused, table by table.
    now = datetime.now(UTC)
    writes = {
        "agent_logins": ("INSERT INTO agent_logins VALUES ($1, $2, '$argon2id$x', $3, $3)",
                         (b, uuid.uuid4(), now)),
        "agent_sessions": ("INSERT INTO agent_sessions (tenant_id, id, agent_id, created_at, "
                           "last_used_at, expires_at) VALUES ($1, $2, $2, $3, $3, $3)",
                           (b, uuid.uuid4(), now)),
        "refresh_tokens": ("INSERT INTO refresh_tokens (tenant_id, token_hash, session_id, "
                           "issued_at, expires_at) VALUES ($1, $2, $3, $4, $4)",
                           (b, b"x" * 32, signed_a.session_id, now)),
        "agent_invitations": ("INSERT INTO agent_invitations (tenant_id, id, email, name, "
                              "role, token_hash, created_at, expires_at) VALUES "
                              "($1, $2, 'x@example.com', 'X', 'agent', $3, $4, $4)",
                              (b, uuid.uuid4(), b"y" * 32, now)),
    }
    assert set(writes) == set(TABLES)
    for table, (sql, args) in writes.items():
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with store.unit_of_work(a, OPERATOR) as uow:
                await uow.conn.execute(sql, *args)
        async with store.unit_of_work(a, OPERATOR) as uow:
            changed = await uow.conn.execute(f"UPDATE {table} SET tenant_id = tenant_id "
                                             "WHERE tenant_id = $1", b)
            assert changed == "UPDATE 0", table
    # The runtime role may never delete (sessions are revoked, not removed).
    for table in TABLES:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with store.unit_of_work(a, OPERATOR) as uow:
                await uow.conn.execute(f"DELETE FROM {table}")


async def test_a_refresh_token_relabelled_to_another_tenant_is_refused(store, make_tenant
                                                                       ) -> None:
    passwords = Passwords(memory_kib=1024, time_cost=1)
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    signed = await _signed_in(store, passwords, a)
    body = signed.refresh_token[4:]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    forged = "hdr_" + base64.urlsafe_b64encode(b.bytes + raw[16:]).decode().rstrip("=")
    with pytest.raises(NotAuthenticated):
        await sessions.refresh(store, LIFETIMES, forged, datetime.now(UTC))
    assert (await sessions.refresh(store, LIFETIMES, signed.refresh_token,
                                   datetime.now(UTC))).tenant_id == a
