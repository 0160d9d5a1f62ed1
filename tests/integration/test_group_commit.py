"""One-shot appends are group-committed, across tenants, each keeping its own meaning."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from eventstore.errors import ConcurrencyError
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor


async def test_concurrent_appends_share_transactions_and_keep_their_actors(store: EventStore,
                                                                           make_tenant):
    t = (await make_tenant()).tenant_id
    streams = [uuid.uuid4() for _ in range(16)]
    results = await asyncio.gather(*(
        store.append(t, StoreActor("api_key", f"k{i}"), s, 0,
                     [NewEvent("A", {"i": i}), NewEvent("B", {"i": i})])
        for i, s in enumerate(streams)))
    for i, recorded in enumerate(results):
        assert [e.version for e in recorded] == [1, 2]
        assert {e.actor_id for e in recorded} == {f"k{i}"}
        assert recorded[1].seq == recorded[0].seq + 1  # an item's events stay together
    async with store.session(t) as s:
        # seq 1 is the tenant's first ApiKeyIssued, written when the tenant was created.
        rows = await s.conn.fetch("SELECT seq, xmin::text AS tx FROM events WHERE seq > 1 "
                                  "ORDER BY seq")
        assert [r["seq"] for r in rows] == list(range(2, 34))
        # Fewer transactions than appends: they were committed in groups.
        assert len({r["tx"] for r in rows}) < 16
        assert (await s.verify_chain()).ok


async def test_appends_of_many_tenants_share_transactions_and_keep_tenant_and_actor(
        store: EventStore, make_tenant):
    tenants = [(await make_tenant()).tenant_id for _ in range(5)]
    calls = [(tenants[i % 5], StoreActor("api_key", f"k{i}"), uuid.uuid4(), i)
             for i in range(40)]
    results = await asyncio.gather(*(
        store.append(t, actor, stream, 0, [NewEvent("A", {"i": i}), NewEvent("B", {"i": i})])
        for t, actor, stream, i in calls))
    for (t, actor, stream, i), recorded in zip(calls, results, strict=True):
        assert [(e.tenant_id, e.stream_id, e.version, e.actor_id, e.data["i"])
                for e in recorded] == [(t, stream, 1, actor.id, i), (t, stream, 2, actor.id, i)]
        assert recorded[1].seq == recorded[0].seq + 1
    tenants_of_tx: dict[str, set[object]] = {}
    for t in tenants:
        async with store.session(t) as s:
            rows = await s.conn.fetch("SELECT seq, tenant_id, xmin::text AS tx FROM events "
                                      "ORDER BY seq")
            # Every tenant's seq stays gapless (seq 1 is its first ApiKeyIssued), each
            # tenant sees only its own rows, and its chain verifies.
            assert [r["seq"] for r in rows] == list(range(1, 18))
            assert {r["tenant_id"] for r in rows} == {t}
            assert (await s.verify_chain()).ok
            for r in rows[1:]:
                tenants_of_tx.setdefault(r["tx"], set()).add(t)
    # Fewer transactions than appends, and some carried several tenants.
    assert len(tenants_of_tx) < 40
    assert max(len(ts) for ts in tenants_of_tx.values()) > 1


async def test_a_conflict_fails_only_its_own_append(store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    actor = StoreActor("api_key", "k")
    contested = uuid.uuid4()
    others = [uuid.uuid4() for _ in range(6)]
    results = await asyncio.gather(
        *(store.append(t, actor, contested, 0, [NewEvent("A", {"n": n})]) for n in range(4)),
        *(store.append(t, actor, s, 0, [NewEvent("B", {})]) for s in others),
        return_exceptions=True,
    )
    contested_results = results[:4]
    assert sum(not isinstance(r, BaseException) for r in contested_results) == 1
    assert all(isinstance(r, ConcurrencyError) for r in contested_results
               if isinstance(r, BaseException))
    assert all(not isinstance(r, BaseException) for r in results[4:])


async def test_a_bad_item_does_not_poison_its_batch(store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    actor = StoreActor("api_key", "k")
    bad = NewEvent("X" * 500, {})  # violates the type length check
    results = await asyncio.gather(
        *(store.append(t, actor, uuid.uuid4(), 0, [NewEvent("Ok", {})]) for _ in range(5)),
        store.append(t, actor, uuid.uuid4(), 0, [bad]),
        return_exceptions=True,
    )
    assert all(isinstance(r, list) and len(r) == 1 for r in results[:5])
    assert isinstance(results[5], Exception)
    async with store.session(t) as s:
        assert (await s.verify_chain()).checked == 1 + 5  # with the first ApiKeyIssued


async def test_a_cancelled_caller_does_not_strand_the_others(store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    actor = StoreActor("api_key", "k")
    tasks = [asyncio.create_task(store.append(t, actor, uuid.uuid4(), 0, [NewEvent("A", {})]))
             for _ in range(10)]
    await asyncio.sleep(0)  # a yield: every append has started and is queued or sent
    tasks[0].cancel()
    done = await asyncio.wait_for(asyncio.gather(*tasks[1:]), 10)
    assert all(len(r) == 1 for r in done)
    with pytest.raises(asyncio.CancelledError):
        await tasks[0]


async def test_callers_cancelled_while_queued_write_nothing_and_strand_no_one(
        store: EventStore, make_tenant):
    t = (await make_tenant()).tenant_id
    actor = StoreActor("api_key", "k")
    taken = uuid.uuid4()
    await store.append(t, actor, taken, 0, [NewEvent("A", {})])
    first = asyncio.create_task(store.append(t, actor, uuid.uuid4(), 0, [NewEvent("A", {})]))
    await asyncio.sleep(0)  # its lane is now waiting on the database
    conflicting = asyncio.create_task(store.append(t, actor, taken, 0, [NewEvent("B", {})]))
    abandoned = uuid.uuid4()
    gone = asyncio.create_task(store.append(t, actor, abandoned, 0, [NewEvent("C", {})]))
    kept = asyncio.create_task(store.append(t, actor, uuid.uuid4(), 0, [NewEvent("D", {})]))
    await asyncio.sleep(0)  # all three queued behind the first
    conflicting.cancel()
    gone.cancel()
    assert len(await asyncio.wait_for(first, 10)) == 1
    assert len(await asyncio.wait_for(kept, 10)) == 1
    for task in (conflicting, gone):
        with pytest.raises(asyncio.CancelledError):
            await task
    # The lane lives on, and the abandoned append was never sent.
    assert len(await store.append(t, actor, uuid.uuid4(), 0, [NewEvent("E", {})])) == 1
    async with store.session(t) as s:
        assert await s.stream_version(abandoned) == 0
        assert await s.stream_version(taken) == 1
        assert (await s.verify_chain()).ok
