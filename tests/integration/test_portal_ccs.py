"""Customers copied on a ticket, as the runtime role: a CC reads the ticket, its public
messages and its public events (the portal feed's read) by raw SQL and through the
portal's handlers, and replies or rates nothing; a contact who is neither reads none
of it; taking the CC off revokes it at once; a merged ticket's public messages are in
its target's thread for the target's readers; erasing a CC takes it off its tickets."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import asyncpg
import pytest

from domain.ids import MessageId, TenantId, TicketId
from domain.ticket.commands import AddMessage, MergeTicket, OpenTicket
from domain.values import Rating, Requester, Visibility
from eventstore.store import EventStore
from handlers import portal
from handlers.erasure import EraseContact, erase_contact
from handlers.errors import Forbidden, Missing
from handlers.ticket_links import change_ccs, merge_ticket
from handlers.tickets import run_command
from migrations.runner import OWNER_ROLE
from tests.support.desk import ACTOR, CUSTOMER, agent

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
STAFF = agent(uuid.uuid4())


async def _ticket(store: EventStore, tenant: TenantId, email: str) -> tuple[TicketId, UUID]:
    """A ticket for ``email`` with a public reply and an internal note; (ticket, contact)."""
    tid = TicketId(uuid.uuid4())
    async with store.unit_of_work(tenant, ACTOR) as s:
        opened = await run_command(s, tid, OpenTicket(
            ticket_id=tid, subject=f"For {email}", body="It broke",
            requester=Requester(email=email), actor=CUSTOMER, at=AT))
        for visibility in (Visibility.PUBLIC, Visibility.INTERNAL):
            await run_command(s, tid, AddMessage(
                message_id=MessageId(uuid.uuid4()), body=f"{visibility} words",
                visibility=visibility, actor=STAFF, at=AT))
    contact = opened.ticket.requester.contact_id
    assert contact is not None
    return tid, contact


async def _copy(store: EventStore, tenant: TenantId, ticket: TicketId,
                add: list[Requester | UUID] | None = None, remove: list[str] | None = None
                ) -> list[UUID | None]:
    """Change the ticket's CCs as staff; the contacts of its CCs afterwards."""
    async with store.unit_of_work(tenant, ACTOR) as s:
        result = await change_ccs(s, ticket, add or [], remove or [], STAFF, AT)
    return [c.contact_id for c in result.ticket.ccs]


async def _reads(store: EventStore, tenant: TenantId, contact: UUID) -> dict[str, object]:
    """What raw SQL and the portal's handlers give ``contact``, acting as them."""
    async with store.unit_of_work(tenant, portal.customer_actor(contact), readonly=True) as s:
        assert await s.conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user") is False
        events = await s.read_tenant(0, 500)
        return {
            "tickets": {r["id"] for r in await s.conn.fetch("SELECT id FROM tickets")},
            "messages": sorted((r["ticket_id"], r["visibility"]) for r in await s.conn.fetch(
                "SELECT ticket_id, visibility FROM messages")),
            "listed": [r["id"] for r in await portal.own_tickets(s, contact, None, 10)],
            "events": [(e.stream_id, e.type) for e in events],
        }


