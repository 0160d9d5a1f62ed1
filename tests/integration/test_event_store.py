"""The event store against a real Postgres, as the runtime role."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest

from eventstore.errors import EventStoreError, ImmutableEvents
from eventstore.pool import StoreConnection, create_pool, init_connection
from eventstore.store import EventStore, arm
from eventstore.types import NewEvent, StoreActor
from tests.support.wait import until

ACTOR = StoreActor("api_key", "key-1")
# A new tenant's stream already holds one event: the ApiKeyIssued of its first admin key.
FIRST = 1


def ev(n: int = 0) -> NewEvent:
    return NewEvent("Thing", {"n": n})


async def test_append_assigns_seq_version_actor_and_hash(store: EventStore, make_tenant):
    t = await make_tenant()
    stream = uuid.uuid4()
    async with store.unit_of_work(t.tenant_id, ACTOR) as s:
        assert await s.append(stream, 0, [ev(1), ev(2)]) is None  # staged until commit
        assert await s.conn.fetchval("SELECT count(*) FROM events WHERE stream_id = $1",
                                     stream) == 0
    async with store.unit_of_work(t.tenant_id) as s:
        recorded = await s.read_stream(stream)
    assert [e.version for e in recorded] == [1, 2]
    assert [e.seq for e in recorded] == [FIRST + 1, FIRST + 2]
    assert all(e.actor_kind == "api_key" and e.actor_id == "key-1" for e in recorded)
    assert all(len(e.hash) == 32 for e in recorded)
    async with store.unit_of_work(t.tenant_id) as s:
        assert [e.data for e in await s.read_stream(stream)] == [{"n": 1}, {"n": 2}]
        assert [e.version for e in await s.read_stream(stream, to_version=1)] == [1]
        assert (await s.head())[0] == FIRST + 2


async def test_tenants_are_isolated(store: EventStore, make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    stream = uuid.uuid4()
    async with store.unit_of_work(b, ACTOR) as s:
        await s.append(stream, 0, [ev()])
    async with store.unit_of_work(a) as s:
        assert await s.read_stream(stream) == []
        assert {e.tenant_id for e in await s.read_tenant(0, 100)} == {a}
        # Even naming tenant B explicitly, RLS under A's context shows nothing.
        assert await s.conn.fetchval("SELECT count(*) FROM events") == FIRST
        assert await s.conn.fetchval("SELECT count(*) FROM events WHERE tenant_id = $1", b) == 0


async def test_no_context_reads_nothing_and_cannot_write(pool: asyncpg.Pool, store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(uuid.uuid4(), 0, [ev()])
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM events") == 0
        assert await conn.fetchval("SELECT count(*) FROM tenants") == 0
        with pytest.raises(asyncpg.PostgresError):
            await conn.execute(
                "INSERT INTO events (tenant_id, stream_id, version, type, data) "
                "VALUES ($1, $2, 1, 'X', '{}')", t, uuid.uuid4())


async def test_context_does_not_leak_to_the_next_transaction(pool: asyncpg.Pool, store,
                                                             make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(uuid.uuid4(), 0, [ev()])
    async with pool.acquire() as conn:
        async with conn.transaction():
            await arm(conn, t, ACTOR)
            assert await conn.fetchval("SELECT count(*) FROM events") == FIRST + 1
        assert await conn.fetchval("SELECT current_setting('app.tenant_id', true)") in ("", None)
        assert await conn.fetchval("SELECT count(*) FROM events") == 0


async def test_a_released_connection_comes_back_without_session_state(db, make_tenant):
    # The pool does not reset connections on release (eventstore/pool.py), so what a
    # unit of work arms must end with its transaction, on success and on error.
    t = (await make_tenant()).tenant_id
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    try:
        store = EventStore(pool)
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev()])
        with pytest.raises(RuntimeError):
            async with store.unit_of_work(t, ACTOR) as s:
                await s.append(uuid.uuid4(), 0, [ev()])
                raise RuntimeError("the command failed after appending")
        async with pool.acquire() as conn:
            state = await conn.fetchrow(
                "SELECT current_setting('app.tenant_id', true) AS tenant, "
                "current_setting('app.actor_kind', true) AS actor_kind, "
                "current_setting('app.actor_id', true) AS actor_id, "
                "(SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
                " AND locktype = 'advisory') AS advisory_locks, "
                "(SELECT count(*) FROM pg_listening_channels()) AS channels")
            assert state["tenant"] in ("", None)
            assert state["actor_kind"] in ("", None) and state["actor_id"] in ("", None)
            assert state["advisory_locks"] == 0 and state["channels"] == 0
            assert not conn.is_in_transaction()
    finally:
        await pool.close()


async def test_a_session_is_armed_in_the_round_trip_of_its_begin(db, make_tenant):
    # One message opens the transaction and arms it: no separate arming statement.
    t = (await make_tenant()).tenant_id
    sent: list[str] = []
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    try:
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        async with EventStore(pool).unit_of_work(t, ACTOR, readonly=True) as s:
            assert await s.conn.fetchval("SELECT current_setting('app.tenant_id')") == str(t)
    finally:
        await pool.close()
    assert sent[0].startswith("BEGIN READ ONLY; SELECT set_config('app.tenant_id'")
    assert len(sent) == 3  # BEGIN with its arming, the read, COMMIT


async def test_a_unit_of_work_append_is_two_round_trips(db, make_tenant):
    # BEGIN with its arming, then the append with the COMMIT in one message: the tenant
    # head lock the append takes is released by the server without waiting for us.
    t = (await make_tenant()).tenant_id
    sent: list[str] = []
    pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
    store = EventStore(pool)
    try:
        # The connection's first append also looks up the argument types: once.
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev()])
        await store.notifier.flush()
        async with pool.acquire() as conn:
            conn.add_query_logger(lambda record: sent.append(record.query))
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev()])
        await store.notifier.flush()
    finally:
        await pool.close()
    # The commit notice is sent after the unit of work, coalesced with others'
    # (eventstore/notifier.py): not one of its round trips.
    sent = [q for q in sent if "pg_notify" not in q]
    assert len(sent) == 2, sent
    assert sent[0].startswith("BEGIN; SELECT set_config('app.tenant_id'")
    assert sent[1].startswith("EXECUTE hd_") and sent[1].endswith(");\nCOMMIT;")
    assert sent[1].endswith("\nCOMMIT;")


@pytest.mark.parametrize("text", [
    "o'brien", "back\\slash\\", "'); DROP TABLE events; --", "$$ $x$ $e1234abcd$ \u00e9",
    "\u4e2d\U0001f600", "\n\t\r", "-- comment", "*/ /*", "ARRAY[", "]::jsonb[]);COMMIT;",
])
async def test_payloads_written_into_the_commit_message_arrive_byte_for_byte(
        store: EventStore, make_tenant, text):
    # The staged append travels as SQL text with its values written in
    # (eventstore/literal.py); whatever the payload holds, it is stored as data.
    t = (await make_tenant()).tenant_id
    stream = uuid.uuid4()
    data = {"text": text, text: [text, {"nested": text}]}
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(stream, 0, [NewEvent(text or "T", data, 1, {"m": text})])
    async with store.unit_of_work(t) as s:
        [stored] = await s.read_stream(stream)
        chain = await s.verify_chain()
    assert (stored.type, stored.data, stored.metadata) == (text or "T", data, {"m": text})
    assert chain.ok


@pytest.mark.parametrize("actor_id", [
    "o'brien", "back\\slash\\", "'); DROP TABLE events; --", "$$ $x$ \u00e9\u4e2d\U0001f600",
])
async def test_an_actor_armed_with_begin_is_stamped_exactly(store: EventStore, make_tenant,
                                                            actor_id):
    # The arming statement carries its values written into its text (eventstore/pool.py);
    # whatever they hold, they arrive as data, byte for byte.
    t = (await make_tenant()).tenant_id
    stream = uuid.uuid4()
    async with store.unit_of_work(t, StoreActor("api_key", actor_id)) as s:
        await s.append(stream, 0, [ev()])
    async with store.unit_of_work(t) as s:
        [recorded] = await s.read_stream(stream)
    assert recorded.actor_id == actor_id
    async with store.unit_of_work(t) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM events WHERE actor_id = $1",
                                     actor_id) == 1
        assert (await s.verify_chain()).ok


class _BeginsUnarmed(StoreConnection):
    """A connection whose BEGIN goes out without the staged arming statement, as if
    the driver started transactions some other way."""

    async def execute(self, query: str, *args: object, timeout: float | None = None) -> str:
        status: str = await asyncpg.Connection.execute(self, query, *args, timeout=timeout)
        return status


async def test_a_session_refuses_a_transaction_that_began_unarmed(db, make_tenant):
    t = (await make_tenant()).tenant_id
    pool = await asyncpg.create_pool(db.runtime_url, min_size=1, max_size=1,
                                     connection_class=_BeginsUnarmed, init=init_connection)
    try:
        with pytest.raises(EventStoreError, match="without its tenant armed"):
            async with EventStore(pool).unit_of_work(t, ACTOR):
                pytest.fail("the unit of work ran unarmed")
        async with pool.acquire() as conn:
            assert not conn.is_in_transaction()
    finally:
        await pool.close()


async def test_actor_columns_cannot_be_forged(pool: asyncpg.Pool, make_tenant):
    t = (await make_tenant()).tenant_id
    async with pool.acquire() as conn, conn.transaction():
        await arm(conn, t, ACTOR)
        row = await conn.fetchrow(
            "INSERT INTO events (tenant_id, stream_id, version, type, data, actor_kind, actor_id)"
            " VALUES ($1, $2, 1, 'X', '{}', 'system', 'forged') RETURNING actor_kind, actor_id",
            t, uuid.uuid4())
    assert (row["actor_kind"], row["actor_id"]) == ("api_key", "key-1")


@pytest.mark.parametrize("statement", [
    "UPDATE events SET data = '{\"n\": 9}'",
    "DELETE FROM events",
    "TRUNCATE events",
])
async def test_runtime_role_cannot_change_events(pool: asyncpg.Pool, store, make_tenant,
                                                 statement):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(uuid.uuid4(), 0, [ev()])
    async with pool.acquire() as conn, conn.transaction():
        await arm(conn, t, ACTOR)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(statement)


@pytest.mark.parametrize("statement", [
    "UPDATE events SET data = '{\"n\": 9}'",
    "DELETE FROM events",
    "TRUNCATE events",
])
async def test_triggers_refuse_changes_even_for_the_owner(db, store, make_tenant, statement):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(uuid.uuid4(), 0, [ev()])
    conn = await asyncpg.connect(db.admin_url)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await arm(conn, t, ACTOR)
            with pytest.raises(asyncpg.PostgresError) as info:
                await conn.execute(statement)
            assert info.value.sqlstate == "HD003"
    finally:
        await conn.close()


async def test_a_tenant_cannot_exist_without_its_head(db):
    tenant = uuid.uuid4()
    conn = await asyncpg.connect(db.admin_url)
    try:
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            async with conn.transaction():
                await conn.execute("SET LOCAL ROLE helpdesk_owner")
                await arm(conn, tenant, ACTOR)
                await conn.execute("INSERT INTO tenants (id, name, slug) "
                                   "VALUES ($1, 'headless', 'headless')", tenant)
        # Together, in either order, they commit.
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await arm(conn, tenant, ACTOR)
            await conn.execute("INSERT INTO tenants (id, name, slug) "
                               "VALUES ($1, 'whole', 'whole')", tenant)
            await conn.execute("INSERT INTO tenant_heads (tenant_id) VALUES ($1)", tenant)
    finally:
        await conn.close()


async def test_store_translates_immutable_errors(store: EventStore, make_tenant):
    from eventstore.errors import translate

    class Fake(asyncpg.PostgresError):
        sqlstate = "HD003"

    assert isinstance(translate(Fake("x")), ImmutableEvents)


async def test_listeners_are_notified_after_commit(db, store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    listener = await asyncpg.connect(db.runtime_url)
    got: asyncio.Queue[str] = asyncio.Queue()
    await listener.add_listener("helpdesk_events", lambda *a: got.put_nowait(a[3]))

    async def nothing_before(marker: str) -> None:
        # Notifications reach a listener in commit order, so one committed now arrives
        # after anything already sent: if the marker comes first, nothing was.
        await listener.execute(f"NOTIFY helpdesk_events, '{marker}'")
        assert await asyncio.wait_for(got.get(), 5) == marker

    try:
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev(), ev()])
            await nothing_before("marker-1")  # nothing before commit
        assert await asyncio.wait_for(got.get(), 5) == str(t)
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev()])
        assert await asyncio.wait_for(got.get(), 5) == str(t)
        # A rolled-back append notifies nobody.
        with pytest.raises(RuntimeError):
            async with store.unit_of_work(t, ACTOR) as s:
                await s.append(uuid.uuid4(), 0, [ev()])
                raise RuntimeError("abort")
        await store.notifier.flush()
        await nothing_before("marker-2")
        assert got.empty()
    finally:
        await listener.close()


async def test_notifications_coalesce_per_tenant(db, store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    listener = await asyncpg.connect(db.runtime_url)
    got: list[str] = []
    await listener.add_listener("helpdesk_events", lambda *a: got.append(a[3]))

    async def append() -> None:
        async with store.unit_of_work(t, ACTOR) as s:
            await s.append(uuid.uuid4(), 0, [ev()])

    try:
        await asyncio.gather(*(append() for _ in range(20)))
        await store.notifier.flush()
        # Delivery to the listener is asynchronous; a marker sent now arrives last.
        await listener.execute("NOTIFY helpdesk_events, 'marker'")
        await until(lambda: got and got[-1] == "marker", timeout=5, interval=0.01,
                    what=lambda: f"the marker after the notices (got {got})")
        notices = got[:-1]
        assert notices and set(notices) == {str(t)} and len(notices) < 20, notices
    finally:
        await listener.close()
