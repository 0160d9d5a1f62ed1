"""Data keys under row-level security, as the runtime role: one tenant never reads,
makes or erases another's keys; an erased subject's key is gone and stays gone. A
rotation of the key-encryption key re-wraps the keys only, in batches, and resumes
where it stopped; a wrong key-encryption key is a clear refusal."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from api.cli.keys import rotate_tenant
from domain.ids import TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.keys import Keyring, SubjectErased, WrongDataKey, kek_census
from eventstore.store import EventStore
from handlers.tickets import execute
from tests.support.desk import ACTOR

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
RING = Keyring(os.urandom(32))


async def test_keys_are_made_once_kept_wrapped_and_read_back(store: EventStore, make_tenant):
    a = (await make_tenant("A")).tenant_id
    subject = uuid.uuid4()
    async with store.unit_of_work(a, ACTOR) as s:
        key = await RING.take(s.conn, a, subject)
    async with store.unit_of_work(a, ACTOR) as s:
        assert await RING.take(s.conn, a, subject) == key
        assert await RING.read(s.conn, a, [subject]) == {subject: key}
        stored = bytes(await s.conn.fetchval("SELECT wrapped FROM data_keys"))
    assert key not in stored and len(stored) == 60
    # Under another key-encryption key the wrapped key does not open.
    with pytest.raises(WrongDataKey):
        Keyring(os.urandom(32)).unwrap(a, subject, stored)
    # Nor for another subject: a wrapped key copied onto another row is useless.
    with pytest.raises(WrongDataKey):
        RING.unwrap(a, uuid.uuid4(), stored)


async def test_one_tenant_never_sees_or_erases_anothers_keys(store: EventStore, make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    subject = uuid.uuid4()
    async with store.unit_of_work(a, ACTOR) as s:
        key = await RING.take(s.conn, a, subject)
    async with store.unit_of_work(b, ACTOR) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM data_keys") == 0
        assert await RING.read(s.conn, a, [subject]) == {subject: None}
        assert await s.conn.execute("UPDATE data_keys SET wrapped = NULL, "
                                    "erased_at = now()") == "UPDATE 0"
        # The same subject id in tenant B is another subject with another key.
        assert await RING.take(s.conn, b, subject) != key
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # WITH CHECK
            await s.conn.execute("INSERT INTO data_keys (tenant_id, subject_id, wrapped) "
                                 "VALUES ($1, $2, $3)", a, uuid.uuid4(), bytes(60))
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # no DELETE grant
            await s.conn.execute("DELETE FROM data_keys")
    async with store.unit_of_work(b, ACTOR) as s:
        await RING.erase(s.conn, b, subject)
    async with store.unit_of_work(a, ACTOR) as s:
        assert await RING.read(s.conn, a, [subject]) == {subject: key}


async def test_an_erased_subject_gets_no_new_key(store: EventStore, make_tenant):
    a = (await make_tenant("A")).tenant_id
    subject, never = uuid.uuid4(), uuid.uuid4()
    async with store.unit_of_work(a, ACTOR) as s:
        await RING.take(s.conn, a, subject)
    async with store.unit_of_work(a, ACTOR) as s:
        await RING.erase(s.conn, a, subject)
        await RING.erase(s.conn, a, never)  # erasing before any key: a tombstone too
    async with store.unit_of_work(a, ACTOR) as s:
        assert await RING.read(s.conn, a, [subject, never]) == {subject: None, never: None}
        for erased in (subject, never):
            with pytest.raises(SubjectErased):
                await RING.take(s.conn, a, erased)
        row = await s.conn.fetchrow("SELECT wrapped, erased_at FROM data_keys "
                                    "WHERE subject_id = $1", subject)
    assert row["wrapped"] is None and row["erased_at"] is not None


async def _opened(store: EventStore, tenant: uuid.UUID, who: str) -> TicketId:
    """A ticket of its own contact (``who``), subject and body naming them."""
    ticket = TicketId(uuid.uuid4())
    async with store.unit_of_work(tenant, ACTOR) as s:
        await execute(s, ticket, OpenTicket(
            ticket_id=ticket, subject=f"subject of {who}", body=f"body of {who}",
            requester=Requester(email=f"{who}@example.com", name=who),
            actor=Actor(kind=ActorKind.AGENT, id="agent"), at=AT))
    return ticket


async def _read(store: EventStore, tenant: uuid.UUID, ticket: TicketId) -> object:
    async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
        [event] = await s.read_stream(ticket)
        assert s.broken == []
    return event.data


async def test_rotation_rewraps_the_keys_only_and_resumes_where_it_stopped(pool, make_tenant):
    old, new = os.urandom(32), os.urandom(32)
    new_fp, old_fp = Keyring(new).fingerprint, Keyring(old).fingerprint
    before = EventStore(pool, keyring=Keyring(old))
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    tickets = {t: [await _opened(before, t, f"p{i}") for i in range(4)] for t in (a, b)}
    # One contact of A erased: its tombstone is left as it is.
    async with before.unit_of_work(a, ACTOR) as s:
        erased = await s.conn.fetchval("SELECT contact_id FROM tickets WHERE id = $1",
                                       tickets[a][3])
        await Keyring(old).erase(s.conn, a, erased)
    expected = {t: [await _read(before, t, x) for x in xs] for t, xs in tickets.items()}
    assert expected[a][0]["subject"] == "subject of p0"  # type: ignore[index]
    assert expected[a][3]["subject"] == {"erased": True}  # type: ignore[index]
    async with pool.acquire() as conn:
        events_before = [tuple(r) for r in await conn.fetch(
            "SELECT seq, data, hash FROM events ORDER BY seq")]

    # The new key alone does not open what the old one wrapped: a clear refusal.
    with pytest.raises(WrongDataKey, match="DATA_KEY"):
        await _read(EventStore(pool, keyring=Keyring(new)), a, tickets[a][1])

    rotating = EventStore(pool, keyring=Keyring(new, old))

    class Crash(Exception):
        pass

    def crash(_tenant: uuid.UUID, _n: int) -> None:
        raise Crash

    # Stopped after its first batch of one key (a crash): that batch is committed, the
    # rest is still under the old key, and reads go on through a keyring with both.
    with pytest.raises(Crash):
        await rotate_tenant(rotating, a, batch=1, progress=crash)
    async with pool.acquire() as conn:
        assert await kek_census(conn) == {new_fp: 1, old_fp: 6}
    assert [await _read(rotating, a, x) for x in tickets[a]] == expected[a]
    # An append meanwhile is wrapped by the new key.
    tickets[b].append(await _opened(rotating, b, "late"))
    expected[b].append(await _read(rotating, b, tickets[b][-1]))

    # Run again: it goes on where it stopped; once more: nothing left to do.
    assert await rotate_tenant(rotating, a, batch=1) == 2
    assert await rotate_tenant(rotating, b, batch=3) == 4
    assert await rotate_tenant(rotating, a) == await rotate_tenant(rotating, b) == 0
    async with pool.acquire() as conn:
        assert await kek_census(conn) == {new_fp: 8}
        events_after = [tuple(r) for r in await conn.fetch(
            "SELECT seq, data, hash FROM events ORDER BY seq")]
    # No event was rewritten.
    assert events_after[:len(events_before)] == events_before

    # The new key alone reads back everything as it was; the old one opens nothing.
    after = EventStore(pool, keyring=Keyring(new))
    for t, xs in tickets.items():
        assert [await _read(after, t, x) for x in xs] == expected[t]
    with pytest.raises(WrongDataKey):
        await _read(EventStore(pool, keyring=Keyring(old)), b, tickets[b][0])
