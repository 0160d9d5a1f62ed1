"""A merge and the openings of tickets for the merged contact's e-mail, at once: the
merge waits for the openings in flight and moves their tickets too, and an opening
that comes after it links to the survivor."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from domain import Actor, ActorKind, OpenTicket, Requester
from domain.contact import ContactFields
from domain.ids import TicketId
from handlers import contacts
from handlers.tickets import execute
from tests.support.desk import ACTOR

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)


def _open(email: str) -> OpenTicket:
    return OpenTicket(ticket_id=TicketId(uuid.uuid4()), subject="s", body="b",
                      requester=Requester(email=email),
                      actor=Actor(kind=ActorKind.AGENT, id="agent"), at=AT)


async def test_a_merge_takes_the_tickets_opened_while_it_waits(store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.session(t, ACTOR) as s:
        ann = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="ann@example.com"), at=AT))
        bea = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="bea@example.com"), at=AT))

    async def merge() -> contacts.Merged:
        async with store.session(t, ACTOR) as s:
            return await contacts.merge_contact(s, contacts.Merge(
                contact_id=ann.id, into=bea.id, at=AT))

    in_flight = _open("ANN@example.com")
    async with store.session(t, ACTOR) as opener:
        opened = await execute(opener, in_flight.ticket_id, in_flight)
        assert opened.ticket.requester.contact_id == ann.id
        merging = asyncio.create_task(merge())
        done, _ = await asyncio.wait({merging}, timeout=0.5)
        assert not done, "the merge went ahead of a ticket being opened for its contact"
    merged = await merging
    assert merged.tickets_moved == 1

    after = _open("ann@example.com")
    async with store.session(t, ACTOR) as s:
        later = await execute(s, after.ticket_id, after)
        assert later.ticket.requester.contact_id == bea.id
        rows = await s.conn.fetch("SELECT id, contact_id FROM tickets ORDER BY created_at")
    assert {r["id"]: r["contact_id"] for r in rows} == {in_flight.ticket_id: bea.id,
                                                        after.ticket_id: bea.id}
