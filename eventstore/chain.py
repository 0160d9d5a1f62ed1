"""The hash chain's canonical bytes, computed in Python.

The database computes each link as ``sha256(prev_hash || event_canonical(...))``
(migrations/sql/0001_event_store.sql). This module reproduces ``event_canonical``
byte for byte — the text of a jsonb array, as Postgres prints it — so an exported
history can be verified offline with no database.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

from eventstore.types import RecordedEvent

ZERO_HASH = bytes(32)

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}


def _string(value: str) -> str:
    # Postgres' escape_json: the named escapes, \u00XX for other control characters,
    # everything else (non-ASCII included) as is.
    out = ['"']
    for ch in value:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key_order(key: str) -> tuple[int, bytes]:
    # jsonb keeps object keys sorted by byte length, then bytewise.
    raw = key.encode("utf-8")
    return len(raw), raw


def jsonb_text(value: Any) -> str:
    """``value::jsonb::text`` exactly as Postgres prints it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # orjson's text is what the store sent; numeric prints it in plain notation.
        return format(Decimal(orjson.dumps(value).decode()), "f")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(jsonb_text(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: _key_order(kv[0]))
        return "{" + ", ".join(f"{_string(k)}: {jsonb_text(v)}" for k, v in items) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def format_recorded_at(ts: datetime) -> str:
    """The timestamp text inside the canonical bytes: UTC, microseconds, ``Z``."""
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def canonical_bytes(event: RecordedEvent) -> bytes:
    """The bytes the chain hashes for one event."""
    return jsonb_text([
        str(event.tenant_id), event.seq, str(event.stream_id), event.version, event.type,
        event.schema_version, event.data, event.metadata, event.actor_kind, event.actor_id,
        format_recorded_at(event.recorded_at),
    ]).encode("utf-8")


def link_hash(prev_hash: bytes, event: RecordedEvent) -> bytes:
    """The hash the chain stores for ``event`` when it follows ``prev_hash``."""
    return hashlib.sha256(prev_hash + canonical_bytes(event)).digest()


@dataclass(slots=True)
class ChainWalker:
    """Checks events one by one, in seq order, as they stream past.

    Start it with the seq and hash of the event before the first one to check
    (0 and the zero hash for a whole chain).
    """

    prev_seq: int = 0
    prev_hash: bytes = ZERO_HASH
    checked: int = 0
    first_bad_seq: int | None = None

    def feed(self, event: RecordedEvent) -> bool:
        """Check one event; returns False (and remembers where) at the first bad link."""
        if self.first_bad_seq is not None:
            return False
        self.checked += 1
        if event.seq != self.prev_seq + 1:
            self.first_bad_seq = self.prev_seq + 1
            return False
        if link_hash(self.prev_hash, event) != event.hash:
            self.first_bad_seq = event.seq
            return False
        self.prev_seq, self.prev_hash = event.seq, event.hash
        return True

    def feed_all(self, events: Iterable[RecordedEvent]) -> bool:
        """Check a batch; stops at the first bad link."""
        return all(self.feed(e) for e in events)
