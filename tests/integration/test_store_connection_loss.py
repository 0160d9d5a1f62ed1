"""A unit of work whose connection the server ends: the store raises StoreUnavailable
(never a raw driver error, never an AttributeError from a connection asyncpg already
detached), nothing of the unit of work is committed, and the pool serves the next one.

tests/e2e/test_connection_faults.py does the same under load over HTTP.
"""

from __future__ import annotations

import uuid

import asyncpg
import pytest

from eventstore.errors import StoreUnavailable
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from tests.support.wait import until

ACTOR = StoreActor("api_key", "key-1")


async def _terminate(admin_url: str, pid: int) -> None:
    admin = await asyncpg.connect(admin_url)
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


def _closed(conn: asyncpg.Connection) -> bool:
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:  # asyncpg detached it from the pool's proxy: gone
        return True


async def _lost(conn: asyncpg.Connection) -> None:
    """Wait until the client has seen the server end ``conn``."""
    await until(lambda: _closed(conn), what="the client to see its connection end")


async def _events(store: EventStore, tenant_id, stream: uuid.UUID) -> int:  # type: ignore[no-untyped-def]
    async with store.unit_of_work(tenant_id) as s:
        return len(await s.read_stream(stream))


async def test_a_statement_on_an_ended_connection_is_store_unavailable(db, store, make_tenant):
    t = await make_tenant()
    stream = uuid.uuid4()
    with pytest.raises(StoreUnavailable) as caught:
        async with store.unit_of_work(t.tenant_id, ACTOR) as s:
            await s.append(stream, 0, [NewEvent("Thing", {"n": 1})])
            await _terminate(db.admin_url, await s.conn.fetchval("SELECT pg_backend_pid()"))
            await s.append(stream, 1, [NewEvent("Thing", {"n": 2})])
    # The appends go out with the COMMIT, the first statement to meet the ended
    # connection; asyncpg may report that as its own client error.
    assert isinstance(caught.value.__cause__, asyncpg.InterfaceError | asyncpg.PostgresError
                      | asyncpg.InternalClientError)
    assert await _events(store, t.tenant_id, stream) == 0


async def test_a_commit_on_an_ended_connection_is_store_unavailable(db, store, make_tenant):
    """The connection ends while the unit of work is between statements; its commit
    finds the connection gone (asyncpg has detached it from the pool's proxy)."""
    t = await make_tenant()
    stream = uuid.uuid4()
    with pytest.raises(StoreUnavailable):
        async with store.unit_of_work(t.tenant_id, ACTOR) as s:
            await s.append(stream, 0, [NewEvent("Thing", {"n": 1})])
            await _terminate(db.admin_url, await s.conn.fetchval("SELECT pg_backend_pid()"))
            await _lost(s.conn)
    assert await _events(store, t.tenant_id, stream) == 0


async def test_reads_and_plain_connections_translate_too(db, store, make_tenant):
    t = await make_tenant()
    with pytest.raises(StoreUnavailable):
        async with store.unit_of_work(t.tenant_id, readonly=True) as s:
            await _terminate(db.admin_url, await s.conn.fetchval("SELECT pg_backend_pid()"))
            await s.read_tenant(0, 10)
    with pytest.raises(StoreUnavailable):
        async with store.connection() as conn:
            await _terminate(db.admin_url, await conn.fetchval("SELECT pg_backend_pid()"))
            await conn.fetchval("SELECT 1")


async def test_the_pool_serves_the_next_unit_of_work(db, store, make_tenant):
    t = await make_tenant()
    for n in range(3):
        with pytest.raises(StoreUnavailable):
            async with store.unit_of_work(t.tenant_id, ACTOR) as s:
                await _terminate(db.admin_url, await s.conn.fetchval("SELECT pg_backend_pid()"))
                await _lost(s.conn)
        stream = uuid.uuid4()
        async with store.unit_of_work(t.tenant_id, ACTOR) as s:
            await s.append(stream, 0, [NewEvent("Thing", {"n": n})])
        assert await _events(store, t.tenant_id, stream) == 1
