"""The part of a unit of work that reads events: a stream, the tenant's log, the
changes feed, the audit feed and exports, with sealed fields opened (or, for exports,
left sealed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from eventstore.sqlfile import load_queries
from eventstore.subject_keys import record_from_row
from eventstore.types import RecordedEvent
from eventstore.unit import UnitState

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class ChangesPage:
    """One page of ``UnitOfWork.read_changes``: the event rows (``seq``, ``stream_id``,
    ``version``, ``type``, ``schema_version``, ``data_json`` (the payload's JSON text),
    ``actor_kind``, ``actor_id``, ``recorded_at``), the seq to ask after next, and the
    head they were read at."""

    events: list[Any]
    """Records, or dicts for the rows whose sealed fields were opened."""
    next_after_seq: int
    head_seq: int


class Reads(UnitState):
    """Reads (mixed into ``eventstore.store.UnitOfWork``)."""

    async def stream_version(self, stream_id: UUID) -> int:
        """The stream's current version (0 for a stream with no events)."""
        version: int = await self.conn.fetchval(Q["stream_version"], self.tenant_id, stream_id)
        return version

    async def read_stream(
        self, stream_id: UUID, to_version: int | None = None
    ) -> list[RecordedEvent]:
        """The stream's events in version order, up to ``to_version`` if given."""
        rows = await self.conn.fetch(Q["read_stream"], self.tenant_id, stream_id, to_version)
        return await self.opened(rows)

    async def read_tenant(self, after_seq: int, limit: int) -> list[RecordedEvent]:
        """The tenant's events with ``seq > after_seq`` in seq order, at most ``limit``."""
        rows = await self.conn.fetch(Q["read_tenant"], self.tenant_id, after_seq, limit)
        return await self.opened(rows)

    async def read_changes(self, after_seq: int, limit: int, *, window: int,
                           types: Sequence[str] | None = None) -> ChangesPage:
        """A page of the tenant's events after ``after_seq`` in seq order, looking at
        most ``window`` seqs ahead, with ``types`` only (None: all), and the cursor to
        resume from (past the events the filter skipped, never past the committed
        head)."""
        rows = await self.conn.fetch(Q["changes"], self.tenant_id, after_seq,
                                     after_seq + window, None if types is None else list(types),
                                     limit)
        head = rows[0]["head_seq"] if rows else 0
        events = await self._opened_rows([r for r in rows if r["seq"] is not None])
        if len(events) >= limit:
            next_after = events[-1]["seq"]
        else:
            next_after = max(after_seq, min(after_seq + window, head))
        return ChangesPage(events, next_after, head)

    async def stream_first_type(self, stream_id: UUID) -> str | None:
        """The type of the stream's first event (None: the stream has none), which
        tells what kind of aggregate the stream is."""
        first: str | None = await self.conn.fetchval(Q["stream_first_type"], self.tenant_id,
                                                      stream_id)
        return first

    async def read_stream_page(self, stream_id: UUID, after_version: int,
                               limit: int) -> list[RecordedEvent]:
        """At most ``limit`` of the stream's events after ``after_version``, in order."""
        rows = await self.conn.fetch(Q["stream_page"], self.tenant_id, stream_id,
                                     after_version, limit)
        return await self.opened(rows)

    async def read_stream_until(self, stream_id: UUID, at: datetime) -> list[RecordedEvent]:
        """The stream's events recorded at or before ``at``, in version order."""
        rows = await self.conn.fetch(Q["stream_until"], self.tenant_id, stream_id, at)
        return await self.opened(rows)

    async def read_feed(self, after_seq: int, limit: int, *, types: Sequence[str] | None = None,
                        stream_id: UUID | None = None, actor_id: str | None = None,
                        recorded_from: datetime | None = None,
                        recorded_before: datetime | None = None) -> list[RecordedEvent]:
        """The tenant's events after ``after_seq`` in seq order, filtered; at most
        ``limit``."""
        rows = await self.conn.fetch(
            Q["feed"], self.tenant_id, after_seq, None if types is None else list(types),
            stream_id, actor_id, recorded_from, recorded_before, limit)
        return await self.opened(rows)

    async def read_range(self, after_seq: int, to_seq: int, limit: int) -> list[RecordedEvent]:
        """At most ``limit`` events with ``after_seq < seq <= to_seq``, in seq order,
        as stored (sealed fields stay sealed): what an export carries, so that it
        verifies offline and holds no personal data in the clear."""
        rows = await self.conn.fetch(Q["export_range"], self.tenant_id, after_seq, to_seq, limit)
        return [record_from_row(r) for r in rows]

    async def read_streams_stored(self, stream_ids: Sequence[UUID]) -> list[RecordedEvent]:
        """Every event of these streams in seq order, as stored (sealed fields sealed)."""
        rows = await self.conn.fetch(Q["streams_stored"], self.tenant_id, list(stream_ids))
        return [record_from_row(r) for r in rows]

