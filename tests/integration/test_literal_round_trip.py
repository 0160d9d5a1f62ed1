"""The literal writer's literals mean their values: each one written by
eventstore/literal.py, sent as text in a simple query (as a unit of work's COMMIT
message is) as the runtime role, and read back with parameters.

tests/unit/test_literal.py checks the same literals as text.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from eventstore.literal import append_call, execute, prepare, prepared_name, statement
from eventstore.pool import connect
from eventstore.types import NewEvent
from tests.support import pg
from tests.unit.test_literal import HOSTILE

COLUMNS = ("t text, j jsonb, ta text[], ua uuid[], ia bigint[], i bigint, n numeric, "
           "f float8, u uuid, ts timestamptz, b bytea, bo boolean, tsa timestamptz[], "
           "ja jsonb[]")

ELEMENTS = ["", "NULL", "x,y", "{z}", 'q"', "\\", " s ", "a b"]

CASES: list[tuple[str, Any, Any]] = [
    *(("t", text, text) for text in HOSTILE),
    ("t", None, None),
    ("ta", HOSTILE, HOSTILE),
    ("ta", ELEMENTS, ELEMENTS),
    ("ta", [], []),
    ("j", {"texts": HOSTILE}, {"texts": HOSTILE}),
    ("j", {"n": 2**63 - 1, "neg": -(2**63), "f": 0.1, "nested": [None, True, {"": ""}]},
     {"n": 2**63 - 1, "neg": -(2**63), "f": 0.1, "nested": [None, True, {"": ""}]}),
    ("j", {}, {}),
    ("ua", [uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)],
     [uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)]),
    ("ua", [], []),
    ("ua", [None, uuid.UUID(int=3), None], [None, uuid.UUID(int=3), None]),
    ("ta", [None, "NULL", None], [None, "NULL", None]),
    ("ia", [None, 7], [None, 7]),
    ("tsa", [datetime(2026, 12, 2, 10, 0, 0, 5, tzinfo=UTC), None,
             datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Amsterdam"))],
     [datetime(2026, 12, 2, 10, 0, 0, 5, tzinfo=UTC), None,
      datetime(2026, 10, 25, 1, 30, tzinfo=UTC)]),
    ("ja", [{"texts": HOSTILE}, None, {"q": '"\\', "n": [1, None]}],
     [{"texts": HOSTILE}, None, {"q": '"\\', "n": [1, None]}]),
    ("ia", [0, -1, 2**63 - 1, -(2**63)], [0, -1, 2**63 - 1, -(2**63)]),
    ("i", 2**63 - 1, 2**63 - 1),
    ("i", -(2**63), -(2**63)),
    ("n", 10**40, Decimal(10**40)),
    ("n", -(10**40) - 1, Decimal(-(10**40) - 1)),
    ("f", 5e-324, 5e-324),
    ("f", 1e300, 1e300),
    ("f", -0.0, -0.0),
    ("f", float("inf"), float("inf")),
    ("f", float("-inf"), float("-inf")),
    ("u", uuid.UUID("0b5a3c4e-8f1d-4c2a-9e7b-1d2c3b4a5f60"),
     uuid.UUID("0b5a3c4e-8f1d-4c2a-9e7b-1d2c3b4a5f60")),
    ("ts", datetime(2026, 3, 29, 1, 30, 0, 123456, tzinfo=UTC),
     datetime(2026, 3, 29, 1, 30, 0, 123456, tzinfo=UTC)),
    ("ts", datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=ZoneInfo("Europe/Amsterdam")),
     datetime(2026, 10, 25, 1, 30, tzinfo=UTC)),
    ("ts", datetime(1900, 1, 1, tzinfo=timezone(timedelta(minutes=19, seconds=32))),
     datetime(1899, 12, 31, 23, 40, 28, tzinfo=UTC)),
    ("ts", datetime(1, 1, 1, 12, tzinfo=UTC), datetime(1, 1, 1, 12, tzinfo=UTC)),
    ("b", b"", b""),
    ("b", bytes(range(256)), bytes(range(256))),
    ("b", bytearray(b"'\\"), b"'\\"),
    ("bo", True, True),
    ("bo", False, False),
]


def _same(got: Any, expected: Any) -> bool:
    """Equal and of the expected kind (asyncpg's uuid is a subclass; -0.0 keeps its
    sign)."""
    if isinstance(expected, float):
        return isinstance(got, float) and repr(got) == repr(expected)
    return got == expected and isinstance(got, type(expected))


@pytest.fixture
async def conn(db: pg.TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    c = await connect(db.runtime_url)
    await c.execute(f"CREATE TEMP TABLE lit ({COLUMNS})")
    yield c
    await c.close()


async def test_every_literal_reads_back_as_its_value(conn: asyncpg.Connection):
    wrong = []
    for column, value, expected in CASES:
        # No arguments: asyncpg sends the text as a simple query, as the COMMIT
        # message goes.
        await conn.execute(statement(f"INSERT INTO lit ({column}) VALUES ($1)", [value]))
        got = await conn.fetchval(f"DELETE FROM lit RETURNING {column}")
        if not _same(got, expected):
            wrong.append((column, value, got))
    assert wrong == []


async def test_every_literal_reads_back_through_a_prepared_statement(conn: asyncpg.Connection):
    # As a unit of work's COMMIT message sends its deferred writes: PREPARE once,
    # then EXECUTE with the values written in, typed by the statement's parameters.
    wrong = []
    for column, value, expected in CASES:
        query = f"INSERT INTO lit ({column}) VALUES ($1)"
        await conn.execute(f"{prepare(query)}\n{execute(query, [value])}")
        await conn.execute(f"DEALLOCATE {prepared_name(query)}")
        got = await conn.fetchval(f"DELETE FROM lit RETURNING {column}")
        if not _same(got, expected):
            wrong.append((column, value, got))
    assert wrong == []


async def test_nan_reads_back_as_nan(conn: asyncpg.Connection):
    await conn.execute(statement("INSERT INTO lit (f) VALUES ($1)", [float("nan")]))
    assert await conn.fetchval("SELECT f = 'NaN'::float8 FROM lit")


async def test_hostile_texts_in_one_commit_message_land_whole_and_apart(
        conn: asyncpg.Connection):
    # As a unit of work sends its deferred writes: one message, BEGIN to COMMIT.
    writes = [statement("INSERT INTO lit (t, j, ta) VALUES ($1, $2, $3)",
                        [text, {"k": text}, [text, text]]) for text in HOSTILE]
    await conn.execute("BEGIN;\n" + "\n".join(writes) + "\nCOMMIT;")
    rows = await conn.fetch("SELECT t, j, ta FROM lit")
    assert sorted((r["t"], r["j"]["k"], tuple(r["ta"])) for r in rows) == sorted(
        (t, t, (t, t)) for t in HOSTILE)
    assert await conn.fetchval("SELECT count(*) FROM pg_class WHERE relname = 'lit'") == 1


async def test_a_nul_is_refused_by_the_server_and_nothing_of_its_message_runs(
        conn: asyncpg.Connection):
    # The writer leaves NUL in the text (tests/unit/test_literal.py); Postgres refuses
    # the message as malformed, so neither the write nor the COMMIT after it runs.
    message = ("BEGIN;\n" + statement("INSERT INTO lit (t) VALUES ($1)", ["ok"]) + "\n"
               + statement("INSERT INTO lit (t) VALUES ($1)", ["a\x00b"]) + "\nCOMMIT;")
    with pytest.raises(asyncpg.ProtocolViolationError):
        await conn.execute(message)
    assert await conn.fetchval("SELECT count(*) FROM lit") == 0
    for array in (["a\x00b"],):
        with pytest.raises(asyncpg.ProtocolViolationError):
            await conn.execute(statement("INSERT INTO lit (ta) VALUES ($1)", [array]))
    # In JSON, NUL is the escape \u0000, which jsonb refuses by name.
    with pytest.raises(asyncpg.UntranslatableCharacterError):
        await conn.execute(statement("INSERT INTO lit (j) VALUES ($1)", [{"k": "a\x00b"}]))
    assert await conn.fetchval("SELECT count(*) FROM lit") == 0


async def test_an_append_call_stores_its_events_as_written(db: pg.TestDatabase, make_tenant):
    tenant = (await make_tenant()).tenant_id
    stream = uuid.uuid4()
    events = [NewEvent(f"T{n}{text}", {"text": text, "n": n}, n + 1, {"m": text})
              for n, text in enumerate(HOSTILE)]
    arm = (f"SELECT set_config('app.tenant_id', '{tenant}', true), "
           "set_config('app.actor_kind', 'system', true), "
           "set_config('app.actor_id', 'literal-test', true);")
    c = await connect(db.runtime_url)
    try:
        await c.execute(f"BEGIN; {arm}\n{append_call(tenant, stream, 0, events)}\nCOMMIT;")
        async with c.transaction():
            await c.execute(arm)
            rows = await c.fetch("SELECT version, type, schema_version, data, metadata "
                                 "FROM events WHERE stream_id = $1 ORDER BY version", stream)
    finally:
        await c.close()
    assert [(r["type"], r["schema_version"], r["data"], r["metadata"]) for r in rows] == [
        (e.type, e.schema_version, e.data, e.metadata) for e in events]
    assert [r["version"] for r in rows] == list(range(1, len(events) + 1))
