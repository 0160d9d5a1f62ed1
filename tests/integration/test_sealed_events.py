"""Personal data on the write path: stored sealed (no plaintext in ``events``), read
back open through the store, hash chain intact; a ciphertext moved elsewhere is
reported and never shown."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import orjson

from domain.ids import MessageId, TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester, Visibility
from eventstore.store import EventStore
from handlers.tickets import PostMessage, execute, post_message
from tests.support.desk import ACTOR

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
SECRETS = ("Grace Hopper", "grace@example.com", "Refund for my COBOL licence",
           "my card ends 4242", "second reply about ledger 77")


async def _opened(store: EventStore, tenant: uuid.UUID) -> TicketId:
    ticket = TicketId(uuid.uuid4())
    command = OpenTicket(ticket_id=ticket, subject=SECRETS[2], body=SECRETS[3],
                         requester=Requester(email=SECRETS[1], name=SECRETS[0]),
                         actor=Actor(kind=ActorKind.AGENT, id="agent"), at=AT)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await execute(s, ticket, command)
    async with store.unit_of_work(tenant, ACTOR) as s:
        await post_message(s, PostMessage(
            ticket_id=ticket, message_id=MessageId(uuid.uuid4()), body=SECRETS[4],
            visibility=Visibility.PUBLIC, at=AT,
            author=Actor(kind=ActorKind.AGENT, id="agent")))
    return ticket


async def test_personal_fields_are_stored_sealed_and_read_open(store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    ticket = await _opened(store, t)
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        raw = await s.conn.fetch("SELECT type, data FROM events ORDER BY seq")
        events = await s.read_stream(ticket)
        report = await s.verify_chain()
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets")
        keys = await s.conn.fetchval("SELECT count(*) FROM data_keys")
    stored = orjson.dumps([dict(r) for r in raw])
    for secret in SECRETS:
        assert secret.encode() not in stored, secret
    assert report.ok and keys == 1
    opened, message = events[0].data, events[-1].data
    assert opened["subject"] == SECRETS[2] and opened["body"] == SECRETS[3]
    assert opened["requester"] == {"email": SECRETS[1], "name": SECRETS[0],
                                   "contact_id": str(contact)}
    assert message["body"] == SECRETS[4]
    # The contact's own event, sealed with the same contact's key.
    created = next(r["data"] for r in raw if r["type"] == "ContactCreated")
    assert created["email"]["subject"] == str(contact)


async def test_a_moved_ciphertext_is_reported_and_never_shown(store: EventStore, make_tenant,
                                                              db):
    t = (await make_tenant()).tenant_id
    ticket = await _opened(store, t)
    # Someone with the owner's rights copies the message's sealed body over the
    # ticket's subject (the events table refuses updates to the runtime role).
    owner = await asyncpg.connect(db.admin_url)
    try:
        await owner.execute("ALTER TABLE events DISABLE TRIGGER USER")
        await owner.execute(
            "UPDATE events o SET data = jsonb_set(o.data, '{subject}', m.data -> 'body') "
            "FROM events m WHERE o.type = 'TicketOpened' AND m.type = 'MessageAdded' "
            "AND m.stream_id = o.stream_id")
        await owner.execute("ALTER TABLE events ENABLE TRIGGER USER")
    finally:
        await owner.close()
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        events = await s.read_stream(ticket)
        broken = s.broken
        report = await s.verify_chain()
    assert events[0].data["subject"] == {"unreadable": True}
    assert SECRETS[4] not in orjson.dumps(events[0].data).decode()
    assert [(b.place.version, b.path) for b in broken] == [(1, ("subject",))]
    assert not report.ok  # and the chain says the event was altered
