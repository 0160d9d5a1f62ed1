"""The SQL literal writer (eventstore/literal.py), as text: what each value becomes,
that no text can end its literal early, and what it refuses; in a statement of its
own (``statement``) and as the arguments of a prepared one (``prepare``, ``execute``).

tests/integration/test_literal_round_trip.py sends the same literals to Postgres and
reads the values back.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from uuid import UUID

import orjson
import pytest

from eventstore import literal
from eventstore.literal import append_call, execute, prepare, prepared_name, statement
from eventstore.types import NewEvent

TAG = re.compile(r"\$e[0-9a-f]{8}\$")
U1 = UUID("0b5a3c4e-8f1d-4c2a-9e7b-1d2c3b4a5f60")
U2 = UUID("ffffffff-0000-4000-8000-000000000001")

# Texts that try to end a dollar-quoted literal, start a comment or a parameter, or
# otherwise be read as something other than themselves.
HOSTILE = [
    "", "plain", "it's", "'", "''", '"double"', "back\\slash", "trailing\\", "\\x41",
    "$", "$$", "$$ dollar $$", "$1", "$e$", "$e0123abcd$", "$e0123abcd", "e0123abcd$",
    "'; DROP TABLE lit; --", "-- not a comment", "/* not a comment */", "x;COMMIT;",
    "line\nbreak\r\n\ttab", "naïve café", "日本語", "🙂 👩‍👩‍👧", "\u202eRTL", "\u00a0",
    "{braces,and,commas}", "NULL", " spaced ", "E'\\n'", "\x01\x1f\x7f", "\ufeffbom",
    "\U0010ffff",
]


def _only_value(sql: str, prefix: str = "SELECT ") -> str:
    assert sql.startswith(prefix) and sql.endswith(";")
    return sql[len(prefix):-1]


def _dollar_quoted(written: str) -> tuple[str, str]:
    """(tag, body) of a dollar-quoted literal that is the whole of ``written``."""
    match = TAG.match(written)
    assert match is not None, written
    tag = match.group(0)
    assert written.endswith(tag) and len(written) >= 2 * len(tag)
    return tag, written[len(tag):-len(tag)]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_text_is_dollar_quoted_under_a_tag_it_does_not_contain(text: str):
    sql = statement("SELECT $1", [text])
    tag, body = _dollar_quoted(_only_value(sql))
    # The body goes in as it is: no escaping, so nothing to get wrong.
    assert body == text
    assert tag not in text
    assert sql.count(tag) == 2


def test_every_text_of_a_statement_shares_one_tag_that_none_of_them_holds():
    sql = statement("SELECT $1, $2, $3, $4", [HOSTILE, {"k": HOSTILE}, "a", HOSTILE[-5]])
    # One HOSTILE text has the shape of a tag; every other tag in the text is the one.
    tags = set(TAG.findall(sql)) - {"$e0123abcd$"}
    assert len(tags) == 1
    (tag,) = tags
    assert not any(tag in t for t in HOSTILE)


def test_a_tag_that_occurs_in_a_text_is_drawn_again(monkeypatch: pytest.MonkeyPatch):
    draws = iter(["0123abcd", "0123abcd", "feedf00d", "00000000"])
    monkeypatch.setattr(literal.secrets, "token_hex", lambda n: next(draws))
    sql = statement("SELECT $1, $2", ["holds $e0123abcd$ inside", {"k": "$e0123abcd$"}])
    assert "$e0123abcd$" not in sql.replace("holds $e0123abcd$ inside", "").replace(
        '{"k":"$e0123abcd$"}', "")
    assert sql == ('SELECT $efeedf00d$holds $e0123abcd$ inside$efeedf00d$, '
                   '$efeedf00d${"k":"$e0123abcd$"}$efeedf00d$;')


def test_a_tag_is_drawn_afresh_for_each_statement():
    tags = {TAG.findall(statement("SELECT $1", ["x"]))[0] for _ in range(20)}
    assert len(tags) > 1


@pytest.mark.parametrize(("value", "written"), [
    (None, "NULL"),
    (True, "true"),
    (False, "false"),
    (0, "0"),
    (-7, "-7"),
    (2**63 - 1, "9223372036854775807"),
    (-(10**40), "-10000000000000000000000000000000000000000"),
    (1.5, "'1.5'::float8"),
    (-0.0, "'-0.0'::float8"),
    (5e-324, "'5e-324'::float8"),
    (1e300, "'1e+300'::float8"),
    (float("inf"), "'inf'::float8"),
    (float("-inf"), "'-inf'::float8"),
    (float("nan"), "'nan'::float8"),
    (U1, f"'{U1}'::uuid"),
    (datetime(2026, 3, 29, 1, 30, 0, 123456, tzinfo=UTC),
     "'2026-03-29T01:30:00.123456+00:00'::timestamptz"),
    (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5, minutes=30))),
     "'0001-01-01T00:00:00+05:30'::timestamptz"),
    (datetime(1900, 1, 1, tzinfo=timezone(timedelta(minutes=19, seconds=32))),
     "'1900-01-01T00:00:00+00:19:32'::timestamptz"),
    (b"", "'\\x'::bytea"),
    (b"\x00\xff'\\", "'\\x00ff275c'::bytea"),
    (bytearray(b"ab"), "'\\x6162'::bytea"),
    (memoryview(b"ab"), "'\\x6162'::bytea"),
    ([U1, U2], f"'{{{U1},{U2}}}'::uuid[]"),
    ((U2,), f"'{{{U2}}}'::uuid[]"),
])
def test_each_value_is_written_as_a_typed_literal(value: object, written: str):
    assert _only_value(statement("SELECT $1", [value])) == written


def test_a_bool_is_never_a_number():
    # bool is an int in Python; here it is written as a boolean, and refused where only
    # a number may stand.
    assert statement("SELECT $1", [1]) == "SELECT 1;"
    assert statement("SELECT $1", [True]) == "SELECT true;"
    with pytest.raises(TypeError):
        append_call(U1, U2, True, [NewEvent("T", {})])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        statement("SELECT $1", [[1, True]])


def test_an_int_subclass_is_not_taken_for_digits():
    class Sneaky(int):
        def __str__(self) -> str:
            return "1; DROP TABLE events"

    with pytest.raises(TypeError):
        statement("SELECT $1", [Sneaky(1)])


def test_a_uuid_is_written_from_its_value_not_its_text():
    class Loud(UUID):
        def __str__(self) -> str:
            return "'; DROP TABLE events; --"

    # Not through __str__ of the subclass: UUID(str(...)) would fail on that text, so
    # the writer must refuse rather than write it in.
    with pytest.raises(ValueError):
        statement("SELECT $1", [Loud(int=U1.int)])


def test_arrays_of_texts_quote_each_element_inside_one_dollar_quoted_literal():
    elements = ["a", "", "NULL", "x,y", "{z}", 'q"uote', "back\\slash", " s ", "$e$"]
    tag, body = _dollar_quoted(_only_value(statement("SELECT $1", [elements])))
    assert body == ('{"a","","NULL","x,y","{z}","q\\"uote","back\\\\slash"," s ","$e$"}')
    assert tag not in "".join(elements)


def test_arrays_of_numbers_and_mixed_ids_are_array_literals_of_unknown_type():
    _, body = _dollar_quoted(_only_value(statement("SELECT $1", [[1, -2, 10**30]])))
    assert body == "{1,-2,1000000000000000000000000000000}"
    _, body = _dollar_quoted(_only_value(statement("SELECT $1", [[U1, "x"]])))
    assert body == f'{{{U1},"x"}}'
    _, body = _dollar_quoted(_only_value(statement("SELECT $1", [[]])))
    assert body == "{}"


def test_sets_are_arrays_of_their_members():
    _, body = _dollar_quoted(_only_value(statement("SELECT $1", [frozenset({"b", "a"})])))
    assert sorted(body.strip("{}").split(",")) == ['"a"', '"b"']


def test_json_is_the_objects_orjson_text_dollar_quoted():
    doc = {"text": "it's $$ \\ \"q\"", "n": 10**18, "nested": {"list": [1, None, True]},
           "unicode": "日本 🙂", "nul": "a\x00b"}
    _, body = _dollar_quoted(_only_value(statement("SELECT $1", [doc])))
    assert body == ('{"text":"it\'s $$ \\\\ \\"q\\"","n":1000000000000000000,'
                    '"nested":{"list":[1,null,true]},"unicode":"日本 🙂","nul":"a\\u0000b"}')


def test_nul_is_written_in_as_it_is():
    # Postgres text cannot hold NUL. The writer does not refuse it: the raw NUL lands in
    # the statement's text, and the server then refuses the whole message (the
    # integration test shows it, and that nothing of it runs). In JSON it is the
    # escape \u0000, which jsonb refuses.
    assert statement("SELECT $1", ["a\x00b"]).count("\x00") == 1
    assert "\x00" not in statement("SELECT $1", [{"k": "a\x00b"}])


@pytest.mark.parametrize("value", [
    datetime(2026, 1, 1),  # no time zone: which instant is meant is unknown
    Decimal("1.5"),
    object(),
    [1.5],
    [b"x"],
    [[1]],
    [datetime(2026, 1, 1)],
])
def test_values_with_no_literal_are_refused(value: object):
    with pytest.raises(TypeError):
        statement("SELECT $1", [value])


def test_parameters_are_replaced_in_the_code_only():
    sql = statement(
        "SELECT $1, '$1 it''s', \"$2 col\", $2 -- $3 gone\nFROM t WHERE x = $10;",
        ["a", 2, *range(3, 10), "ten"])
    tag = TAG.findall(sql)[0]
    assert sql == (f"SELECT {tag}a{tag}, '$1 it''s', \"$2 col\", 2 \n"
                   f"FROM t WHERE x = {tag}ten{tag};")


def test_a_parameter_without_an_argument_is_refused():
    with pytest.raises(ValueError, match=r"\$2 has no argument"):
        statement("SELECT $1, $2", ["a"])
    with pytest.raises(ValueError, match=r"\$0 has no argument"):
        statement("SELECT $0", ["a"])
    # A comment is dropped before it is read: what it names needs no argument.
    assert statement("SELECT 1 -- $9", []) == "SELECT 1;"


def test_a_statement_ends_in_exactly_one_semicolon():
    assert statement("  SELECT 1;  \n", []) == "SELECT 1;"
    assert statement("SELECT 1", []) == "SELECT 1;"


def test_append_call_writes_one_typed_call_with_every_text_under_one_tag():
    events = [NewEvent("Ticket'Opened", {"subject": "$$ hi $e$"}, 2, {"corr": "x"}),
              NewEvent("B", {"n": 2**63 - 1, "s": "\\"})]
    sql = append_call(U1, U2, 4, events)
    (tag,) = set(TAG.findall(sql))
    assert sql == (
        f"SELECT count(*) FROM append_events('{U1}'::uuid, '{U2}'::uuid, 4::integer, "
        f"ARRAY[{tag}Ticket'Opened{tag},{tag}B{tag}]::text[], ARRAY[2,1]::integer[], "
        f'ARRAY[{tag}{{"subject":"$$ hi $e$"}}{tag},{tag}{{"n":9223372036854775807,'
        f'"s":"\\\\"}}{tag}]::jsonb[], '
        f'ARRAY[{tag}{{"corr":"x"}}{tag},{tag}{{}}{tag}]::jsonb[]);')
    assert append_call(U1, U2, None, events[:1]).count("NULL::integer") == 1


def test_json_numbers_beyond_64_bits_are_refused_not_rounded():
    # orjson writes integers of 64 bits at most; a larger one is an error, never a
    # float that would mean another number.
    with pytest.raises(TypeError):
        statement("SELECT $1", [{"n": 2**64}])
    with pytest.raises(TypeError):
        append_call(U1, U2, 1, [NewEvent("T", {"n": -(2**63) - 1})])


def test_append_call_refuses_a_version_that_is_not_an_int():
    with pytest.raises(TypeError):
        append_call(U1, U2, "1", [NewEvent("T", {})])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        append_call(U1, U2, 1, [NewEvent("T", {}, schema_version=1.0)])  # type: ignore[arg-type]


def test_append_call_takes_ids_only_as_uuids():
    with pytest.raises(ValueError):
        append_call("x'::uuid, 'y", U2, 1, [NewEvent("T", {})])  # type: ignore[arg-type]


def test_a_prepared_statement_is_named_by_its_text():
    name = prepared_name("INSERT INTO t VALUES ($1)")
    assert re.fullmatch(r"hd_[0-9a-f]{24}", name)
    assert prepared_name("INSERT INTO t VALUES ($1)") == name
    assert prepared_name("INSERT INTO t VALUES ($1) ") != name


def test_prepare_keeps_the_parameters_and_drops_the_comments():
    query = "INSERT INTO t VALUES ($1, '-- $2 stays', \"$3\") -- $4 goes\n;"
    assert prepare(query) == (f"PREPARE {prepared_name(query)} AS "
                              "INSERT INTO t VALUES ($1, '-- $2 stays', \"$3\") \n;")


def test_execute_writes_each_argument_as_statement_does():
    query = "INSERT INTO t VALUES ($1, $2, $3, $4)"
    sql = execute(query, ["it's $$", 2**63 - 1, U1, {"k": HOSTILE}])
    (tag,) = set(TAG.findall(sql)) - {"$e0123abcd$"}
    assert sql == (f"EXECUTE {prepared_name(query)}({tag}it's $${tag}, 9223372036854775807, "
                   f"'{U1}'::uuid, {tag}{orjson.dumps({'k': HOSTILE}).decode()}{tag});")
    assert execute("SELECT 1", []) == f"EXECUTE {prepared_name('SELECT 1')};"


@pytest.mark.parametrize("text", HOSTILE)
def test_an_executed_text_is_dollar_quoted_under_a_tag_it_does_not_contain(text: str):
    sql = execute("SELECT $1", [text])
    written = sql.removeprefix(f"EXECUTE {prepared_name('SELECT $1')}(").removesuffix(");")
    tag, body = _dollar_quoted(written)
    assert body == text and tag not in text


def test_array_elements_null_times_and_objects():
    # NULL is bare; the text "NULL" is quoted, so it stays a text. Times are written as
    # a lone value's text is; objects as their JSON, escaped as every quoted element.
    sql = statement("SELECT $1", [[None, "NULL", 2, UUID(int=1),
                                   datetime(2026, 1, 1, tzinfo=UTC), {"k": 'a"b'}]])
    tag = TAG.findall(sql)[0]
    assert sql == (f'SELECT {tag}{{NULL,"NULL",2,{UUID(int=1)},"2026-01-01T00:00:00+00:00",'
                   f'"{{\\"k\\":\\"a\\\\\\"b\\"}}"}}{tag};')
