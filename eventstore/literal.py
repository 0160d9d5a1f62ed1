"""SQL text with its values written in, for the one statement that cannot take
parameters: the appends a unit of work sends in its COMMIT's message.

Why: the append takes the tenant head lock, held until commit. Sent as its own query
and followed by COMMIT from Python, the lock waited for the event loop to come back
to that request before the COMMIT went out; under load that was most of the time the
lock was held, and every writer of the tenant queued behind it. Sent in one simple
query with the COMMIT, the server runs both back to back and the lock is held for
server time only (eventstore/pool.py ``StoreConnection.commit_with``).

Values are typed literals: ids as uuid literals, numbers as decimal digits (checked
ints), and every text (event types, JSON payloads) dollar-quoted with a random tag
that does not occur in any of the texts, so nothing inside can end the literal, and
there is no escaping to get wrong.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from uuid import UUID

import orjson

from eventstore.types import NewEvent


def _int(value: int) -> str:
    if type(value) is not int:  # bool is an int too; never a number here
        raise TypeError(f"not an int: {value!r}")
    return str(value)


def _tag(texts: Iterable[str]) -> str:
    body = list(texts)
    while True:
        tag = f"$e{secrets.token_hex(4)}$"
        if not any(tag in text for text in body):
            return tag


def append_call(tenant_id: UUID, stream_id: UUID, expected_version: int | None,
                events: Sequence[NewEvent]) -> str:
    """``SELECT count(*) FROM append_events(...)`` for one stream, values written in."""
    types = [e.type for e in events]
    data = [orjson.dumps(e.data).decode() for e in events]
    metadata = [orjson.dumps(e.metadata).decode() for e in events]
    tag = _tag([*types, *data, *metadata])

    def quoted(values: list[str], cast: str) -> str:
        return "ARRAY[" + ",".join(f"{tag}{v}{tag}" for v in values) + f"]::{cast}[]"

    expected = "NULL" if expected_version is None else _int(expected_version)
    return (
        f"SELECT count(*) FROM append_events('{UUID(str(tenant_id))}'::uuid, "
        f"'{UUID(str(stream_id))}'::uuid, {expected}::integer, {quoted(types, 'text')}, "
        f"ARRAY[{','.join(_int(e.schema_version) for e in events)}]::integer[], "
        f"{quoted(data, 'jsonb')}, {quoted(metadata, 'jsonb')});"
    )


__all__ = ["append_call"]
