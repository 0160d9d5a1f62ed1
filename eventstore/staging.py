"""The part of a unit of work that stages what it writes and sends it with its COMMIT:
appends (checked against their stream's version at commit) and deferred writes, as
(query, arguments) pairs that eventstore/pool.py sends as prepared statements."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.errors import UNAVAILABLE, ConcurrencyError, EventStoreError, translate
from eventstore.sqlfile import load_queries
from eventstore.types import NewEvent, RecordedEvent
from eventstore.unit import UnitState

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class StagedAppend:
    """Events a unit of work will append to one stream when it commits."""

    stream_id: UUID
    expected_version: int | None
    events: tuple[NewEvent, ...]


class Staging(UnitState):
    """Staging and commit (mixed into ``eventstore.store.UnitOfWork``)."""

    async def append(
        self,
        stream_id: UUID,
        expected_version: int | None,
        events: Sequence[NewEvent],
    ) -> None:
        """Append ``events`` to a stream that must be at ``expected_version`` when the
        unit of work commits.

        ``expected_version`` 0 means a new stream; ``None`` appends at whatever the
        stream's version is. The events go to the database in the COMMIT's own message
        (``EventStore.unit_of_work``), or at ``flush``, in the order they were staged: the
        append takes the tenant head lock, which is then held for server time only.
        A stream that moved on makes the commit raise ``ConcurrencyError``. Read what
        was appended, seq and hash included, after the unit of work.

        With a keyring, each event's ``seal`` fields are sealed with its ``subject``'s
        data key. Sealing binds each field to its version, so an append with personal
        data and no expected version pins the version it reads now. Raises
        ``SubjectErased`` for personal data of an erased subject.
        """
        if not events:
            return
        if self.stamp:
            # What the caller says of every event of this unit of work (an importer's
            # source and author, docs/import.md), merged into each event's metadata.
            events = [dataclasses.replace(e, metadata={**e.metadata, **self.stamp})
                      for e in events]
        if self.keyring is not None and any(e.seal and e.subject for e in events):
            if expected_version is None:
                expected_version = await self.stream_version(stream_id)
            events = await self._sealed(stream_id, expected_version, events)
        self.staged.append(StagedAppend(stream_id, expected_version, tuple(events)))

    async def write(self, query: str, *args: Any) -> str | None:
        """Run a statement whose answer nobody reads: at once, or, while ``deferring``,
        in the COMMIT's own message ahead of the appends, written out as SQL text
        (eventstore/literal.py ``statement``). A deferred write is not visible to this
        unit of work's later reads (``flush_writes`` sends what is deferred now); if it
        fails at commit, the whole unit of work rolls back and its error is raised
        there, as a failed append's is (a unique violation as ``ConcurrencyError``).
        Returns the command status of a write run at once, None for a deferred one."""
        if self.deferring:
            self.writes.append((query, args))
            return None
        status: str = await self.conn.execute(query, *args)
        return status

    async def flush_writes(self) -> None:
        """Run the deferred writes now, so this unit of work's next reads see them: in
        one round trip on our own connections (eventstore/pool.py
        ``StoreConnection.run_batch``, prepared statements as at commit), else each in
        its own."""
        writes, self.writes = self.writes, []
        if len(writes) > 1 and hasattr(self.conn, "run_batch"):
            await self.conn.run_batch(writes)
            return
        for query, args in writes:
            await self.conn.execute(query, *args)

    def mark(self) -> tuple[int, int, dict[UUID, bytes | None]]:
        """Where the staged appends and deferred writes end now, and the data keys
        held now (``undo_to``)."""
        return len(self.staged), len(self.writes), dict(self._keys)

    def undo_to(self, mark: tuple[int, int, dict[UUID, bytes | None]]) -> None:
        """Drop what was staged and deferred after ``mark``, and forget the keys taken
        since: they go with the savepoint rolled back under them (a key row made there
        is gone, and so are the locks taken there)."""
        del self.staged[mark[0]:]
        del self.writes[mark[1]:]
        self._keys = mark[2]

    def commit_statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The deferred writes, then the staged appends, as (query, arguments) for the
        COMMIT's message (eventstore/pool.py ``StoreConnection.commit_with``): the
        appends take the tenant head lock, so they go last and the lock is held for
        the least time."""
        appends = [(Q["append_at_commit"],
                    (self.tenant_id, s.stream_id, s.expected_version,
                     [e.type for e in s.events], [e.schema_version for e in s.events],
                     [orjson.dumps(e.data).decode() for e in s.events],
                     [orjson.dumps(e.metadata).decode() for e in s.events]))
                   for s in coalesced(self.staged)]
        return [*self.writes, *appends]

    async def flush(self) -> list[RecordedEvent]:
        """Append what is staged now, each stream in its own round trip, and return the
        recorded events: for a transaction that is not a unit of work of the store
        (an operator's owner connection), where nothing waits on its commit. Deferred
        writes go first."""
        await self.flush_writes()
        staged, self.staged = self.staged, []
        recorded: list[RecordedEvent] = []
        for s in coalesced(staged):
            rows = await _run_append(self.conn, self.tenant_id, s.stream_id,
                                     s.expected_version, s.events)
            recorded += await self.opened(rows)
        return recorded


