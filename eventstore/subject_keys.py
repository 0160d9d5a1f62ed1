"""The part of a unit of work that holds its subjects' data keys: taken once and held
until commit, used to seal what it appends and to open what it reads
(eventstore/sealing.py does the sealing itself)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.keys import SubjectErased
from eventstore.sealing import Place, open_sealed, seal, subjects
from eventstore.sqlfile import load_queries
from eventstore.types import NewEvent, RecordedEvent
from eventstore.unit import UnitState

Q = load_queries(Path(__file__).with_name("queries.sql"))


def record_from_row(row: asyncpg.Record) -> RecordedEvent:
    """Build a RecordedEvent from a row with the events table's columns."""
    return RecordedEvent(
        tenant_id=TenantId(row["tenant_id"]),
        seq=row["seq"],
        stream_id=row["stream_id"],
        version=row["version"],
        type=row["type"],
        schema_version=row["schema_version"],
        data=row["data"],
        metadata=row["metadata"],
        actor_kind=row["actor_kind"],
        actor_id=row["actor_id"],
        recorded_at=row["recorded_at"],
        hash=bytes(row["hash"]),
    )


class SubjectKeys(UnitState):
    """Data keys and sealing (mixed into ``eventstore.store.UnitOfWork``)."""

    def held_key(self, subject: UUID, wrapped: bytes | None, kek: str | None) -> None:
        """A subject's wrapped data key (None: erased) that a read of this unit of work
        holds FOR SHARE until commit, as ``Keyring.take`` holds it (eventstore/
        queries.sql ``data_key_hold``): appends then seal with it without reading it
        again."""
        if self.keyring is not None:
            self._keys[subject] = (None if wrapped is None
                                   else self.keyring.unwrap(self.tenant_id, subject, wrapped, kek))

    async def new_subject(self, subject: UUID) -> None:
        """Make the data key of a subject this unit of work created under a fresh id
        (a new contact), and store it by ``write``: deferred, in the COMMIT's message.
        No one else can hold a key for it, so none is looked for; if one existed all
        the same, the commit fails rather than seal with a key never stored."""
        if self.keyring is None or subject in self._keys:
            return
        key, wrapped = self.keyring.make(self.tenant_id, subject)
        await self.write(Q["data_key_new"], self.tenant_id, subject, wrapped,
                         self.keyring.fingerprint)
        self._keys[subject] = key

    async def subject_key(self, subject: UUID) -> bytes:
        """The subject's data key, held until commit (``SubjectErased`` once erased):
        for sealing what is kept outside events with it (a file's key)."""
        return await self._key(subject)

    async def _key(self, subject: UUID) -> bytes:
        """The subject's data key, taken once per unit of work (it stays held)."""
        assert self.keyring is not None
        if subject not in self._keys:
            self._keys[subject] = await self.keyring.take(self.conn, self.tenant_id, subject)
        key = self._keys[subject]
        if key is None:
            raise SubjectErased(subject)
        return key

    async def _sealed(self, stream_id: UUID, expected_version: int,
                      events: Sequence[NewEvent]) -> list[NewEvent]:
        assert self.keyring is not None
        out: list[NewEvent] = []
        for offset, e in enumerate(events, start=1):
            if e.subject is None or not e.seal:
                out.append(e)
                continue
            key = await self._key(e.subject)
            place = Place(self.tenant_id, stream_id, expected_version + offset)
            out.append(replace(e, data=seal(e.data, e.seal, place, e.subject, key)))
        return out

    async def opened(self, rows: Sequence[asyncpg.Record]) -> list[RecordedEvent]:
        """Records of ``rows`` with their sealed fields opened, marked erased, or marked
        unreadable (and reported in ``broken``)."""
        records = [record_from_row(r) for r in rows]
        payloads = await self._open([(r.type, r.stream_id, r.version, r.data)
                                     for r in records])
        return [r if data is None else replace(r, data=data)
                for r, data in zip(records, payloads, strict=True)]

    async def _opened_rows(self, rows: list[Any]) -> list[Any]:
        """``read_changes`` rows (payloads as JSON text) with sealed fields opened, as
        ``opened`` does for records; rows without personal data pass as they are (and
        are not decoded)."""
        # Only a payload that holds a sealed value says "sealed" in its text.
        decoded = [orjson.loads(r["data_json"]) if '"sealed"' in r["data_json"] else None
                   for r in rows]
        payloads = await self._open([(r["type"], r["stream_id"], r["version"], data)
                                     for r, data in zip(rows, decoded, strict=True)
                                     if data is not None])
        opened = iter(payloads)
        out: list[Any] = []
        for r, data in zip(rows, decoded, strict=True):
            new = None if data is None else next(opened)
            out.append(r if new is None else {**dict(r), "data_json": orjson.dumps(new).decode()})
        return out

    async def _open(self, payloads: list[tuple[str, UUID, int, Mapping[str, Any]]]
                    ) -> list[dict[str, Any] | None]:
        """Each payload (type, stream, version, data) with its sealed fields opened, or
        None for one that holds none; one key read for them all."""
        if self.keyring is None:
            return [None] * len(payloads)
        whose = [subjects(data) for _, _, _, data in payloads]
        needed: set[UUID] = set().union(*whose)
        if not needed:
            return [None] * len(payloads)
        keys = await self.keyring.read(self.conn, self.tenant_id, needed)
        out: list[dict[str, Any] | None] = []
        for (_, stream, version, data), subject in zip(payloads, whose, strict=True):
            if not subject:
                out.append(None)
                continue
            opened, broken = open_sealed(data, Place(self.tenant_id, stream, version), keys)
            self.broken += broken
            out.append(opened)
        return out

