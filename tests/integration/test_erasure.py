"""Erasing a contact: no byte of its personal data left in a dump of the whole
database, the chain verifying online and offline, the events reading as erased, and
commands on its tickets either erased with it or refused."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import pytest

from domain.field_definitions import DefineField
from domain.fields import FieldType
from domain.ids import MessageId, TicketId
from domain.mapper import from_stored
from domain.ticket import fold
from domain.ticket.commands import ChangeState, OpenTicket
from domain.values import Actor, ActorKind, Requester, TicketState, Visibility
from eventstore.export import event_line, header_line, verify_lines
from eventstore.keys import SubjectErased
from eventstore.store import EventStore
from handlers.contacts import Merge, merge_contact
from handlers.erasure import EraseContact, erase_contact
from handlers.errors import Gone
from handlers.requesters import requester_of_contact
from handlers.ticket_fields import SetFields, define_field, set_fields
from handlers.tickets import PostMessage, execute, post_message
from tests.support.desk import ACTOR
from tests.support.dump import dump

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent")
ADMIN = Actor(kind=ActorKind.AGENT, id="admin")
SECRETS = ("Grace Brewster Hopper", "grace.hopper@navy.example", "Refund for COBOL licence",
           "card ending 424242", "ledger seventy-seven reply")
ROUNDS = 30
OTHER = ("Alan Turing", "alan.turing@bletchley.example", "Enigma rotor question")


async def _ticket(store: EventStore, tenant: uuid.UUID, texts: tuple[str, ...],
                  reply: str | None) -> TicketId:
    ticket = TicketId(uuid.uuid4())
    async with store.unit_of_work(tenant, ACTOR) as s:
        await execute(s, ticket, OpenTicket(
            ticket_id=ticket, subject=texts[2], body=texts[3] if len(texts) > 3 else "hi",
            requester=Requester(email=texts[1], name=texts[0]), actor=AGENT, at=AT))
    if reply is not None:
        async with store.unit_of_work(tenant, ACTOR) as s:
            await post_message(s, _reply(ticket, reply))
    return ticket


def _reply(ticket: TicketId, body: str) -> PostMessage:
    return PostMessage(ticket_id=ticket, message_id=MessageId(uuid.uuid4()), body=body,
                       visibility=Visibility.PUBLIC, at=AT, author=AGENT)


async def _erase(store: EventStore, tenant: uuid.UUID, contact: uuid.UUID):
    async with store.unit_of_work(tenant, ACTOR) as s:
        return await erase_contact(s, EraseContact(contact_id=contact, reason="GDPR art. 17",
                                                   by=ADMIN, at=AT))


def _dump(db) -> bytes:
    return dump(db.admin_url)


async def test_after_erasure_a_dump_holds_none_of_the_contacts_data(store, make_tenant, db):
    t = (await make_tenant()).tenant_id
    ticket = await _ticket(store, t, SECRETS, SECRETS[4])
    kept = await _ticket(store, t, OTHER, None)
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", ticket)
        seen_before = await s.conn.fetchval("SELECT count(*) FROM events")
    before = _dump(db)
    assert SECRETS[1].encode() in before  # the read models hold it in the clear until now

    erased = await _erase(store, t, contact)
    # ContactCreated (4 fields: e-mail, name; phone and external id are null -> 2),
    # TicketOpened (subject, body, requester e-mail and name), MessageAdded (body).
    assert (erased.events, erased.fields, erased.tickets, erased.unsealed_events) == (3, 7, 1, 0)

    dump = _dump(db)
    for secret in SECRETS:
        assert secret.encode() not in dump, secret
    assert OTHER[1].encode() in dump  # another contact is untouched

    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert (await s.verify_chain()).ok
        events = await s.read_stream(ticket)
        assert events[0].data["subject"] == {"erased": True}
        assert events[0].data["requester"]["email"] == {"erased": True}
        assert events[-1].data["body"] == {"erased": True}
        assert (await s.read_stream(kept))[0].data["subject"] == OTHER[2]
        head_seq, head_hash = await s.head()
        recorded = await s.read_range(0, head_seq, 1000)
        row = await s.conn.fetchrow("SELECT subject, requester, view::text AS view "
                                    "FROM tickets WHERE id = $1", ticket)
        bodies = await s.conn.fetch("SELECT body FROM messages WHERE ticket_id = $1", ticket)
        last = (await s.read_stream(contact))[-1]
    assert len(recorded) == seen_before + 1 and last.type == "ContactErased"
    assert last.data["reason"] == "GDPR art. 17" and last.data["by"]["id"] == "admin"
    assert row["subject"] == "" and SECRETS[1] not in row["view"]
    assert {b["body"] for b in bodies} == {""}
    lines = [header_line(t, 1, head_seq, None, head_seq, head_hash),
             *(event_line(e) for e in recorded)]
    assert verify_lines(lines).ok

    # Nothing more is written about the contact; a second erasure says it is done.
    with pytest.raises(SubjectErased):
        async with store.unit_of_work(t, ACTOR) as s:
            await post_message(s, _reply(ticket, "after the erasure"))
    with pytest.raises(Gone):
        await _erase(store, t, contact)


async def test_a_reply_in_flight_commits_first_and_is_erased_too(store, make_tenant, db):
    t = (await make_tenant()).tenant_id
    ticket = await _ticket(store, t, SECRETS, None)
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", ticket)
    async with store.unit_of_work(t, ACTOR) as replier:
        await post_message(replier, _reply(ticket, SECRETS[4]))
        erasing = asyncio.create_task(_erase(store, t, contact))
        done, _ = await asyncio.wait({erasing}, timeout=0.5)
        assert not done, "the erasure went ahead of a reply holding the contact's key"
    erased = await erasing
    assert erased.events == 3  # the reply is among them
    assert SECRETS[4].encode() not in _dump(db)


async def test_a_reply_after_the_erasure_began_is_refused(store, make_tenant):
    t = (await make_tenant()).tenant_id
    ticket = await _ticket(store, t, SECRETS, None)
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", ticket)

    async def reply() -> None:
        async with store.unit_of_work(t, ACTOR) as s:
            await post_message(s, _reply(ticket, SECRETS[4]))

    async with store.unit_of_work(t, ACTOR) as s:
        await erase_contact(s, EraseContact(contact_id=contact, reason="asked", by=ADMIN,
                                            at=AT))
        replying = asyncio.create_task(reply())
        done, _ = await asyncio.wait({replying}, timeout=0.5)
        assert not done, "a reply went ahead of an erasure holding the ticket"
    with pytest.raises(SubjectErased):
        await replying
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM messages") == 1  # the opening


async def test_events_written_in_the_clear_before_sealing_are_counted_not_erased(
        store, pool, make_tenant, db):
    t = (await make_tenant()).tenant_id
    ticket = await _ticket(EventStore(pool), t, SECRETS, SECRETS[4])  # no keyring: plaintext
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", ticket)
    erased = await _erase(store, t, contact)
    assert (erased.events, erased.fields, erased.unsealed_events) == (0, 0, 3)
    dump = _dump(db)
    # The read models are redacted; the immutable events still hold the text
    # (docs/erasure.md says what to do about them).
    assert dump.count(SECRETS[4].encode()) == 1


async def test_values_of_fields_declared_personal_are_sealed_and_erased(store, make_tenant,
                                                                        db):
    """A text field declared ``personal`` holds the requester's data: its values are
    sealed in the events that carry them (the opening, a change of values), opened on
    read, erased with the contact, in the read models too; other fields stay as they
    are."""
    t = (await make_tenant()).tenant_id
    secrets = ("Ada Lovelace", "ada@engine.example", "Analytical engine fault",
               "passport X1234567", "home: 12 Difference Lane", "born 1815-12-10")
    async with store.unit_of_work(t, ACTOR) as s:
        for key, personal in (("passport", True), ("address", True), ("machine", False)):
            await define_field(s, DefineField(key=key, title=key, type=FieldType.TEXT,
                                              personal=personal, at=AT))
    ticket = TicketId(uuid.uuid4())
    async with store.unit_of_work(t, ACTOR) as s:
        await execute(s, ticket, OpenTicket(
            ticket_id=ticket, subject=secrets[2], body="it stopped", actor=AGENT, at=AT,
            requester=Requester(email=secrets[1], name=secrets[0]),
            fields={"passport": secrets[3], "machine": "engine no. 2"}))
    async with store.unit_of_work(t, ACTOR) as s:
        await set_fields(s, SetFields(ticket_id=ticket, at=AT, actor=AGENT, values={
            "address": secrets[4], "machine": "engine no. 3"}))
    async with store.unit_of_work(t, ACTOR) as s:
        await set_fields(s, SetFields(ticket_id=ticket, at=AT, actor=AGENT, values={
            "passport": secrets[5], "address": None}))

    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        raw = {r["version"]: r["data"] for r in await s.conn.fetch(
            "SELECT version, data FROM events WHERE stream_id = $1", ticket)}
        events = await s.read_stream(ticket)
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", ticket)
        row = await s.conn.fetchrow("SELECT fields FROM tickets WHERE id = $1", ticket)
    stored = str(raw)
    for secret in secrets[3:]:
        assert secret not in stored, secret
    assert raw[1]["fields"]["passport"]["subject"] == str(contact)
    assert raw[1]["fields"]["machine"] == "engine no. 2"  # not personal: in the clear
    assert raw[3]["values"]["address"] is None  # a cleared value says nothing
    assert events[0].data["fields"] == {"passport": secrets[3], "machine": "engine no. 2"}
    assert events[1].data["values"] == {"address": secrets[4], "machine": "engine no. 3"}
    assert events[2].data["values"] == {"passport": secrets[5], "address": None}
    assert row["fields"] == {"passport": secrets[5], "machine": "engine no. 3"}

    erased = await _erase(store, t, contact)
    # ContactCreated (2), TicketOpened (4 and passport), both changes (1 each).
    assert (erased.events, erased.fields) == (4, 9)
    dump = _dump(db)
    for secret in secrets:
        assert secret.encode() not in dump, secret
    assert b"engine no. 3" in dump
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert (await s.verify_chain()).ok
        events = await s.read_stream(ticket)
        row = await s.conn.fetchrow("SELECT fields, state_json, view::text AS view "
                                    "FROM tickets WHERE id = $1", ticket)
        assert s.broken == []
    assert events[0].data["fields"] == {"passport": {"erased": True}, "machine": "engine no. 2"}
    assert events[1].data["values"]["address"] == {"erased": True}
    assert events[2].data["values"] == {"passport": {"erased": True}, "address": None}
    assert row["fields"] == {"passport": "", "machine": "engine no. 3"}
    assert row["state_json"]["fields"] == row["fields"]
    # A replay (a rebuild, an as-of fold) sees the erased values as empty texts, as the
    # redacted rows hold them.
    folded = fold(from_stored(e.type, e.schema_version, e.data) for e in events)
    assert folded is not None and folded.fields == {"passport": "", "machine": "engine no. 3"}
async def _contact_of(store: EventStore, tenant: uuid.UUID, ticket: TicketId) -> uuid.UUID:
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        found: uuid.UUID = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1",
                                                 ticket)
    return found


async def _merge(store: EventStore, tenant: uuid.UUID, source: uuid.UUID,
                 into: uuid.UUID) -> None:
    async with store.unit_of_work(tenant, ACTOR) as s:
        await merge_contact(s, Merge(contact_id=source, into=into, at=AT))


async def test_erasing_a_merged_contact_reaches_its_tickets_moved_away(store, make_tenant, db):
    """A contact merged into another: its tickets now belong to the survivor. Erasing
    the merged contact takes from them what it wrote (the subject, its messages), and
    leaves what was written for the survivor after the merge."""
    t = (await make_tenant()).tenant_id
    moved = await _ticket(store, t, SECRETS, SECRETS[4])
    kept = await _ticket(store, t, OTHER, None)
    grace, alan = await _contact_of(store, t, moved), await _contact_of(store, t, kept)
    await _merge(store, t, grace, into=alan)
    later = "written after the merge, for Alan"
    async with store.unit_of_work(t, ACTOR) as s:
        await post_message(s, _reply(moved, later))

    erased = await _erase(store, t, grace)
    assert (erased.tickets, erased.events, erased.fields) == (1, 3, 7)

    dump = _dump(db)
    for secret in SECRETS:
        assert secret.encode() not in dump, secret
    assert OTHER[1].encode() in dump and later.encode() in dump
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert (await s.verify_chain()).ok
        row = await s.conn.fetchrow("SELECT subject, requester FROM tickets WHERE id = $1",
                                    moved)
        bodies = await s.conn.fetch("SELECT body FROM messages WHERE ticket_id = $1 "
                                    "ORDER BY version", moved)
        events = await s.read_stream(moved)
    assert row["subject"] == "" and row["requester"]["email"] == OTHER[1]
    assert [b["body"] for b in bodies] == ["", "", later]
    assert events[0].data["subject"] == {"erased": True}
    assert events[-1].data["body"] == later

    # The survivor erased in turn takes the rest; the merged contact's erasure stays
    # as it was.
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        when = await s.conn.fetchval("SELECT erased_at FROM data_keys WHERE subject_id = $1",
                                     grace)
    assert (await _erase(store, t, alan)).tickets == 2
    dump = _dump(db)
    assert OTHER[1].encode() not in dump and later.encode() not in dump
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT erased_at FROM data_keys WHERE subject_id = $1",
                                     grace) == when
        assert [e.type for e in await s.read_stream(grace)].count("ContactErased") == 1


async def test_erasing_a_contact_erases_the_contacts_merged_into_it(store, make_tenant, db):
    """Contacts merged into the erased one are the same person under other records:
    their keys, rows and tickets go with it."""
    t = (await make_tenant()).tenant_id
    alias = ("Amazing Grace", "amazing.grace@cobol.example", "Second ticket, other address",
             "nanosecond wire")
    mine = await _ticket(store, t, SECRETS, SECRETS[4])
    theirs = await _ticket(store, t, alias, None)
    grace, merged = await _contact_of(store, t, mine), await _contact_of(store, t, theirs)
    await _merge(store, t, merged, into=grace)

    erased = await _erase(store, t, grace)
    assert erased.tickets == 2

    dump = _dump(db)
    for secret in (*SECRETS, *alias):
        assert secret.encode() not in dump, secret
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert (await s.verify_chain()).ok
        history = await s.read_stream(merged)
    assert history[0].data["email"] == {"erased": True}
    assert history[-1].type == "ContactErased"
    with pytest.raises(Gone):
        await _erase(store, t, merged)


async def test_a_follow_up_in_flight_commits_first_and_is_erased_too(store, make_tenant):
    """A customer's message on a closed ticket, holding the ticket while the erasure
    waits for it, opens a follow-up ticket: the erasure finds it once the command has
    committed, and erases it too."""
    t = (await make_tenant()).tenant_id
    closed = await _ticket(store, t, SECRETS, None)
    async with store.unit_of_work(t, ACTOR) as s:
        for to in (TicketState.SOLVED, TicketState.CLOSED):
            await execute(s, closed, ChangeState(to=to, actor=AGENT, at=AT))
        contact = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1", closed)
    async with store.unit_of_work(t, ACTOR) as customer:
        await customer.conn.execute("SELECT 1 FROM tickets WHERE id = $1 FOR UPDATE", closed)
        erasing = asyncio.create_task(_erase(store, t, contact))
        done, _ = await asyncio.wait({erasing}, timeout=0.5)
        assert not done, "the erasure went ahead of a command holding the ticket"
        result = await post_message(customer, PostMessage(
            ticket_id=closed, message_id=MessageId(uuid.uuid4()), body=SECRETS[4],
            visibility=Visibility.PUBLIC, at=AT,
            author=Actor(kind=ActorKind.CUSTOMER, id=SECRETS[1])))
        assert result.follow_up is not None
    erased = await erasing
    assert erased.tickets == 2  # the follow-up is erased with the closed ticket
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT subject FROM tickets WHERE id = $1",
                                     result.follow_up.id) == ""


async def test_commands_racing_an_erasure_never_deadlock(store, make_tenant):
    """An erasure and commands on the contact's tickets (a reply, a state change, a
    customer's message on a closed ticket, which opens a follow-up), an opening by
    contact id and a merge of another contact into it, over many rounds: each commits
    or is refused as erased, and Postgres never has to abort one for a deadlock."""
    t = (await make_tenant()).tenant_id
    outcomes: dict[str, int] = {}
    for round_ in range(ROUNDS):
        # The erasure goes first, last or between the commands, round by round.
        await _race(store, t, f"racer{round_}@example.com", round_ % 6, outcomes)
    assert outcomes.get("refused", 0) > 0 and outcomes.get("reply", 0) > 0


async def _race(store: EventStore, t: uuid.UUID, email: str, place: int,
                outcomes: dict[str, int]) -> None:
    ticket = await _ticket(store, t, ("Racer", email, "Race subject"), None)
    closed = await _ticket(store, t, ("Racer", email, "Closed one"), None)
    async with store.unit_of_work(t, ACTOR) as s:
        for to in (TicketState.SOLVED, TicketState.CLOSED):
            await execute(s, closed, ChangeState(to=to, actor=AGENT, at=AT))
    contact = await _contact_of(store, t, ticket)
    other = await _contact_of(store, t, await _ticket(store, t, ("Other", f"other.{email}",
                                                                 "Other subject"), None))
    customer = Actor(kind=ActorKind.CUSTOMER, id=email)

    async def attempt(name: str, work) -> None:
        try:
            async with store.unit_of_work(t, ACTOR) as s:
                await work(s)
            outcomes[name] = outcomes.get(name, 0) + 1
        except (SubjectErased, Gone):
            outcomes["refused"] = outcomes.get("refused", 0) + 1

    commands = [
        attempt("reply", lambda s: post_message(s, _reply(ticket, "racing reply"))),
        attempt("state", lambda s: execute(s, ticket, ChangeState(
            to=TicketState.PENDING, actor=AGENT, at=AT))),
        attempt("follow-up", lambda s: post_message(s, PostMessage(
            ticket_id=closed, message_id=MessageId(uuid.uuid4()), body="again?",
            visibility=Visibility.PUBLIC, at=AT, author=customer))),
        attempt("opening", lambda s: _open_for(s, contact)),
        attempt("merge", lambda s: merge_contact(s, Merge(contact_id=other, into=contact,
                                                          at=AT))),
    ]
    commands.insert(place, _erase(store, t, contact))
    await asyncio.gather(*commands)


async def _open_for(s, contact: uuid.UUID) -> None:
    ticket = TicketId(uuid.uuid4())
    requester = await requester_of_contact(s, contact)
    await execute(s, ticket, OpenTicket(ticket_id=ticket, subject="By id", body="hi",
                                        requester=requester, actor=AGENT, at=AT))