async def test_a_cc_reads_the_ticket_and_its_public_messages_until_taken_off(
        store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    ticket, ann = await _ticket(store, tenant, "ann@example.com")
    _, dora = await _ticket(store, tenant, "dora@example.com")
    carl = (await _copy(store, tenant, ticket, [Requester(email="carl@example.com")]))[0]
    assert carl is not None  # an e-mail copied is linked to a contact made for it

    seen = await _reads(store, tenant, carl)
    assert seen["tickets"] == {ticket} and seen["listed"] == [ticket]
    assert seen["messages"] == [(ticket, "public"), (ticket, "public")]
    # The portal feed's read: the opening and the public reply; no note, no CC change.
    assert seen["events"] == [(ticket, "TicketOpened"), (ticket, "MessageAdded")]
    async with store.unit_of_work(tenant, portal.customer_actor(carl)) as s:
        shown = await portal.own_ticket(s, carl, ticket)
        assert shown["ccs"] == [{"email": "carl@example.com", "name": None}]
        assert [m["ticket_id"] for m in
                await portal.public_messages(s, carl, ticket, None, 10)] == [ticket] * 2
        # Only the requester replies and rates.
        with pytest.raises(Forbidden) as refused:
            await portal.reply(s, carl, ticket, MessageId(uuid.uuid4()), "me too", AT)
        assert refused.value.code == "copied_only"
        with pytest.raises(Forbidden):
            await portal.rate(s, carl, ticket, Rating.GOOD, None, AT)

    # Dora is neither its requester nor a CC: nothing of it, by SQL or by the portal.
    other = await _reads(store, tenant, dora)
    assert ticket not in other["tickets"] and ticket not in other["listed"]
    assert not [m for m in other["messages"] if m[0] == ticket]  # type: ignore[attr-defined]
    async with store.unit_of_work(tenant, portal.customer_actor(dora), readonly=True) as s:
        with pytest.raises(Missing):
            await portal.own_ticket(s, dora, ticket)
        with pytest.raises(Missing):
            await portal.public_messages(s, dora, ticket, None, 10)
        # Its own ticket_contacts rows only.
        assert {r["contact_id"] for r in await s.conn.fetch(
            "SELECT contact_id FROM ticket_contacts")} == {dora}

    # The requester still reads and lists it as before.
    assert (await _reads(store, tenant, ann))["listed"] == [ticket]

    # Taken off: the next read finds nothing.
    assert await _copy(store, tenant, ticket, remove=["CARL@example.com"]) == []
    gone = await _reads(store, tenant, carl)
    assert gone == {"tickets": set(), "messages": [], "listed": [], "events": []}
    async with store.unit_of_work(tenant, portal.customer_actor(carl), readonly=True) as s:
        with pytest.raises(Missing):
            await portal.own_ticket(s, carl, ticket)


async def test_a_merged_tickets_public_messages_are_in_its_targets_thread(
        store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    target, ann = await _ticket(store, tenant, "ann@example.com")
    source, bob = await _ticket(store, tenant, "bob@example.com")
    carl = (await _copy(store, tenant, target, [Requester(email="carl@example.com")]))[0]
    assert carl is not None
    async with store.unit_of_work(tenant, ACTOR) as s:
        await merge_ticket(s, source, MergeTicket(into=target, actor=STAFF, at=AT))

    for reader in (ann, carl):
        seen = await _reads(store, tenant, reader)
        # The source's row stays out of sight; its public messages do not.
        assert seen["tickets"] == {target} and seen["listed"] == [target]
        assert seen["messages"] == sorted([(target, "public")] * 2 + [(source, "public")] * 2)
        async with store.unit_of_work(tenant, portal.customer_actor(reader), readonly=True) as s:
            thread = await portal.public_messages(s, reader, target, None, 10)
            assert sorted(m["ticket_id"] for m in thread) == sorted([target] * 2 + [source] * 2)
            # Paged, the thread is the same messages in one order.
            first = await portal.public_messages(s, reader, target, None, 3)
            last = first[-1]
            rest = await portal.public_messages(s, reader, target,
                                                (last["created_at"], last["id"]), 10)
            assert [m["id"] for m in [*first, *rest]] == [m["id"] for m in thread]
    # Bob, the source's requester, is now one of the target's CCs: he reads it too.
    listed = (await _reads(store, tenant, bob))["listed"]
    assert isinstance(listed, list) and set(listed) == {target, source}


async def test_erasing_a_cc_takes_it_off_its_tickets(store, make_tenant) -> None:
    tenant = (await make_tenant()).tenant_id
    ticket, ann = await _ticket(store, tenant, "ann@example.com")
    carl, dan = await _copy(store, tenant, ticket, [Requester(email="carl@example.com"),
                                                    Requester(email="dan@example.com")])
    assert carl is not None and dan is not None
    async with store.unit_of_work(tenant, ACTOR) as s:
        await erase_contact(s, EraseContact(contact_id=carl, reason="asked", by=STAFF, at=AT))

    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        rows = await s.conn.fetch("SELECT contact_id, role FROM ticket_contacts "
                                  "WHERE ticket_id = $1 ORDER BY role", ticket)
        assert {(r["contact_id"], r["role"]) for r in rows} == {(ann, "requester"),
                                                              (dan, "cc")}
        assert await s.conn.fetchval("SELECT count(*) FROM ticket_contacts "
                                     "WHERE contact_id = $1", carl) == 0
        state = await s.conn.fetchval("SELECT state_json -> 'ccs' FROM tickets WHERE id = $1",
                                      ticket)
        view = await s.conn.fetchval("SELECT view -> 'ccs' FROM tickets WHERE id = $1", ticket)
        versions = await s.conn.fetch("SELECT view::text AS v FROM ticket_versions "
                                      "WHERE id = $1", ticket)
    assert [c["contact_id"] for c in state] == [str(dan)]
    assert [c["email"] for c in view] == ["dan@example.com"]
    assert versions and not any("carl@example.com" in r["v"] for r in versions)
    assert (await _reads(store, tenant, carl))["tickets"] == set()
    assert (await _reads(store, tenant, dan))["tickets"] == {ticket}
    # The ticket takes commands as before.
    assert await _copy(store, tenant, ticket, remove=["dan@example.com"]) == []


async def test_the_migration_backfills_the_rows_the_write_path_writes(
        store, make_tenant, db) -> None:
    """Migration 0900's backfill, run again on tickets written by the write path (their
    rows taken away first), gives back exactly the rows the write path wrote."""
    tenant = (await make_tenant()).tenant_id
    target, _ = await _ticket(store, tenant, "ann@example.com")
    source, _ = await _ticket(store, tenant, "bob@example.com")
    await _copy(store, tenant, target, [Requester(email="carl@example.com")])
    await _copy(store, tenant, source, [Requester(email="dan@example.com")])
    async with store.unit_of_work(tenant, ACTOR) as s:
        await merge_ticket(s, source, MergeTicket(into=target, actor=STAFF, at=AT))
    query = "SELECT ticket_id, contact_id, role FROM ticket_contacts ORDER BY 1, 2, 3"
    sql = (Path(__file__).parents[2] / "migrations" / "sql" / "0900_ticket_contacts.sql"
           ).read_text()
    backfill = sql[sql.index("DO $$"):]
    admin = await asyncpg.connect(db.admin_url)
    try:
        written = [tuple(r) for r in await admin.fetch(query)]
        # Each requester; Dan on the source, and Carl, Bob and Dan (the merge's) on the
        # target; the target's four readers of the merged source.
        assert sorted(r for _, _, r in written) == ["cc"] * 4 + ["merged"] * 4 + [
            "requester"] * 2
        async with admin.transaction():
            await admin.execute("DELETE FROM ticket_contacts")
            await admin.execute(f"SET LOCAL ROLE {OWNER_ROLE}")
            await admin.execute(backfill)
        assert [tuple(r) for r in await admin.fetch(query)] == written
    finally:
        await admin.close()