def coalesced(staged: Sequence[StagedAppend]) -> list[StagedAppend]:
    """``staged`` with each run of appends to one stream that follow on from each other
    (each at the version the one before leaves, or at any version) as one append: the
    same events at the same versions, checked against the first one's expected version,
    in one statement instead of one per command. Several commands on one ticket in one
    unit of work (an import's ticket, bench/import_zendesk.py) paid the append's
    statement, its stream lock and its statement triggers once per command."""
    out: list[StagedAppend] = []
    for s in staged:
        last = out[-1] if out else None
        if last is not None and last.stream_id == s.stream_id and (
                s.expected_version is None or (last.expected_version is not None and
                s.expected_version == last.expected_version + len(last.events))):
            out[-1] = StagedAppend(last.stream_id, last.expected_version,
                                   last.events + s.events)
        else:
            out.append(s)
    return out


def commit_error(exc: asyncpg.PostgresError, staged: Sequence[StagedAppend]
                  ) -> EventStoreError:
    """The store's error for an append or deferred write that failed at commit."""
    if staged and (exc.sqlstate == "HD004" or isinstance(exc, asyncpg.UniqueViolationError)):
        # HD004 names the stream and its current version (append_events); a unique
        # violation means someone appended without taking the stream's lock.
        message = str(exc)
        target = next((s for s in staged if str(s.stream_id) in message), staged[0])
        detail = getattr(exc, "detail", None) if exc.sqlstate == "HD004" else None
        actual = int(detail) if detail and detail.isdigit() else None
        return ConcurrencyError(target.stream_id, target.expected_version, actual)
    return translate(exc)


async def _run_append(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    stream_id: UUID,
    expected_version: int | None,
    events: Sequence[NewEvent],
) -> list[asyncpg.Record]:
    try:
        rows: list[asyncpg.Record] = await conn.fetch(
            Q["append"], tenant_id, stream_id, expected_version,
            [e.type for e in events], [e.schema_version for e in events],
            [e.data for e in events], [e.metadata for e in events],
        )
    except asyncpg.PostgresError as exc:
        if exc.sqlstate == "HD004":
            detail = getattr(exc, "detail", None)
            actual = int(detail) if detail and detail.isdigit() else None
            raise ConcurrencyError(stream_id, expected_version, actual) from exc
        if isinstance(exc, asyncpg.UniqueViolationError):
            # Someone appended to the stream without taking its lock: same meaning.
            raise ConcurrencyError(stream_id, expected_version, None) from exc
        raise translate(exc) from exc
    except UNAVAILABLE as exc:
        raise translate(exc) from exc
    return rows


