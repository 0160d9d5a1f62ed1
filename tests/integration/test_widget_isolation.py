"""Row-level security for the embeddable widget, as the runtime role: a transaction
acting for a widget session sees only the tickets that session opened (not the
contact's others) and their public messages, by raw SQL, whatever the route would
ask; and the widget's tables are tenant tables."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from domain.ids import MessageId, TenantId, TicketId
from domain.ticket.commands import AddMessage
from domain.values import Visibility
from eventstore.store import EventStore
from handlers import widget
from handlers.erasure import EraseContact, erase_contact
from handlers.tickets import run_command
from tests.support.desk import ACTOR, agent

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
ORIGIN = "https://shop.example.com"
TABLES = ("widget_sessions", "widget_tickets")


async def _session_ticket(store: EventStore, tenant: TenantId, email: str
                          ) -> tuple[uuid.UUID, TicketId]:
    """A widget session for ``email`` and a ticket it opened, which staff answer
    publicly and note internally; (session, ticket)."""
    opened = await widget.open_session(store, tenant, email, ORIGIN, AT, timedelta(hours=1))
    tid = TicketId(uuid.uuid4())
    async with store.unit_of_work(tenant, widget.widget_actor(opened.session_id)) as s:
        await widget.open_ticket(s, opened.session_id, tid, "Help", "It broke", AT)
    async with store.unit_of_work(tenant, ACTOR) as s:
        for visibility in (Visibility.PUBLIC, Visibility.INTERNAL):
            await run_command(s, tid, AddMessage(
                message_id=MessageId(uuid.uuid4()), body=f"{visibility} words",
                visibility=visibility, actor=agent(uuid.uuid4()), at=AT))
    return opened.session_id, tid


async def test_raw_sql_as_a_widget_session_sees_only_its_own_tickets(store,
                                                                     make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    me, mine = await _session_ticket(store, tenant, "ann@example.com")
    # Another session of the same e-mail (the same contact) and its ticket.
    other, theirs = await _session_ticket(store, tenant, "ann@example.com")

    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM tickets") == 2
        assert await s.conn.fetchval("SELECT count(DISTINCT contact_id) FROM tickets") == 1
        assert await s.conn.fetchval("SELECT count(*) FROM messages") == 6

    async with store.unit_of_work(tenant, widget.widget_actor(me), readonly=True) as s:
        assert await s.conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user") is False
        assert [r["id"] for r in await s.conn.fetch("SELECT id FROM tickets")] == [mine]
        rows = await s.conn.fetch("SELECT ticket_id, visibility FROM messages")
        # The opening message and the public reply: no note, nothing of the other's.
        assert {(r["ticket_id"], r["visibility"]) for r in rows} == {(mine, "public")}
        assert len(rows) == 2
        assert [r["id"] for r in await s.conn.fetch("SELECT id FROM widget_sessions")] == [me]
        assert [r["ticket_id"] for r in
                await s.conn.fetch("SELECT ticket_id FROM widget_tickets")] == [mine]

    # Writing is scoped as well: no other session's ticket, no internal note on its
    # own, and no claiming another session's ticket.
    async with store.unit_of_work(tenant, widget.widget_actor(me)) as s:
        assert await s.conn.execute("UPDATE tickets SET subject = 'x' WHERE id = $1",
                                    theirs) == "UPDATE 0"
        assert await s.conn.execute("UPDATE widget_sessions SET revoked_at = now() "
                                    "WHERE id = $1", other) == "UPDATE 0"
    bad = {
        "note": ("INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, "
                 "author_kind, author_id, body, created_at) VALUES "
                 "($1, $2, $3, 9, 'internal', 'customer', 'x', 'x', now())",
                 (tenant, uuid.uuid4(), mine)),
        "claim": ("INSERT INTO widget_tickets VALUES ($1, $2, $3, now())",
                  (tenant, other, theirs)),
    }
    for name, (sql, args) in bad.items():
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            async with store.unit_of_work(tenant, widget.widget_actor(me)) as s:
                await s.conn.execute(sql, *args)
            pytest.fail(f"{name} was let through")


async def test_every_widget_table_is_isolated_by_tenant(store, make_tenant, db) -> None:
    tenants = [(await make_tenant(name)).tenant_id for name in ("A", "B")]
    held = {t: await _session_ticket(store, t, "ann@example.com") for t in tenants}
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
        session_b, ticket_b = held[b]
        writes = {
            "widget_sessions": ("INSERT INTO widget_sessions (tenant_id, id, email, origin, "
                                "created_at, expires_at) VALUES ($1, gen_random_uuid(), "
                                "'x@example.com', 'https://x.example', now(), "
                                "now() + interval '1 hour')", (b,)),
            "widget_tickets": ("INSERT INTO widget_tickets VALUES ($1, $2, $3, now())",
                               (b, session_b, ticket_b)),
        }
        assert set(writes) == set(TABLES)
        for table, (sql, args) in writes.items():
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with conn.transaction():
                    await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(a))
                    await conn.execute(sql, *args)
            if table == "widget_sessions":
                async with conn.transaction():
                    await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                                       str(a))
                    assert await conn.execute(f"UPDATE {table} SET tenant_id = tenant_id "
                                              "WHERE tenant_id = $1", b) == "UPDATE 0"
            else:  # a session's tickets are only ever added to
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await conn.execute(f"UPDATE {table} SET created_at = now()")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute(f"DELETE FROM {table}")  # never granted
    finally:
        await conn.close()


async def test_erasing_the_contact_ends_its_widget_sessions_and_blanks_their_email(
        store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    opened, _ = await _session_ticket(store, tenant, "Ann@example.com")
    typed = await widget.open_session(store, tenant, "ann@EXAMPLE.com", ORIGIN, AT,
                                      timedelta(hours=1))
    kept = await widget.open_session(store, tenant, "bob@example.com", ORIGIN, AT,
                                     timedelta(hours=1))
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets")
    async with store.unit_of_work(tenant, ACTOR) as s:
        await erase_contact(s, EraseContact(contact_id=contact, reason="asked",
                                            by=agent(uuid.uuid4()), at=AT))
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        rows = {r["id"]: (r["email"], r["revoked_at"]) for r in
                await s.conn.fetch("SELECT id, email, revoked_at FROM widget_sessions")}
    assert rows[opened] == ("", AT) and rows[typed.session_id] == ("", AT)
    assert rows[kept.session_id] == ("bob@example.com", None)
