"""SQL text with its values written in, for the statements that cannot take
parameters: the appends and deferred writes a unit of work sends in its COMMIT's
message.

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

import functools
import hashlib
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any
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


# In a query's text: a quoted string or identifier (left as it is), a comment (dropped,
# so no value written in can land inside one), or a parameter ($1...).
_END = datetime.max.replace(tzinfo=UTC)
_START = datetime.min.replace(tzinfo=UTC)
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|\$(\d+)")


def _array_element(value: Any) -> str:
    """One element of an array literal: NULL bare (a text is always quoted, so the
    text "NULL" stays a text), numbers and ids bare, the rest quoted with backslash
    escapes: texts, times (as ``_value`` writes them) and JSON objects. A bool is
    refused: no column array here holds one, and it is never a number."""
    if value is None:
        return "NULL"
    if isinstance(value, UUID | int) and not isinstance(value, bool):
        return str(value if isinstance(value, UUID) else _int(value))
    text: str
    if isinstance(value, datetime):
        text = _time(value)
    elif isinstance(value, dict):
        text = orjson.dumps(value).decode()
    elif isinstance(value, str):
        text = value
    else:
        raise TypeError(f"no array literal for {type(value).__name__}")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _time(value: datetime) -> str:
    """A time's text: ISO 8601 with its offset; the ends of time are Postgres'
    infinities, as asyncpg sends them."""
    if value.tzinfo is None:
        raise TypeError("a datetime without a time zone")
    if value == _END:
        return "infinity"
    if value == _START:
        return "-infinity"
    return value.isoformat()


def _value(value: Any, quote: str) -> str:
    """One parameter's value as a literal. Texts, arrays and JSON are string constants
    of unknown type, dollar-quoted with ``quote``: the server types them from where
    they stand, as it types a parameter; the other values carry their type."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return f"'{value!r}'::float8"
    if isinstance(value, UUID):
        return f"'{UUID(str(value))}'::uuid"
    if isinstance(value, datetime):
        return f"'{_time(value)}'::timestamptz"
    if isinstance(value, bytes | bytearray | memoryview):
        return f"'\\x{bytes(value).hex()}'::bytea"
    if isinstance(value, str):
        return f"{quote}{value}{quote}"
    if isinstance(value, list | tuple | frozenset | set):
        if value and all(isinstance(v, UUID) for v in value):
            return "'{" + ",".join(str(UUID(str(v))) for v in value) + "}'::uuid[]"
        return quote + "{" + ",".join(_array_element(v) for v in value) + "}" + quote
    if isinstance(value, dict):
        return f"{quote}{orjson.dumps(value).decode()}{quote}"
    raise TypeError(f"no literal for {type(value).__name__}")


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        yield orjson.dumps(value).decode()
    elif isinstance(value, list | tuple | frozenset | set):
        for v in value:
            yield from _texts(v)


def statement(query: str, args: Sequence[Any]) -> str:
    """``query`` (parameters ``$1``...) with ``args`` written in as literals, ending in
    a semicolon: what ``execute(query, *args)`` runs, as text for a simple query.

    Values are written as ``append_call`` writes them: texts, JSON and arrays of texts
    dollar-quoted under a tag that occurs in none of them, ids and times as typed
    literals, numbers as checked digits. Comments in ``query`` are dropped."""
    quote = _tag(t for a in args for t in _texts(a))

    def written(match: re.Match[str]) -> str:
        number = match.group(1)
        if number is not None:
            index = int(number) - 1
            if not 0 <= index < len(args):
                raise ValueError(f"${number} has no argument")
            return _value(args[index], quote)
        token = match.group(0)
        return "" if token.startswith("--") else token

    return _TOKEN.sub(written, query).strip().rstrip(";") + ";"


@functools.lru_cache(maxsize=1024)
def prepared_name(query: str) -> str:
    """The name a connection prepares ``query`` under (``PREPARE``): derived from the
    text, so every connection names one statement alike and no two statements share
    a name. The prefix keeps clear of asyncpg's own statements."""
    return "hd_" + hashlib.sha1(query.encode("utf-8")).hexdigest()[:24]


def prepare(query: str) -> str:
    """``PREPARE`` of ``query`` under its ``prepared_name``, comments dropped: the
    server parses it once per connection, and plans it once it has seen it run (a
    prepared statement's generic plan), instead of at every commit."""
    body = _TOKEN.sub(lambda m: "" if m.group(0).startswith("--") else m.group(0), query)
    return f"PREPARE {prepared_name(query)} AS {body.strip().rstrip(';')};"


def execute(query: str, args: Sequence[Any]) -> str:
    """``EXECUTE`` of ``query``'s prepared statement with ``args`` written in as
    ``statement`` writes them; the prepared statement types each from its place."""
    if not args:
        return f"EXECUTE {prepared_name(query)};"
    quote = _tag(t for a in args for t in _texts(a))
    values = ", ".join(_value(a, quote) for a in args)
    return f"EXECUTE {prepared_name(query)}({values});"


__all__ = ["append_call", "execute", "prepare", "prepared_name", "statement"]
