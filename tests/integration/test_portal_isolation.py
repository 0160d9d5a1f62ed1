"""Row-level security for the customer portal, as the runtime role: a transaction
acting as a customer sees only that contact's tickets and their public messages, by
raw SQL, whatever the route would ask; and the portal's tables are tenant tables."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from domain.ids import MessageId, TenantId, TicketId
from domain.ticket.commands import AddMessage, ChangePriority, ChangeState, OpenTicket
from domain.values import Priority, Requester, TicketState, Visibility
from eventstore.store import EventStore
from handlers import portal, sessions
from handlers.credentials import Passwords
from handlers.sessions import Lifetimes
from handlers.tickets import run_command
from tests.support.desk import ACTOR, CUSTOMER, agent

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
TABLES = ("contact_logins", "contact_password_links", "contact_sessions", "refresh_tokens")
LIFETIMES = Lifetimes(refresh=timedelta(days=30), session=timedelta(days=90))


async def _ticket(store: EventStore, tenant: TenantId, email: str) -> tuple[TicketId, uuid.UUID]:
    """A ticket for ``email`` with a public reply and an internal note; (ticket, contact)."""
    tid = TicketId(uuid.uuid4())
    async with store.unit_of_work(tenant, ACTOR) as s:
        opened = await run_command(s, tid, OpenTicket(
            ticket_id=tid, subject="Help", body="It broke", requester=Requester(email=email),
            actor=CUSTOMER, at=AT))
        for visibility in (Visibility.PUBLIC, Visibility.INTERNAL):
            await run_command(s, tid, AddMessage(
                message_id=MessageId(uuid.uuid4()), body=f"{visibility} words",
                visibility=visibility, actor=agent(uuid.uuid4()), at=AT))
    contact = opened.ticket.requester.contact_id
    assert contact is not None
    return tid, contact


async def test_raw_sql_as_a_customer_sees_neither_notes_nor_other_contacts_tickets(
        store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    mine, me = await _ticket(store, tenant, "ann@example.com")
    theirs, _ = await _ticket(store, tenant, "bob@example.com")

    # Staff (any other actor) see both tickets and all six messages.
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT current_user") != "postgres"
        assert await s.conn.fetchval("SELECT count(*) FROM tickets") == 2
        assert await s.conn.fetchval("SELECT count(*) FROM messages") == 6

    async with store.unit_of_work(tenant, portal.customer_actor(me), readonly=True) as s:
        assert await s.conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user") is False
        assert [r["id"] for r in await s.conn.fetch("SELECT id FROM tickets")] == [mine]
        assert await s.conn.fetchval("SELECT count(*) FROM tickets WHERE id = $1",
                                     theirs) == 0
        rows = await s.conn.fetch("SELECT ticket_id, visibility FROM messages")
        # The opening message and the public reply; no internal note, nothing of Bob's.
        assert {(r["ticket_id"], r["visibility"]) for r in rows} == {(mine, "public")}
        assert len(rows) == 2

    # Writing is scoped as well: a customer cannot touch another contact's ticket, nor
    # slip an internal note onto their own.
    async with store.unit_of_work(tenant, portal.customer_actor(me)) as s:
        assert await s.conn.execute("UPDATE tickets SET subject = 'x' WHERE id = $1",
                                    theirs) == "UPDATE 0"
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with store.unit_of_work(tenant, portal.customer_actor(me)) as s:
            await s.conn.execute(
                "INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, "
                "author_kind, author_id, body, created_at) VALUES "
                "($1, $2, $3, 9, 'internal', 'customer', 'x', 'x', now())",
                tenant, uuid.uuid4(), mine)


async def test_raw_sql_as_a_customer_reads_only_public_events_of_own_tickets(
        store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    mine, me = await _ticket(store, tenant, "ann@example.com")
    theirs, _ = await _ticket(store, tenant, "bob@example.com")
    staff = agent(uuid.uuid4())
    async with store.unit_of_work(tenant, ACTOR) as s:
        await run_command(s, mine, ChangeState(to=TicketState.PENDING, actor=staff, at=AT))
        await run_command(s, mine, ChangePriority(priority=Priority.HIGH, actor=staff, at=AT))
    passwords = Passwords(memory_kib=1024, time_cost=1)
    async with store.unit_of_work(tenant, ACTOR) as s:
        link = await portal.issue_link(s, me, AT, timedelta(hours=1))
    await portal.set_password(store, passwords, link["token"], "a good password", AT)
    await sessions.sign_in(store, passwords, LIFETIMES, sessions.SignIn(
        tenant, "ann@example.com", "a good password", AT), portal.PORTAL)

    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        every = await s.conn.fetch("SELECT stream_id, type FROM events")
    streams = {r["stream_id"] for r in every}
    assert {mine, theirs, tenant} <= streams and len(streams) > 3  # contacts' streams too

    async with store.unit_of_work(tenant, portal.customer_actor(me), readonly=True) as s:
        assert await s.conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user") is False
        rows = await s.conn.fetch("SELECT stream_id, type, data ->> 'visibility' AS v "
                                  "FROM events ORDER BY seq")
        # Opened, the public reply, the state change: not the internal note, not the
        # priority (staff's), nothing of Bob's ticket, no contact or tenant stream.
        assert [(r["stream_id"], r["type"], r["v"]) for r in rows] == [
            (mine, "TicketOpened", None), (mine, "MessageAdded", "public"),
            (mine, "StateChanged", None)]
        for stream in (theirs, tenant, me):
            assert await s.conn.fetchval("SELECT count(*) FROM events WHERE stream_id = $1",
                                         stream) == 0
        assert await s.conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'MessageAdded' "
            "AND data ->> 'visibility' = 'internal'") == 0

    # Appending as the customer still counts every version of the stream (the note and
    # the priority it cannot read), and the appending mark is gone afterwards.
    async with store.unit_of_work(tenant, portal.customer_actor(me)) as s:
        await portal.reply(s, me, mine, MessageId(uuid.uuid4()), "Thanks", AT)
        await s.flush()
        assert await s.conn.fetchval("SELECT current_setting('app.appending', true)") == ""
        # Its reply, and the pending ticket reopened by it.
        assert [r["type"] for r in await s.conn.fetch("SELECT type FROM events ORDER BY seq")
                ][3:] == ["MessageAdded", "StateChanged"]
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        versions = [r["version"] for r in await s.conn.fetch(
            "SELECT version FROM events WHERE stream_id = $1 ORDER BY version", mine)]
    assert versions == list(range(1, 8))


async def test_every_portal_table_is_isolated_by_tenant(store, make_tenant, db) -> None:
    passwords = Passwords(memory_kib=1024, time_cost=1)
    tenants = [(await make_tenant(name)).tenant_id for name in ("A", "B")]
    for tenant in tenants:
        _, contact = await _ticket(store, tenant, "ann@example.com")
        async with store.unit_of_work(tenant, ACTOR) as s:
            link = await portal.issue_link(s, contact, AT, timedelta(hours=1))
        await portal.set_password(store, passwords, link["token"], "a good password", AT)
        async with store.unit_of_work(tenant, ACTOR) as s:
            await portal.issue_link(s, contact, AT, timedelta(hours=1))  # unspent
        await sessions.sign_in(store, passwords, LIFETIMES, sessions.SignIn(
            tenant, "ann@example.com", "a good password", AT), portal.PORTAL)
    a, b = tenants
    conn = await asyncpg.connect(db.runtime_url)
    try:
        for table in TABLES:
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
        for tenant in tenants:
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                                   str(tenant))
                for table in TABLES:
                    seen = {r[0] for r in await conn.fetch(f"SELECT tenant_id FROM {table}")}
                    assert seen == {tenant}, table
        contact_b = await _contact_of(conn, b)
        writes = {
            "contact_logins": "INSERT INTO contact_logins VALUES ($1, $2, '$argon2id$x', "
                              "now(), now())",
            "contact_password_links": "INSERT INTO contact_password_links (tenant_id, id, "
                                      "contact_id, token_hash, created_at, expires_at) "
                                      "VALUES ($1, gen_random_uuid(), $2, 'x', now(), now())",
            "contact_sessions": "INSERT INTO contact_sessions (tenant_id, id, contact_id, "
                                "created_at, expires_at) VALUES ($1, gen_random_uuid(), $2, "
                                "now(), now())",
        }
        # A portal refresh token: $2 is one of B's portal sessions here, not a contact.
        writes["refresh_tokens"] = (
            "INSERT INTO refresh_tokens (tenant_id, token_hash, contact_session_id, "
            "issued_at, expires_at) VALUES ($1, 'x', $2, now(), now())")
        session_b = await _portal_session_of(conn, b)
        assert set(writes) == set(TABLES)
        for table, sql in writes.items():
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with conn.transaction():
                    await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(a))
                    await conn.execute(sql, b, session_b if table == "refresh_tokens"
                                       else contact_b)
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(a))
                assert await conn.execute(f"UPDATE {table} SET tenant_id = tenant_id "
                                          "WHERE tenant_id = $1", b) == "UPDATE 0"
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(f"DELETE FROM {table}")  # never granted
    finally:
        await conn.close()


async def _contact_of(conn: asyncpg.Connection, tenant: TenantId) -> uuid.UUID:
    async with conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(tenant))
        found: uuid.UUID = await conn.fetchval("SELECT id FROM contacts")
    return found


async def _portal_session_of(conn: asyncpg.Connection, tenant: TenantId) -> uuid.UUID:
    async with conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(tenant))
        found: uuid.UUID = await conn.fetchval("SELECT contact_session_id FROM refresh_tokens")
    return found
