"""One contract for every way the service appends events, run against each of them.

In the manner of pyeventsourcing's recorder test cases: the contract is a base class
holding the tests, written against a couple of hooks, and every append path is a
concrete subclass whose name starts with ``Test`` (the bases themselves are not
collected). Putting a new append path under the contract takes a few lines:

    class TestMyAppendPath(AppendContract):
        @asynccontextmanager
        async def unit_of_work(self, store, tenant, actor):
            async with begin_my_path(store, tenant, actor) as tx:
                yield tx  # anything with append(stream_id, expected_version, events)

If its events become readable elsewhere, or only after a further step (a sequencer
that runs after commit), override ``read_tenant`` and ``read_stream`` as well: every
test reads through them, and none relies on the seq an append returns.

``AnyVersionContract`` is the part of the contract for a path that appends at
whatever version the stream is at, one event at a time, to a stream it picks itself
(the tenant stream's ``record``); ``AppendContract`` adds what a path that takes a
stream, an expected version and several events must also do.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Protocol
from uuid import UUID

import pytest

from domain.events import SettingsChanged
from domain.ids import TenantId
from eventstore.errors import ConcurrencyError, MissingContext
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import NewEvent, RecordedEvent, StoreActor
from handlers.tenant_events import record

ACTOR = StoreActor("api_key", "contract")


def ev(n: int = 0) -> NewEvent:
    return NewEvent("Thing", {"n": n})


class Appender(Protocol):
    """What a unit of work of an append path offers the contract. An append may take
    effect only when the unit of work commits (a command's appends go out with its
    COMMIT), so the contract reads what was appended after the unit of work."""

    async def append(self, stream_id: UUID, expected_version: int | None,
                     events: Sequence[NewEvent]) -> None: ...


class AnyVersionContract(ABC):
    """Appends at whatever version: every append path keeps these promises."""

    @abstractmethod
    def unit_of_work(self, store: EventStore, tenant: TenantId,
                     actor: StoreActor | None) -> AbstractAsyncContextManager[Appender]:
        """A transaction of the path, armed for ``tenant`` and ``actor`` (None: no
        actor armed); it commits when the block exits normally."""

    def stream_for(self, tenant: TenantId) -> UUID:
        """A stream the path can append to: a new one unless the path picks its own."""
        return uuid.uuid4()

    async def read_tenant(self, store: EventStore, tenant: TenantId,
                          after_seq: int) -> list[RecordedEvent]:
        """What a reader tailing the tenant's events sees after ``after_seq``."""
        async with store.unit_of_work(tenant, readonly=True) as s:
            return await s.read_tenant(after_seq, 100_000)

    async def read_stream(self, store: EventStore, tenant: TenantId,
                          stream: UUID) -> list[RecordedEvent]:
        async with store.unit_of_work(tenant, readonly=True) as s:
            return await s.read_stream(stream)

    async def append(self, store: EventStore, tenant: TenantId, actor: StoreActor | None,
                     stream: UUID, expected_version: int | None,
                     events: Sequence[NewEvent]) -> list[RecordedEvent]:
        """One append in a unit of work of its own, committed before this returns; the
        events it stored, as read back: at an expected version, the versions after it;
        at whatever version, the stream's last ones (so only for one writer at a time)."""
        async with self.unit_of_work(store, tenant, actor) as tx:
            await tx.append(stream, expected_version, events)
        stored = await self.read_stream(store, tenant, stream)
        if expected_version is not None:
            return [e for e in stored
                    if expected_version < e.version <= expected_version + len(events)]
        return stored[-len(events):]

    async def version_of(self, store: EventStore, tenant: TenantId, stream: UUID) -> int:
        events = await self.read_stream(store, tenant, stream)
        return events[-1].version if events else 0

    async def test_none_appends_at_whatever_version(self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        stream = self.stream_for(t)
        at = await self.version_of(store, t, stream)
        first = await self.append(store, t, ACTOR, stream, None, [ev(1)])
        second = await self.append(store, t, ACTOR, stream, None, [ev(2)])
        assert [e.version for e in first + second] == [at + 1, at + 2]
        stored = await self.read_stream(store, t, stream)
        assert [e.version for e in stored] == list(range(1, at + 3))

    async def test_concurrent_appends_at_any_version_all_land(self, store: EventStore,
                                                              make_tenant):
        t = (await make_tenant()).tenant_id
        stream = self.stream_for(t)
        at = await self.version_of(store, t, stream)
        await asyncio.gather(*(self.append(store, t, StoreActor("api_key", f"k{i}"), stream,
                                           None, [ev(i)]) for i in range(10)))
        stored = await self.read_stream(store, t, stream)
        assert [e.version for e in stored] == list(range(1, at + 11))
        assert sorted(e.actor_id for e in stored[at:]) == sorted(f"k{i}" for i in range(10))

    async def test_tenant_seq_is_gapless_under_concurrent_writers_and_tails_never_skip(
            self, store: EventStore, make_tenant):
        tenants = [(await make_tenant(f"T{i}")).tenant_id for i in range(4)]
        writers, per_writer = 3, 15
        done = asyncio.Event()
        written: set[UUID] = set()

        async def writer(tenant: TenantId, w: int) -> None:
            stream = self.stream_for(tenant)
            written.add(stream)
            for i in range(per_writer):
                await self.append(store, tenant, StoreActor("api_key", f"writer-{w}"), stream,
                                  None, [ev(i)])
                if random.random() < 0.3:
                    await asyncio.sleep(0)  # a yield: shuffle the writers' interleaving

        async def tail(tenant: TenantId) -> list[int]:
            seen: list[int] = []
            last = 0
            while True:
                finished = done.is_set()
                batch = await self.read_tenant(store, tenant, last)
                for e in batch:
                    # Every event after `last` must be the very next one: nothing that
                    # commits later may carry a smaller seq than one already seen.
                    assert e.seq == last + 1, (e.seq, last)
                    last = e.seq
                    seen.append(e.seq)
                if finished and not batch:
                    return seen
                # The tail's poll interval: it reads while the writers write, on purpose.
                await asyncio.sleep(0.002)

        tails = [asyncio.create_task(tail(t)) for t in tenants]
        try:
            await asyncio.gather(*(writer(t, w) for t in tenants for w in range(writers)))
        finally:
            done.set()
        seen = await asyncio.gather(*tails)
        for tenant, tailed in zip(tenants, seen, strict=True):
            stored = await self.read_tenant(store, tenant, 0)
            assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
            assert tailed == [e.seq for e in stored]
            assert sum(e.stream_id in written and e.actor_id.startswith("writer-")
                       for e in stored) == writers * per_writer

    async def test_the_database_stamps_the_armed_actor(self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        stream = self.stream_for(t)
        [recorded] = await self.append(store, t, StoreActor("system", "scheduler"), stream,
                                       None, [ev()])
        assert (recorded.actor_kind, recorded.actor_id) == ("system", "scheduler")
        stored = await self.read_stream(store, t, stream)
        assert (stored[-1].actor_kind, stored[-1].actor_id) == ("system", "scheduler")

    async def test_an_append_with_no_actor_armed_raises(self, store: EventStore,
                                                         make_tenant):
        t = (await make_tenant()).tenant_id
        before = await self.read_tenant(store, t, 0)
        with pytest.raises(MissingContext):
            await self.append(store, t, None, self.stream_for(t), None, [ev()])
        assert await self.read_tenant(store, t, 0) == before

    async def test_the_hash_chain_verifies_after_appends(self, store: EventStore,
                                                         make_tenant):
        t = (await make_tenant()).tenant_id
        for i in range(5):
            await self.append(store, t, StoreActor("api_key", f"k{i}"), self.stream_for(t),
                              None, [ev(i)])
        stored = await self.read_tenant(store, t, 0)
        async with store.unit_of_work(t, readonly=True) as s:
            chain = await s.verify_chain()
        assert chain.ok, chain
        assert chain.checked == chain.head_seq == stored[-1].seq

    async def test_a_tail_never_skips_an_event_that_commits_later(self, store: EventStore,
                                                                  make_tenant):
        # A slow unit of work appends first and stays open; a fast one appends after it
        # and commits when it can. A reader tailing seq > n in between, then on from
        # the last seq it saw, must end up with every event, in seq order, no gaps.
        t = (await make_tenant()).tenant_id
        last = (await self.read_tenant(store, t, 0))[-1].seq
        appended, release = asyncio.Event(), asyncio.Event()

        async def slow() -> None:
            async with self.unit_of_work(store, t, StoreActor("api_key", "slow")) as tx:
                await tx.append(self.stream_for(t), None, [ev(1)])
                appended.set()
                await release.wait()

        slow_task = asyncio.create_task(slow())
        try:
            await asyncio.wait_for(appended.wait(), 10)
            fast_task = asyncio.create_task(self.append(
                store, t, StoreActor("api_key", "fast"), self.stream_for(t), None, [ev(2)]))
            # Time for the fast one to commit, on a path that lets it.
            await asyncio.wait({fast_task}, timeout=0.3)
            while_open = await self.read_tenant(store, t, last)
        finally:
            release.set()
        await slow_task
        await fast_task
        seen_to = while_open[-1].seq if while_open else last
        tailed = while_open + await self.read_tenant(store, t, seen_to)
        everything = await self.read_tenant(store, t, last)
        assert [e.seq for e in tailed] == [e.seq for e in everything]
        assert [e.seq for e in everything] == list(range(last + 1, last + 1 + len(everything)))
        assert {"slow", "fast"} <= {e.actor_id for e in everything}


class AppendContract(AnyVersionContract):
    """Appends to a stream the caller names, at the version it expects, of any number
    of events: on top of the above, what optimistic concurrency promises."""

    async def test_append_to_a_new_stream_at_version_0(self, store: EventStore,
                                                       make_tenant):
        t = (await make_tenant()).tenant_id
        stream = uuid.uuid4()
        recorded = await self.append(store, t, ACTOR, stream, 0, [ev(1)])
        assert [(e.stream_id, e.version) for e in recorded] == [(stream, 1)]
        stored = await self.read_stream(store, t, stream)
        assert [(e.version, e.type, e.data) for e in stored] == [(1, "Thing", {"n": 1})]

    async def test_append_at_the_right_version(self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        stream = uuid.uuid4()
        for expected in range(3):
            recorded = await self.append(store, t, ACTOR, stream, expected, [ev(expected)])
            assert [e.version for e in recorded] == [expected + 1]
        stored = await self.read_stream(store, t, stream)
        assert [(e.version, e.data["n"]) for e in stored] == [(1, 0), (2, 1), (3, 2)]

    async def test_a_stale_expected_version_raises_with_the_actual_version(
            self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        stream = uuid.uuid4()
        await self.append(store, t, ACTOR, stream, 0, [ev(1), ev(2)])
        before = await self.read_tenant(store, t, 0)
        for stale in (0, 1):
            with pytest.raises(ConcurrencyError) as info:
                await self.append(store, t, ACTOR, stream, stale, [ev(3)])
            assert (info.value.stream_id, info.value.expected, info.value.actual) == (
                stream, stale, 2)
        # Nothing of the failed appends is stored, not even a seq.
        assert await self.read_tenant(store, t, 0) == before

    async def test_several_events_in_one_append_get_consecutive_versions_and_seqs(
            self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        streams = [uuid.uuid4() for _ in range(6)]
        results = await asyncio.gather(*(
            self.append(store, t, StoreActor("api_key", f"k{i}"), stream, 0,
                        [ev(1), ev(2), ev(3)])
            for i, stream in enumerate(streams)))
        assert all([e.version for e in r] == [1, 2, 3] for r in results)
        stored = await self.read_tenant(store, t, 0)
        assert [e.seq for e in stored] == list(range(1, len(stored) + 1))
        for stream in streams:
            mine = [e for e in stored if e.stream_id == stream]
            assert [e.version for e in mine] == [1, 2, 3]
            assert [e.data["n"] for e in mine] == [1, 2, 3]
            assert [e.seq for e in mine] == list(range(mine[0].seq, mine[0].seq + 3))

    async def test_concurrent_appends_at_the_same_version_exactly_one_wins(
            self, store: EventStore, make_tenant):
        t = (await make_tenant()).tenant_id
        stream = uuid.uuid4()
        for expected in range(4):
            results = await asyncio.gather(*(
                self.append(store, t, StoreActor("api_key", f"k{i}"), stream, expected,
                            [ev(i)])
                for i in range(8)), return_exceptions=True)
            won = [r for r in results if isinstance(r, list)]
            lost = [r for r in results if not isinstance(r, list)]
            assert len(won) == 1, results
            assert [e.version for e in won[0]] == [expected + 1]
            assert all(isinstance(r, ConcurrencyError) and r.actual == expected + 1
                       for r in lost), lost
        stored = await self.read_stream(store, t, stream)
        assert [e.version for e in stored] == [1, 2, 3, 4]


class TestSessionAppend(AppendContract):
    """A command's unit of work: ``EventStore.unit_of_work`` then ``UnitOfWork.append``."""

    def unit_of_work(self, store: EventStore, tenant: TenantId,
                     actor: StoreActor | None) -> AbstractAsyncContextManager[UnitOfWork]:
        return store.unit_of_work(tenant, actor)


class TestSessionAppendAfterAnotherStream(AppendContract):
    """A unit of work that appends to another stream before the append under test (a
    follow-up ticket, say): the second stream's lock is taken while the transaction
    already holds its tenant's head."""

    @asynccontextmanager
    async def unit_of_work(self, store: EventStore, tenant: TenantId,
                           actor: StoreActor | None) -> AsyncIterator[UnitOfWork]:
        async with store.unit_of_work(tenant, actor) as session:
            await session.append(uuid.uuid4(), 0, [NewEvent("Other", {})])
            yield session


class _TenantStream:
    """``record`` as an appender: one domain event at a time, to the tenant stream,
    at whatever version it is (the payload rides in a SettingsChanged)."""

    def __init__(self, session: UnitOfWork) -> None:
        self.session = session

    async def append(self, stream_id: UUID, expected_version: int | None,
                     events: Sequence[NewEvent]) -> None:
        assert stream_id == self.session.tenant_id and expected_version is None
        for e in events:
            await record(self.session, SettingsChanged(settings=e.data, at=datetime.now(UTC)))


class TestTenantStreamRecord(AnyVersionContract):
    """handlers/tenant_events.py ``record``: configuration changes on the tenant stream."""

    def stream_for(self, tenant: TenantId) -> UUID:
        return tenant

    @asynccontextmanager
    async def unit_of_work(self, store: EventStore, tenant: TenantId,
                           actor: StoreActor | None) -> AsyncIterator[_TenantStream]:
        async with store.unit_of_work(tenant, actor) as session:
            yield _TenantStream(session)
