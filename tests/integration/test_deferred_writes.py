"""Writes a unit of work defers to its COMMIT's message (``UnitOfWork.write`` while
``deferring``), against real Postgres as the runtime role."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from domain.ids import TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.errors import ConcurrencyError, EventStoreError
from eventstore.literal import execute, prepare, prepared_name, statement
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from handlers.sealing import stored_event
from handlers.tickets import run_command
from scheduler import jobs

ACTOR = StoreActor("api_key", "key-1")
T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
NASTY = ["o'brien", "back\\slash\\", "'); DROP TABLE events; --", "$$ $x$ $e1234abcd$ \u00e9",
         "\u4e2d\U0001f600", "\n\t\r", "-- comment", "*/ /*", '{"a", "b"}', "ARRAY[", "$1",
         '"quoted" \\"', ""]


async def test_deferred_writes_go_with_the_commit_and_are_seen_after_it(db, make_tenant):
    t = (await make_tenant()).tenant_id
    sent: list[str] = []
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    store = EventStore(pool)
    try:
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        async with store.unit_of_work(t, ACTOR) as s:
            s.deferring = True
            await jobs.schedule(s.conn, t, "test.kind", T0, dedupe_key="k1",
                                payload={"a": "o'brien"}, write=s.write)
            await s.append(uuid.uuid4(), 0, [NewEvent("Thing", {"n": 1})])
            # Deferred: not in the table while the unit of work runs.
            assert await s.conn.fetchval(
                "SELECT count(*) FROM jobs WHERE dedupe_key = 'k1'") == 0
        await store.notifier.flush()
        async with store.unit_of_work(t) as s:
            row = await s.conn.fetchrow(
                "SELECT kind, run_at, payload FROM jobs WHERE dedupe_key = 'k1'")
    finally:
        await pool.close()
    assert (row["kind"], row["run_at"], row["payload"]) == ("test.kind", T0, {"a": "o'brien"})
    commit = [q for q in sent if q.endswith("\nCOMMIT;")]
    assert len(commit) == 1
    lines = commit[0].split("\n")
    # First use on this connection: both statements are prepared in the message...
    prepares = [line for line in lines if line.startswith("PREPARE ")]
    assert [p.split(" AS ")[1][:16] for p in prepares] == ["INSERT INTO jobs", "SELECT count(*) "]
    # ...then the write runs, then the append, which takes the tenant head lock last.
    executes = [line for line in lines if line.startswith("EXECUTE ")]
    assert [e.split("(")[0] for e in executes] == [p.split(" AS ")[0].replace("PREPARE", "EXECUTE")
                                                  for p in prepares]


async def test_a_connection_prepares_a_deferred_statement_once(db, make_tenant):
    t = (await make_tenant()).tenant_id
    sent: list[str] = []
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    store = EventStore(pool)
    try:
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        for n in range(8):  # past the five custom plans a prepared statement starts with
            async with store.unit_of_work(t, ACTOR) as s:
                s.deferring = True
                await jobs.schedule(s.conn, t, "test.kind", T0, dedupe_key=f"k{n}",
                                    payload={"n": n}, write=s.write)
                await s.append(uuid.uuid4(), 0, [NewEvent("Thing", {"n": n})])
        async with store.unit_of_work(t) as s:
            kept = await s.conn.fetchval("SELECT count(*) FROM jobs WHERE kind = 'test.kind'")
            held = await s.conn.fetchval(
                "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'hd\\_%'")
    finally:
        await pool.close()
    commits = [q for q in sent if q.endswith("\nCOMMIT;")]
    assert len(commits) == 8 and kept == 8 and held == 2
    assert commits[0].count("PREPARE ") == 2
    assert all("PREPARE " not in c for c in commits[1:])


async def test_after_a_failed_commit_the_connection_knows_what_it_prepared(db, make_tenant):
    t = (await make_tenant()).tenant_id
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    store = EventStore(pool)
    stream = uuid.uuid4()
    try:
        # The append fails at commit (a version that is not there) after the write's
        # PREPARE ran: the PREPARE outlives the rollback, and the next commit must not
        # prepare it again (which would fail), nor skip the one that never ran.
        with pytest.raises(ConcurrencyError):
            async with store.unit_of_work(t, ACTOR) as s:
                s.deferring = True
                await jobs.schedule(s.conn, t, "test.kind", T0, dedupe_key="f1",
                                    payload={}, write=s.write)
                await s.append(stream, 3, [NewEvent("Thing", {"n": 1})])
        async with store.unit_of_work(t, ACTOR) as s:
            s.deferring = True
            await jobs.schedule(s.conn, t, "test.kind", T0, dedupe_key="f2",
                                payload={}, write=s.write)
            await s.append(stream, 0, [NewEvent("Thing", {"n": 1})])
        async with store.unit_of_work(t) as s:
            keys = await s.conn.fetch("SELECT dedupe_key FROM jobs WHERE kind = 'test.kind'")
    finally:
        await pool.close()
    assert [r["dedupe_key"] for r in keys] == ["f2"]


@pytest.mark.parametrize("value,cast", [
    *[(text, "text") for text in NASTY],
    (NASTY, "text[]"), ([], "text[]"), ([uuid.uuid4(), uuid.uuid4()], "uuid[]"),
    ({"t": NASTY, "n": {"x": 1.5, "y": None, "z": True}}, "jsonb"),
    (bytes(range(256)), "bytea"), (b"", "bytea"), (2**62, "bigint"), (-7, "integer"),
    (86400.0, "float8"), (True, "boolean"), (None, "text"), (uuid.uuid4(), "uuid"),
    (T0, "timestamptz"),
])
async def test_values_written_into_sql_text_arrive_as_the_parameter_would(pool, value, cast):
    # The same statement once with the value as a parameter, once written in as text.
    query = f"-- $1 is the value; a comment with ' and $2\nSELECT $1::{cast} = $2::{cast}"
    async with pool.acquire() as conn:
        as_param = await conn.fetchval(f"SELECT $1::{cast}", value)
        written = await conn.fetchval(statement(f"SELECT $1::{cast}", [value]))
        same = await conn.fetchval(statement(query, [value, value]))
    assert written == as_param
    assert same is not False  # NULL for NULL, else true
    # And as the EXECUTE of a prepared statement, as a unit of work's commit sends it.
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(prepare(f"SELECT $1::{cast}"))
        executed = await conn.fetchval(execute(f"SELECT $1::{cast}", [value]))
        await conn.execute(f"DEALLOCATE {prepared_name(f'SELECT $1::{cast}')}")
    assert executed == as_param


def test_sql_text_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError):
        statement("SELECT $2", [1])
    with pytest.raises(TypeError):
        statement("SELECT $1", [object()])
    with pytest.raises(TypeError):
        statement("SELECT $1", [datetime(2026, 1, 1)])  # no time zone
    # $10 is the tenth argument, not the first followed by a 0; quoted text is left.
    assert statement("SELECT $10, '$1', \"$1\"", list(range(1, 11))) == \
        "SELECT 10, '$1', \"$1\";"


async def test_a_failing_deferred_write_rolls_the_whole_unit_of_work_back(store, make_tenant):
    t = (await make_tenant()).tenant_id
    stream = uuid.uuid4()
    insert = ("INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at) "
              "VALUES ($1, 'test.kind', NULL, '{}', $2)")
    with pytest.raises(EventStoreError):
        async with store.unit_of_work(t, ACTOR) as s:
            s.deferring = True
            await s.write(insert, t, T0)
            await s.write("SELECT 1 / $1", 0)  # division by zero, at commit
            await s.append(stream, 0, [NewEvent("Thing", {"n": 1})])
    async with store.unit_of_work(t) as s:
        assert await s.read_stream(stream) == []
        assert await s.conn.fetchval("SELECT count(*) FROM jobs WHERE kind = 'test.kind'") == 0
        assert (await s.verify_chain()).ok


def _opening(ticket_id: uuid.UUID, email: str) -> OpenTicket:
    return OpenTicket(ticket_id=TicketId(ticket_id), subject="Printer", body="Help",
                      requester=Requester(email=email),
                      actor=Actor(kind=ActorKind.AGENT, id="agent-1"), at=T0)


async def test_a_lost_race_found_at_commit_is_a_conflict_and_leaves_nothing(store, make_tenant):
    # Two openings of one ticket id: the second commits first. The first's deferred
    # ticket row then violates the key at commit: a conflict (409 over HTTP), and none
    # of its writes stay, the contact it created for a new e-mail included.
    t = (await make_tenant()).tenant_id
    tid = uuid.uuid4()
    with pytest.raises(ConcurrencyError):
        async with store.unit_of_work(t, ACTOR) as loser:
            loser.deferring = True
            await run_command(loser, tid, _opening(tid, "loser@example.com"))
            async with store.unit_of_work(t, ACTOR) as winner:
                winner.deferring = True
                await run_command(winner, tid, _opening(tid, "winner@example.com"))
    async with store.unit_of_work(t) as s:
        rows: list[Any] = await s.conn.fetch("SELECT email FROM contacts ORDER BY email")
        ticket = await s.conn.fetchrow("SELECT requester, version FROM tickets WHERE id = $1",
                                       tid)
        messages = await s.conn.fetchval("SELECT count(*) FROM messages WHERE ticket_id = $1",
                                         tid)
        indexed = await s.conn.fetchval(
            "SELECT count(*) FROM search_documents WHERE kind = 'contact'")
        events = await s.read_stream(tid)
        assert (await s.verify_chain()).ok
    assert [r["email"] for r in rows] == ["winner@example.com"]
    assert ticket["requester"]["email"] == "winner@example.com" and ticket["version"] == 1
    assert messages == 1 and indexed == 1 and len(events) == 1


async def test_a_second_command_of_a_unit_of_work_reads_the_first_ones_writes(store,
                                                                             make_tenant):
    from domain.ticket.commands import ChangePriority
    from domain.values import Priority

    t = (await make_tenant()).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(t, ACTOR) as s:
        s.deferring = True
        await run_command(s, tid, _opening(tid, "ann@example.com"))
        after = await run_command(s, tid, ChangePriority(
            priority=Priority.URGENT, actor=Actor(kind=ActorKind.AGENT, id="a"), at=T0))
    assert after.ticket.version == 2
    async with store.unit_of_work(t) as s:
        assert await s.conn.fetchval("SELECT version FROM tickets WHERE id = $1", tid) == 2


async def test_deferring_is_off_by_default(store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await s.write("INSERT INTO jobs (tenant_id, kind, payload, run_at) "
                      "VALUES ($1, 'test.now', '{}', $2)", t, T0)
        assert await s.conn.fetchval("SELECT count(*) FROM jobs WHERE kind = 'test.now'") == 1


async def test_deferred_openings_and_replies_seal_with_keys_stored_once(store, make_tenant):
    # A new contact's key is made without a look-up and stored in the COMMIT's message;
    # a reply seals with the key its first read held. Both open again on reading.
    from domain.ids import MessageId
    from domain.values import Visibility
    from handlers.tickets import PostMessage, post_message

    t = (await make_tenant()).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(t, ACTOR) as s:
        s.deferring = True
        await run_command(s, tid, _opening(tid, "grace@example.com"))
    async with store.unit_of_work(t, ACTOR) as s:
        s.deferring = True
        await post_message(s, PostMessage(
            ticket_id=TicketId(tid), message_id=MessageId(uuid.uuid4()), body="card 4242",
            visibility=Visibility.PUBLIC, at=T0,
            author=Actor(kind=ActorKind.AGENT, id="agent")))
    async with store.unit_of_work(t) as s:
        raw = await s.conn.fetch("SELECT data::text AS data FROM events WHERE stream_id = $1",
                                 tid)
        events = await s.read_stream(tid)
        keys = await s.conn.fetchval("SELECT count(*) FROM data_keys")
    assert keys == 1 and s.broken == []
    assert not any("4242" in r["data"] or "grace@" in r["data"] for r in raw)
    assert events[0].data["requester"]["email"] == "grace@example.com"
    assert events[-1].data["body"] == "card 4242"


async def test_a_key_taken_under_a_savepoint_rolled_back_is_taken_again(store, make_tenant):
    t = (await make_tenant()).tenant_id
    contact = uuid.uuid4()
    created = stored_event("ContactCreated", {"contact_id": str(contact), "email": "a@example.com",
                                              "name": "A", "at": T0.isoformat()}, 1, contact)
    async with store.unit_of_work(t, ACTOR) as s:
        mark = s.mark()
        with pytest.raises(RuntimeError):
            async with s.conn.transaction():  # a savepoint
                await s.append(contact, 0, [created])  # makes the key's row, here
                raise RuntimeError
        s.undo_to(mark)  # the row went with the savepoint: the key must be made again
        await s.append(contact, 0, [created])
    async with store.unit_of_work(t) as s:
        [stored] = await s.read_stream(contact)
        keys = await s.conn.fetchval("SELECT count(*) FROM data_keys WHERE subject_id = $1",
                                     contact)
    assert keys == 1 and s.broken == []
    assert stored.data["email"] == "a@example.com"
