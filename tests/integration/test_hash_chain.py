"""The hash chain: an untouched chain verifies; a superuser's edit is found at its seq."""

from __future__ import annotations

import random
import uuid

import asyncpg
import pytest

from eventstore.chain import ChainWalker, canonical_bytes, jsonb_text
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor

ACTOR = StoreActor("api_key", "k")


async def _fill(store: EventStore, tenant, n: int = 10) -> list:
    stream = uuid.uuid4()
    async with store.unit_of_work(tenant, ACTOR) as s:
        await s.append(stream, 0, [NewEvent("E", {"i": i, "text": f"é\n\t{i}"})
                                   for i in range(n)])
    async with store.unit_of_work(tenant) as s:
        return await s.read_stream(stream)


async def _tamper(db, sql: str, *args) -> None:
    conn = await asyncpg.connect(db.admin_url)
    try:
        # A superuser can switch the immutability triggers off; the chain still knows.
        await conn.execute("SET session_replication_role = replica")
        await conn.execute(sql, *args)
    finally:
        await conn.close()


async def _verify(store, tenant, **kw):
    async with store.unit_of_work(tenant, readonly=True) as s:
        return await s.verify_chain(**kw)


async def test_untouched_chain_verifies(store, make_tenant):
    t = (await make_tenant()).tenant_id
    await _fill(store, t, 10)
    report = await _verify(store, t)
    # seq 1 is the tenant's first ApiKeyIssued; _fill adds seqs 2..11.
    assert report.ok and report.checked == 11 and report.head_seq == 11
    assert (await _verify(store, t, from_seq=4, to_seq=7)).checked == 4


@pytest.mark.parametrize(("sql", "bad"), [
    ("UPDATE events SET data = jsonb_set(data, '{i}', '99') WHERE seq = 4", 4),
    ("UPDATE events SET actor_id = 'someone-else' WHERE seq = 6", 6),
    ("UPDATE events SET recorded_at = recorded_at + interval '1 second' WHERE seq = 2", 2),
    ("DELETE FROM events WHERE seq = 5", 5),
    ("DELETE FROM events WHERE seq = 11", 11),  # the head
    ("DELETE FROM events WHERE seq = 1", 1),
    # swap the payloads of two neighbouring events
    ("UPDATE events e SET data = o.data FROM events o WHERE e.tenant_id = o.tenant_id "
     "AND ((e.seq = 7 AND o.seq = 8) OR (e.seq = 8 AND o.seq = 7))", 7),
])
async def test_superuser_tampering_is_found_at_its_seq(db, store, make_tenant, sql, bad):
    t = (await make_tenant()).tenant_id
    await _fill(store, t, 10)
    await _tamper(db, sql)
    report = await _verify(store, t)
    assert not report.ok
    assert report.first_bad_seq == bad


async def test_python_canonical_bytes_match_the_database(db, store, make_tenant):
    t = (await make_tenant()).tenant_id
    rnd = random.Random(7)
    payloads = [
        {"s": "".join(chr(rnd.choice([9, 10, 13, 34, 92, 1, 31, 127, 233, 0x4E2D, 0x1F600]))
                      for _ in range(8)),
         "n": rnd.randint(-10**12, 10**12), "f": rnd.choice([0.5, 1e-7, 123.25, 2.0]),
         "b": True, "z": None, "nested": {"bb": [1, "x", {"a": False}], "a": []},
         "ключ": "значение"}
        for _ in range(5)
    ]
    stream = uuid.uuid4()
    async with store.unit_of_work(t, ACTOR) as s:
        await s.append(stream, 0, [NewEvent("E", p, metadata={"m": 1}) for p in payloads])
    async with store.unit_of_work(t) as s:
        events = await s.read_stream(stream)
        assert [e.data for e in events] == payloads
        for e in events:
            db_bytes = await s.conn.fetchval(
                "SELECT event_canonical(tenant_id, seq, stream_id, version, type, schema_version,"
                " data, metadata, actor_kind, actor_id, recorded_at) FROM events WHERE seq = $1",
                e.seq)
            assert canonical_bytes(e) == bytes(db_bytes)
    first = events[0].seq - 1
    async with store.unit_of_work(t, readonly=True) as s:
        [before] = await s.read_tenant(first - 1, 1)
    walker = ChainWalker(prev_seq=first, prev_hash=before.hash)
    assert walker.feed_all(events) and walker.checked == 5


def test_jsonb_text_orders_keys_by_length_then_bytes():
    text = jsonb_text({"bb": 1, "a": 2, "c": [True, None]})
    assert text == '{"a": 2, "c": [true, null], "bb": 1}'
