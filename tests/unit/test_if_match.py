"""If-Match parsing: the version a command asks for, or a 400 naming the header."""

from __future__ import annotations

import pytest

from api.http.commands import parse_if_match
from api.http.problems import Problem


@pytest.mark.parametrize(("header", "version"), [
    ('"3"', 3),
    ('W/"3"', 3),
    ('"0"', 0),
    ('"007"', 7),
    ('"999999999"', 999_999_999),
    ('  "12"  ', 12),
    ('\tW/"12"\t', 12),
])
def test_an_etag_names_the_version(header: str, version: int) -> None:
    assert parse_if_match(header) == version


@pytest.mark.parametrize("header", [None, "*", " * "])
def test_no_header_or_a_star_asks_for_no_version(header: str | None) -> None:
    assert parse_if_match(header) is None


@pytest.mark.parametrize("header", [
    "",
    " ",
    "3",                # not quoted
    '"3',
    '3"',
    "'3'",
    '""',
    '"-1"',
    '"+3"',
    '"3.0"',
    '"abc"',
    '"1e3"',
    '"1000000000"',     # ten digits: more than a version can be
    'w/"3"',            # the weak prefix is case-sensitive
    'W/ "3"',
    'W/3',
    '"3", "4"',         # a list of ETags is not supported
    '"3"x',
    '"²"',              # a superscript (headers arrive as Latin-1)
    "**",
    '"3"\x00',
])
def test_anything_else_is_a_400_naming_if_match(header: str) -> None:
    with pytest.raises(Problem) as info:
        parse_if_match(header)
    assert (info.value.status, info.value.code) == (400, "invalid_if_match")
    assert "If-Match" in info.value.detail
