"""The cursor codec and page cutting, on plain values: no database, no HTTP."""

from __future__ import annotations

import base64
import hashlib
import hmac
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from api.http.pagination import (
    MAX_CURSOR_LENGTH,
    CursorCodec,
    Position,
    paginate,
    paginate_int,
    scope_of,
)
from api.http.problems import Problem

SECRET = bytes(range(32))
CODEC = CursorCodec(SECRET)
TENANT = uuid.UUID("00000000-0000-4000-8000-00000000000a")
OTHER_TENANT = uuid.UUID("00000000-0000-4000-8000-00000000000b")
SCOPE = scope_of(TENANT, "tickets", {"state": ["open", "pending"], "tag": "vip"})
AT = datetime(2026, 6, 1, 9, 30, 15, 123456, tzinfo=UTC)
ROW = uuid.UUID("00000000-0000-4000-8000-000000000042")


def refused(call: Any, *args: Any) -> Problem:
    """Run ``call`` and return the Problem it raised (failing if it raised none)."""
    with pytest.raises(Problem) as info:
        call(*args)
    assert (info.value.status, info.value.code) == (400, "invalid_cursor")
    return info.value


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign(raw: bytes, scope: bytes = SCOPE, label: bytes = b"") -> str:
    """A cursor sealed the way the codec documents it: base64url(raw) "." base64url(mac),
    the MAC being HMAC-SHA256(label + scope + "\\n" + raw) cut to 16 bytes."""
    mac = hmac.new(SECRET, label + scope + b"\n" + raw, hashlib.sha256).digest()[:16]
    return f"{b64(raw)}.{b64(mac)}"


# --- round trips -----------------------------------------------------------------------


def test_a_position_round_trips() -> None:
    cursor = CODEC.encode(SCOPE, (AT, ROW))
    assert CODEC.decode(SCOPE, cursor) == (AT, ROW)
    assert cursor.isascii() and "=" not in cursor and len(cursor.split(".")) == 2


def test_a_position_in_another_zone_comes_back_as_the_same_instant() -> None:
    cest = timezone(timedelta(hours=2))
    at, row = CODEC.decode(SCOPE, CODEC.encode(SCOPE, (AT.astimezone(cest), ROW)))
    assert at == AT and at.utcoffset() == timedelta(hours=2) and row == ROW


@pytest.mark.parametrize("position", [0, 1, 42, 2**63 - 1])
def test_an_integer_position_round_trips(position: int) -> None:
    assert CODEC.decode_int(SCOPE, CODEC.encode_int(SCOPE, position)) == position


def test_the_wire_format_is_stable() -> None:
    # A cursor handed out by one process (or release) must open in another.
    assert CODEC.encode(SCOPE, (AT, ROW)) == sign(
        b'["2026-06-01T09:30:15.123456+00:00","00000000-0000-4000-8000-000000000042"]')
    assert CODEC.encode_int(SCOPE, 42) == sign(b"42", label=b"int\n")


def test_the_same_secret_in_another_codec_opens_the_cursor() -> None:
    cursor = CODEC.encode_int(SCOPE, 7)
    assert CursorCodec(bytes(SECRET)).decode_int(SCOPE, cursor) == 7


# --- scope binding ---------------------------------------------------------------------


def test_the_filter_order_does_not_change_the_scope() -> None:
    assert scope_of(TENANT, "tickets", {"a": 1, "b": [2]}) == \
        scope_of(TENANT, "tickets", {"b": [2], "a": 1})


@pytest.mark.parametrize("other", [
    scope_of(OTHER_TENANT, "tickets", {"state": ["open", "pending"], "tag": "vip"}),
    scope_of(TENANT, "messages", {"state": ["open", "pending"], "tag": "vip"}),
    scope_of(TENANT, "tickets", {"state": ["open"], "tag": "vip"}),
    scope_of(TENANT, "tickets", {"state": ["pending", "open"], "tag": "vip"}),
    scope_of(TENANT, "tickets", {"state": ["open", "pending"]}),
    scope_of(TENANT, "tickets", {"state": ["open", "pending"], "tag": "vip", "extra": None}),
    scope_of(TENANT, "tickets", {}),
], ids=["tenant", "list", "fewer-values", "value-order", "filter-dropped", "filter-added",
        "unfiltered"])
def test_a_cursor_from_another_scope_is_refused(other: bytes) -> None:
    assert other != SCOPE
    refused(CODEC.decode, other, CODEC.encode(SCOPE, (AT, ROW)))
    refused(CODEC.decode_int, other, CODEC.encode_int(SCOPE, 5))


def test_a_cursor_signed_with_another_secret_is_refused() -> None:
    stranger = CursorCodec(b"\x01" * 32)
    refused(CODEC.decode, SCOPE, stranger.encode(SCOPE, (AT, ROW)))
    refused(CODEC.decode_int, SCOPE, stranger.encode_int(SCOPE, 5))


def test_one_kind_of_cursor_is_never_taken_for_the_other() -> None:
    refused(CODEC.decode_int, SCOPE, CODEC.encode(SCOPE, (AT, ROW)))
    refused(CODEC.decode, SCOPE, CODEC.encode_int(SCOPE, 5))


# --- tampering, truncation, length -----------------------------------------------------


def _flip(text: str, index: int) -> str:
    swapped = "B" if text[index] != "B" else "C"
    return text[:index] + swapped + text[index + 1:]


