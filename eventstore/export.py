"""The audit export format: JSON lines carrying everything the hash chain covers.

Line 1 is a header naming the tenant, the range, the link before the range
(``prev_seq``, ``prev_hash``) and, when the range reaches the head, the head's hash.
Every further line is one event with every field ``eventstore.chain.canonical_bytes``
hashes plus its stored ``hash``, so ``verify_lines`` can recompute the chain with no
database. A range that starts after seq 1 is anchored on the exported ``prev_hash``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import orjson

from domain.ids import TenantId
from eventstore.chain import ZERO_HASH, ChainWalker, format_recorded_at
from eventstore.types import RecordedEvent

FORMAT = "helpdesk-audit-export/1"


class ExportFormatError(Exception):
    """A line of the file is not what the export writes."""


def header_line(tenant_id: UUID, from_seq: int, to_seq: int, prev_hash: bytes | None,
                head_seq: int, head_hash: bytes | None) -> bytes:
    """The first line of an export."""
    return orjson.dumps({
        "export": FORMAT, "tenant_id": str(tenant_id), "from_seq": from_seq,
        "to_seq": to_seq, "prev_seq": from_seq - 1,
        "prev_hash": prev_hash.hex() if prev_hash is not None else None,
        "head_seq": head_seq, "head_hash": head_hash.hex() if head_hash is not None else None,
    }) + b"\n"


def event_line(e: RecordedEvent) -> bytes:
    """One event as an export line."""
    return orjson.dumps({
        "tenant_id": str(e.tenant_id), "seq": e.seq, "stream_id": str(e.stream_id),
        "version": e.version, "type": e.type, "schema_version": e.schema_version,
        "data": e.data, "metadata": e.metadata, "actor_kind": e.actor_kind,
        "actor_id": e.actor_id, "recorded_at": format_recorded_at(e.recorded_at),
        "hash": e.hash.hex(),
    }) + b"\n"


def parse_event(obj: dict[str, Any]) -> RecordedEvent:
    """An export line back to the event it describes."""
    try:
        return RecordedEvent(
            tenant_id=TenantId(UUID(obj["tenant_id"])), seq=int(obj["seq"]),
            stream_id=UUID(obj["stream_id"]), version=int(obj["version"]), type=obj["type"],
            schema_version=int(obj["schema_version"]), data=obj["data"],
            metadata=obj["metadata"], actor_kind=obj["actor_kind"], actor_id=obj["actor_id"],
            recorded_at=datetime.strptime(obj["recorded_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
            .replace(tzinfo=UTC),
            hash=bytes.fromhex(obj["hash"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ExportFormatError(f"not an exported event: {exc}") from exc


@dataclass(frozen=True, slots=True)
class FileReport:
    ok: bool
    checked: int
    first_bad_seq: int | None
    last_seq: int
    tenant_id: str

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked, "first_bad_seq": self.first_bad_seq,
                "last_seq": self.last_seq, "tenant_id": self.tenant_id}


def verify_lines(lines: Iterable[bytes]) -> FileReport:
    """Verify an export offline: every link, no gaps, and the head when it is included.

    Events of another tenant or a header that is not first count as tampering at the
    seq where they appear.
    """
    it = iter(lines)
    try:
        header = orjson.loads(next(it))
    except (StopIteration, orjson.JSONDecodeError) as exc:
        raise ExportFormatError("the file does not start with an export header") from exc
    if not isinstance(header, dict) or header.get("export") != FORMAT:
        raise ExportFormatError("the file does not start with an export header")
    try:
        tenant = header["tenant_id"]
        prev_hash = header["prev_hash"]
        walker = ChainWalker(prev_seq=int(header["prev_seq"]),
                             prev_hash=bytes.fromhex(prev_hash) if prev_hash else ZERO_HASH)
        to_seq, head_seq = int(header["to_seq"]), int(header["head_seq"])
    except (KeyError, ValueError, TypeError) as exc:
        raise ExportFormatError(f"the export header is unreadable: {exc!r}") from exc
    unanchored = prev_hash is None and walker.prev_seq > 0
    for raw in it:
        if not raw.strip():
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ExportFormatError("a line is not JSON") from exc
        event = parse_event(obj)
        if unanchored:
            # The link before the range was missing at export: nothing to chain onto.
            walker.first_bad_seq = walker.prev_seq + 1
        if obj["tenant_id"] != tenant and walker.first_bad_seq is None:
            walker.first_bad_seq = event.seq
        if not walker.feed(event):
            break
    if walker.first_bad_seq is None and walker.prev_seq < to_seq:
        walker.first_bad_seq = walker.prev_seq + 1  # events at the end are missing
    head_hash = header.get("head_hash")
    if (walker.first_bad_seq is None and to_seq == head_seq and head_hash is not None
            and walker.prev_hash.hex() != head_hash):
        walker.first_bad_seq = head_seq
    return FileReport(walker.first_bad_seq is None, walker.checked, walker.first_bad_seq,
                      walker.prev_seq, tenant)
