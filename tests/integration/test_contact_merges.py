"""A merge and the openings of tickets for the merged contact's e-mail, at once: the
merge waits for the openings in flight and moves their tickets too, and an opening
that comes after it links to the survivor. A merge also ends the merged contact's
portal sessions, in its own transaction."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from domain.contact import ContactFields
from domain.ids import TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from handlers import contacts, portal, sessions
from handlers.credentials import Passwords
from handlers.errors import NotAuthenticated
from handlers.tickets import execute
from tests.support.desk import ACTOR

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)


def _open(email: str) -> OpenTicket:
    return OpenTicket(ticket_id=TicketId(uuid.uuid4()), subject="s", body="b",
                      requester=Requester(email=email),
                      actor=Actor(kind=ActorKind.AGENT, id="agent"), at=AT)


async def test_a_merge_takes_the_tickets_opened_while_it_waits(store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        ann = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="ann@example.com"), at=AT))
        bea = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="bea@example.com"), at=AT))

    async def merge() -> contacts.Merged:
        async with store.unit_of_work(t, ACTOR) as s:
            return await contacts.merge_contact(s, contacts.Merge(
                contact_id=ann.id, into=bea.id, at=AT))

    in_flight = _open("ANN@example.com")
    async with store.unit_of_work(t, ACTOR) as opener:
        opened = await execute(opener, in_flight.ticket_id, in_flight)
        assert opened.ticket.requester.contact_id == ann.id
        merging = asyncio.create_task(merge())
        done, _ = await asyncio.wait({merging}, timeout=0.5)
        assert not done, "the merge went ahead of a ticket being opened for its contact"
    merged = await merging
    assert merged.tickets_moved == 1

    after = _open("ann@example.com")
    async with store.unit_of_work(t, ACTOR) as s:
        later = await execute(s, after.ticket_id, after)
        assert later.ticket.requester.contact_id == bea.id
        rows = await s.conn.fetch("SELECT id, contact_id FROM tickets ORDER BY created_at")
    assert {r["id"]: r["contact_id"] for r in rows} == {in_flight.ticket_id: bea.id,
                                                        after.ticket_id: bea.id}


class _Undone(Exception):
    pass


async def test_a_merge_revokes_the_merged_contacts_portal_sessions_in_its_transaction(
        store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        ann = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="ann@example.com"), at=AT))
        bea = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="bea@example.com"), at=AT))
        link = await portal.issue_link(s, ann.id, AT, timedelta(hours=1))
    passwords = Passwords(memory_kib=1024, time_cost=1)
    await portal.set_password(store, passwords, link["token"], "a good password", AT)
    lifetimes = sessions.Lifetimes(refresh=timedelta(days=30), session=timedelta(days=90))
    signed = await sessions.sign_in(store, passwords, lifetimes, sessions.SignIn(
        t, "ann@example.com", "a good password", AT), portal.PORTAL)
    merge = contacts.Merge(contact_id=ann.id, into=bea.id, at=AT)

    # Inside the merge's transaction the session is revoked; undone with it, it is not.
    with pytest.raises(_Undone):
        async with store.unit_of_work(t, ACTOR) as s:
            await contacts.merge_contact(s, merge)
            assert await s.conn.fetchval(
                "SELECT revoked_reason FROM contact_sessions WHERE id = $1",
                signed.session_id) == "merged"
            raise _Undone
    assert await _session_open(store, t, signed.session_id, ann.id)

    async with store.unit_of_work(t, ACTOR) as s:
        await contacts.merge_contact(s, merge)
    assert not await _session_open(store, t, signed.session_id, ann.id)
    with pytest.raises(NotAuthenticated):
        await sessions.refresh(store, lifetimes, signed.refresh_token, AT, portal.PORTAL)
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        rows = await s.conn.fetch("SELECT type, data, actor_kind FROM events "
                                  "WHERE type IN ('ContactMerged', 'PortalSessionRevoked') "
                                  "ORDER BY seq")
    assert [(r["type"], r["actor_kind"]) for r in rows] == [
        ("ContactMerged", ACTOR.kind), ("PortalSessionRevoked", ACTOR.kind)]
    revoked = rows[1]["data"]
    assert (revoked["contact_id"], revoked["session_id"], revoked["reason"]) == (
        str(ann.id), str(signed.session_id), "merged")


async def _session_open(store, tenant, session_id, contact_id) -> bool:
    async with store.unit_of_work(tenant, portal.customer_actor(contact_id), readonly=True) as uow:
        return await portal.session_open(uow, session_id, contact_id, AT)