def test_an_edited_position_or_signature_is_refused() -> None:
    cursor = CODEC.encode(SCOPE, (AT, ROW))
    raw, mac = cursor.split(".")
    for i in (0, len(raw) // 2, len(raw) - 2):
        refused(CODEC.decode, SCOPE, f"{_flip(raw, i)}.{mac}")
    for i in (0, len(mac) // 2, len(mac) - 2):
        refused(CODEC.decode, SCOPE, f"{raw}.{_flip(mac, i)}")
    # A signed position of a later row under the original signature.
    later = CODEC.encode(SCOPE, (AT + timedelta(seconds=1), ROW)).split(".")[0]
    refused(CODEC.decode, SCOPE, f"{later}.{mac}")


def test_an_edited_integer_is_refused() -> None:
    _, mac = CODEC.encode_int(SCOPE, 100).split(".")
    refused(CODEC.decode_int, SCOPE, f"{b64(b'1000')}.{mac}")
    refused(CODEC.decode_int, SCOPE, f"{b64(b'99')}.{mac}")


def test_a_truncated_cursor_is_refused() -> None:
    cursor = CODEC.encode(SCOPE, (AT, ROW))
    raw, _ = cursor.split(".")
    for cut in (cursor[:-1], cursor[:-4], cursor[: len(cursor) // 2], raw, f"{raw}.", ".", ""):
        refused(CODEC.decode, SCOPE, cut)


@pytest.mark.parametrize("junk", ["not-a-cursor", "a.b.c", "é.é", "\x00.\x00", "..", " "])
def test_malformed_text_is_refused(junk: str) -> None:
    refused(CODEC.decode, SCOPE, junk)
    refused(CODEC.decode_int, SCOPE, junk)


def test_a_cursor_longer_than_the_limit_is_refused_before_it_is_checked() -> None:
    # Integer cursors grow with the number of digits: 366 digits seal to 511 characters,
    # 367 to 513, either side of the limit.
    fits = CODEC.encode_int(SCOPE, int("9" * 366))
    too_long = CODEC.encode_int(SCOPE, int("9" * 367))
    assert len(fits) == MAX_CURSOR_LENGTH - 1 and len(too_long) == MAX_CURSOR_LENGTH + 1
    assert CODEC.decode_int(SCOPE, fits) == int("9" * 366)
    refused(CODEC.decode_int, SCOPE, too_long)
    refused(CODEC.decode, SCOPE, "A" * (MAX_CURSOR_LENGTH + 1))


def test_inserted_characters_make_a_cursor_invalid() -> None:
    cursor = CODEC.encode(SCOPE, (AT, ROW))
    refused(CODEC.decode, SCOPE, cursor + "!!!!")


# --- well signed, but not a position ---------------------------------------------------


@pytest.mark.parametrize("raw", [
    b"not json",
    b"{}",
    b"[]",
    b'["2026-06-01T09:30:15+00:00"]',
    b'["2026-06-01T09:30:15+00:00", "00000000-0000-4000-8000-000000000042", 1]',
    b'["2026-06-01T09:30:15", "00000000-0000-4000-8000-000000000042"]',  # naive time
    b'["yesterday", "00000000-0000-4000-8000-000000000042"]',
    b'[20260601, "00000000-0000-4000-8000-000000000042"]',
    b'["2026-06-01T09:30:15+00:00", "not-a-uuid"]',
])
def test_a_signed_payload_that_is_not_a_position_is_refused(raw: bytes) -> None:
    refused(CODEC.decode, SCOPE, sign(raw))


@pytest.mark.parametrize("raw", [b"-1", b"", b"4.5", b"x", b"\xff", "٣".encode()])
def test_a_signed_payload_that_is_not_a_position_number_is_refused(raw: bytes) -> None:
    refused(CODEC.decode_int, SCOPE, sign(raw, label=b"int\n"))


# --- cutting pages ---------------------------------------------------------------------


def _rows(n: int) -> list[tuple[datetime, uuid.UUID]]:
    return [(AT + timedelta(minutes=i), uuid.UUID(int=i)) for i in range(n)]


def _position(row: tuple[datetime, uuid.UUID]) -> Position:
    return row


@pytest.mark.parametrize(("fetched", "limit", "page_len", "more"), [
    (0, 3, 0, False),
    (2, 3, 2, False),
    (3, 3, 3, False),  # exactly a page: no next cursor, no empty last page
    (4, 3, 3, True),   # limit + 1 fetched: there is a next page
    (1, 1, 1, False),
    (2, 1, 1, True),
])
def test_paginate_cuts_at_the_limit_and_signs_the_last_row(
        fetched: int, limit: int, page_len: int, more: bool) -> None:
    rows = _rows(fetched)
    page, cursor = paginate(CODEC, SCOPE, rows, limit, _position)
    assert page == rows[:page_len]
    if more:
        assert cursor is not None
        assert CODEC.decode(SCOPE, cursor) == rows[page_len - 1]
    else:
        assert cursor is None


def test_paginate_int_cuts_at_the_limit_and_signs_the_last_position() -> None:
    rows = [{"seq": s} for s in (11, 12, 15, 16)]
    page, cursor = paginate_int(CODEC, SCOPE, rows, 3, lambda r: r["seq"])
    assert page == rows[:3]
    assert cursor is not None and CODEC.decode_int(SCOPE, cursor) == 15
    page, cursor = paginate_int(CODEC, SCOPE, rows, 4, lambda r: r["seq"])
    assert page == rows and cursor is None


def test_a_zero_limit_gives_an_empty_page_and_no_cursor() -> None:
    assert paginate(CODEC, SCOPE, _rows(5), 0, _position) == ([], None)
    assert paginate_int(CODEC, SCOPE, [1, 2], 0, int) == ([], None)


def test_the_next_cursor_belongs_to_the_scope_it_was_cut_for() -> None:
    other = scope_of(TENANT, "tickets", {})
    _, cursor = paginate(CODEC, SCOPE, _rows(3), 2, _position)
    assert cursor is not None
    refused(CODEC.decode, other, cursor)
