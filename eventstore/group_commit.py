"""Group commit of one-shot appends, across tenants.

An append's fixed costs (the round trip, the server function's start, the commit and
its WAL flush) are several times the cost of inserting its event. So one-shot appends
that arrive while others are in flight are carried by the next transaction together,
whatever their tenants, and those costs are paid once per group (migration 0060).
Each append keeps its own meaning: its own tenant and actor (armed for the insert that
carries its events, so the trigger stamps and chains them as for a lone append), its
own expected version, all of its events or none, its own result or error.

At most ``lanes`` groups are in flight at once, each on its own pooled connection; a
lane that finishes takes whatever queued meanwhile as its next group. One lane would
leave the server idle while this process reads a group's results; more than a few
only make groups smaller. A caller waits for its own result only, and a group runs in
a task of its own, so a cancelled caller never leaves the others without an answer.

A transaction that appends to several streams (a follow-up ticket) takes its second
stream lock after the tenant head; a group holding that second stream would wait for
the head while the transaction waits for it. Postgres breaks such a cycle by failing
one side; the group then retries its items one by one. Commands never use one-shot
appends, so the two do not meet in this service.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.errors import ConcurrencyError, EventStoreError
from eventstore.sqlfile import load_queries
from eventstore.types import NewEvent, RecordedEvent, StoreActor

Q = load_queries(Path(__file__).with_name("queries.sql"))

MAX_GROUP = 256  # items per transaction: bounds a group's lock time and message size


@dataclass(eq=False)
class Pending:
    """One caller's append, waiting for its group."""

    tenant_id: TenantId
    actor: StoreActor
    stream_id: UUID
    expected_version: int | None
    events: Sequence[NewEvent]
    result: asyncio.Future[list[RecordedEvent]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


RunOne = Callable[[Pending], Awaitable[list[RecordedEvent]]]
RunGroup = Callable[[str, tuple[Any, ...]], Awaitable[list[asyncpg.Record]]]


class GroupCommit:
    """Collects one-shot appends and runs them as group commits on a few lanes."""

    def __init__(self, run_one: RunOne, run_group: RunGroup, *,
                 lanes: int = 2, retry_alone: tuple[type[BaseException], ...] = ()) -> None:
        # run_one(pending): the lone-append path, which raises the store's own errors.
        # run_group(query, args): fetch on a pooled connection, raising driver errors.
        # retry_alone: group failures that may be one item's fault, so each item is
        # retried on its own to get its own answer (anything else fails the group).
        if lanes < 1:
            raise ValueError("lanes must be at least 1")
        self._run_one = run_one
        self._run_group = run_group
        self._lanes = lanes
        self._retry_alone = retry_alone
        self._queue: list[Pending] = []
        self._active = 0  # lanes running; changed only where a lane starts or stops
        self._tasks: set[asyncio.Task[None]] = set()  # strong references to the lanes

    async def append(self, item: Pending) -> list[RecordedEvent]:
        self._queue.append(item)
        if self._active < self._lanes:
            self._active += 1
            task = asyncio.ensure_future(self._lane())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await item.result

    async def _lane(self) -> None:
        try:
            while self._queue:
                group = self._take()
                if not group:
                    continue  # every queued caller had given up
                try:
                    await self._settle(group)
                except BaseException as exc:  # cancelled or worse: nobody may wait forever
                    for item in group:
                        _fail(item, exc)
                    raise
        finally:
            # In the same step as the empty-queue check: an append that comes after
            # it sees this lane gone and starts another.
            self._active -= 1

    def _take(self) -> list[Pending]:
        """The next group: everything queued, in order, one item per stream.

        A lane takes the whole queue rather than sharing it with idle lanes: a
        group's fixed costs dominate, so splitting 8 queued appends between two lanes
        measured slower (3,515-3,773 appends/s against 4,140-5,476, bench/append.py
        setup). A second append to a stream already in the group waits for the next
        one, so it is checked against the version the first one leaves behind.
        """
        group: list[Pending] = []
        later: list[Pending] = []
        streams: set[tuple[TenantId, UUID]] = set()
        for i, item in enumerate(self._queue):
            if len(group) == MAX_GROUP:
                later.extend(self._queue[i:])
                break
            if item.result.cancelled():
                continue  # its caller gave up before it was sent: nothing is written
            key = (item.tenant_id, item.stream_id)
            if key in streams:
                later.append(item)
            else:
                streams.add(key)
                group.append(item)
        self._queue = later
        return group

    async def _settle(self, group: list[Pending]) -> None:
        if len(group) == 1:
            await self._settle_alone(group[0])
            return
        try:
            rows = await self._run_group(Q["append_group"], _arguments(group))
        except self._retry_alone:
            for item in group:
                await self._settle_alone(item)
            return
        except Exception as exc:
            for item in group:
                _fail(item, exc)
            return
        # Inserted events come back without item numbers: streams are unique within a
        # group, so tenant and stream name the item.
        inserted: dict[tuple[UUID, UUID], list[asyncpg.Record]] = {}
        for row in rows:
            if row["actual"] is not None:
                item = group[row["item"] - 1]
                _fail(item, ConcurrencyError(item.stream_id, item.expected_version,
                                             row["actual"]))
            else:
                inserted.setdefault((row["tenant_id"], row["stream_id"]), []).append(row)
        for item in group:
            if item.result.done():
                continue
            got = sorted(inserted.get((item.tenant_id, item.stream_id), []),
                         key=lambda r: r["version"])
            if len(got) != len(item.events):
                _fail(item, EventStoreError(
                    f"group append stored {len(got)} of {len(item.events)} events"))
            else:
                _succeed(item, [_recorded(item, e, r)
                                for e, r in zip(item.events, got, strict=True)])

    async def _settle_alone(self, item: Pending) -> None:
        try:
            recorded = await self._run_one(item)
        except Exception as exc:  # the caller gets whatever went wrong
            _fail(item, exc)
        else:
            _succeed(item, recorded)


# A caller that was cancelled while its append was in flight has no one waiting: its
# future is cancelled already and takes no result. (Whether that append committed is
# as unknown to it as for any cancelled database call.)

def _succeed(item: Pending, recorded: list[RecordedEvent]) -> None:
    if not item.result.done():
        item.result.set_result(recorded)


def _fail(item: Pending, exc: BaseException) -> None:
    if not item.result.done():
        item.result.set_exception(exc)


def _recorded(item: Pending, event: NewEvent, row: asyncpg.Record) -> RecordedEvent:
    """The event as stored: the caller's payload with what the database assigned."""
    return RecordedEvent(
        tenant_id=item.tenant_id, seq=row["seq"], stream_id=item.stream_id,
        version=row["version"], type=event.type, schema_version=event.schema_version,
        data=event.data, metadata=event.metadata or {}, actor_kind=row["actor_kind"],
        actor_id=row["actor_id"], recorded_at=row["recorded_at"], hash=bytes(row["hash"]),
    )


def _arguments(group: list[Pending]) -> tuple[Any, ...]:
    types, versions, data, metadata = [], [], [], []
    for p in group:
        for e in p.events:
            types.append(e.type)
            versions.append(e.schema_version)
            data.append(e.data)
            metadata.append(e.metadata)
    return (
        [p.tenant_id for p in group], [p.actor.kind for p in group],
        [p.actor.id for p in group], [p.stream_id for p in group],
        [p.expected_version for p in group], [len(p.events) for p in group],
        types, versions, data, metadata,
    )
