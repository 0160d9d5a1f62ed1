"""Offline verification of an audit export, on events built by hand: no database.

Each event's ``hash`` is computed as the database's insert trigger computes it,
``sha256(prev_hash || event_canonical(...))`` (migrations/sql/0001_event_store.sql),
with ``eventstore.chain.canonical_bytes`` standing in for ``event_canonical``
(tests/integration/test_hash_chain.py proves the two agree byte for byte).
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from domain.ids import TenantId
from eventstore.chain import canonical_bytes
from eventstore.export import (
    FORMAT,
    ExportFormatError,
    FileReport,
    event_line,
    header_line,
    parse_event,
    verify_lines,
)
from eventstore.types import RecordedEvent

TENANT = TenantId(uuid.UUID("00000000-0000-4000-8000-0000000000aa"))
OTHER = TenantId(uuid.UUID("00000000-0000-4000-8000-0000000000bb"))
STREAM = uuid.UUID("00000000-0000-4000-8000-000000000001")
T0 = datetime(2026, 6, 1, 9, 0, 0, 250_000, tzinfo=UTC)
ZERO = bytes(32)
N = 8


def db_hash(prev: bytes, event: RecordedEvent) -> bytes:
    return hashlib.sha256(prev + canonical_bytes(event)).digest()


def chain(n: int = N, tenant: TenantId = TENANT,
          change: dict[int, dict[str, Any]] | None = None) -> list[RecordedEvent]:
    """Seqs 1..n, hashed in order; ``change`` replaces fields of some seqs *before*
    hashing (a chain that is internally consistent)."""
    events: list[RecordedEvent] = []
    prev = ZERO
    for seq in range(1, n + 1):
        fields: dict[str, Any] = {
            "tenant_id": tenant, "seq": seq, "stream_id": STREAM, "version": seq,
            "type": "TicketOpened" if seq == 1 else "MessageAdded", "schema_version": 1,
            "data": {"n": seq, "body": f"é\n\t\"{seq}\"", "ratio": 0.5,
                     "nested": {"bb": [1, None, True], "a": {}}},
            "metadata": {"request_id": f"r{seq}"}, "actor_kind": "api_key",
            "actor_id": "key-1", "recorded_at": T0 + timedelta(seconds=seq),
            "hash": b"",
        }
        fields.update((change or {}).get(seq, {}))
        event = RecordedEvent(**fields)
        event = dataclasses.replace(event, hash=db_hash(prev, event))
        events.append(event)
        prev = event.hash
    return events


def export(events: list[RecordedEvent], from_seq: int = 1, to_seq: int | None = None,
           ) -> list[bytes]:
    """The lines ``helpdesk audit export`` writes for ``from_seq..to_seq``."""
    head = events[-1]
    end = head.seq if to_seq is None else to_seq
    prev = events[from_seq - 2].hash if from_seq > 1 else ZERO
    lines = [header_line(TENANT, from_seq, end, prev, head.seq,
                         head.hash if end == head.seq else None)]
    lines += [event_line(e) for e in events if from_seq <= e.seq <= end]
    return lines


def edit(line: bytes, **fields: Any) -> bytes:
    obj = orjson.loads(line)
    obj.update(fields)
    return orjson.dumps(obj) + b"\n"


def header(lines: list[bytes]) -> dict[str, Any]:
    parsed: dict[str, Any] = orjson.loads(lines[0])
    return parsed


# --- the hashes the test builds on -----------------------------------------------------


def test_canonical_bytes_are_the_text_of_a_jsonb_array() -> None:
    event = RecordedEvent(
        tenant_id=TENANT, seq=1, stream_id=STREAM, version=1, type="E", schema_version=1,
        data={"bb": 1, "a": "x\ny"}, metadata={}, actor_kind="system", actor_id="s",
        recorded_at=datetime(2026, 6, 1, 11, 0, tzinfo=UTC), hash=b"")
    assert canonical_bytes(event) == (
        b'["00000000-0000-4000-8000-0000000000aa", 1, "00000000-0000-4000-8000-000000000001",'
        b' 1, "E", 1, {"a": "x\\ny", "bb": 1}, {}, "system", "s", "2026-06-01T11:00:00.000000Z"]'
    )


def test_an_exported_event_reads_back_equal() -> None:
    for event in chain(3):
        assert parse_event(orjson.loads(event_line(event))) == event


# --- what verifies ---------------------------------------------------------------------


def test_a_whole_export_verifies() -> None:
    report = verify_lines(export(chain()))
    assert report == FileReport(ok=True, checked=N, first_bad_seq=None, last_seq=N,
                                tenant_id=str(TENANT))
    assert report.as_dict() == {"ok": True, "checked": N, "first_bad_seq": None,
                                "last_seq": N, "tenant_id": str(TENANT)}


def test_a_range_is_anchored_on_the_exported_prev_hash() -> None:
    lines = export(chain(), from_seq=3, to_seq=6)
    assert header(lines)["prev_seq"] == 2 and header(lines)["head_hash"] is None
    assert verify_lines(lines) == FileReport(True, 4, None, 6, str(TENANT))


def test_a_range_up_to_the_head_checks_the_head_hash() -> None:
    lines = export(chain(), from_seq=5)
    assert header(lines)["head_hash"] == chain()[-1].hash.hex()
    assert verify_lines(lines) == FileReport(True, 4, None, N, str(TENANT))


def test_blank_lines_are_ignored() -> None:
    lines = export(chain(3))
    assert verify_lines([lines[0], b"\n", lines[1], b"  \n", *lines[2:], b""]).ok


# --- what is caught, and where ---------------------------------------------------------


@pytest.mark.parametrize(("field", "value"), [
    ("data", {"n": 4, "body": "changed"}),
    ("metadata", {}),
    ("actor_id", "someone-else"),
    ("actor_kind", "operator"),
    ("type", "TicketClosed"),
    ("version", 40),
    ("stream_id", str(uuid.UUID(int=9))),
    ("schema_version", 2),
    ("recorded_at", "2026-06-01T09:00:04.250001Z"),
])
def test_an_altered_field_is_found_at_its_seq(field: str, value: Any) -> None:
    lines = export(chain())
    lines[4] = edit(lines[4], **{field: value})  # seq 4
    assert verify_lines(lines) == FileReport(False, 4, 4, 3, str(TENANT))


def test_an_edit_with_its_hash_recomputed_breaks_the_next_link() -> None:
    lines = export(chain())
    forged = dataclasses.replace(parse_event(orjson.loads(lines[4])), actor_id="mallory")
    lines[4] = event_line(dataclasses.replace(forged, hash=db_hash(chain()[2].hash, forged)))
    report = verify_lines(lines)
    assert (report.ok, report.first_bad_seq, report.last_seq) == (False, 5, 4)


def test_an_altered_stored_hash_is_found_at_its_seq() -> None:
    lines = export(chain())
    lines[6] = edit(lines[6], hash="00" * 32)  # seq 6
    assert verify_lines(lines).first_bad_seq == 6


def test_reordered_lines_are_found_where_the_order_breaks() -> None:
    lines = export(chain())
    lines[3], lines[4] = lines[4], lines[3]  # seqs 3 and 4
    report = verify_lines(lines)
    assert (report.ok, report.first_bad_seq, report.checked, report.last_seq) == (
        False, 3, 3, 2)


@pytest.mark.parametrize("missing", [1, 5, N])
def test_a_missing_line_is_found_at_its_seq(missing: int) -> None:
    lines = export(chain())
    del lines[missing]
    report = verify_lines(lines)
    assert (report.ok, report.first_bad_seq, report.last_seq) == (False, missing, missing - 1)


def test_missing_lines_at_the_end_of_a_range_are_found() -> None:
    lines = export(chain(), from_seq=2, to_seq=6)[:-2]  # seqs 5 and 6 gone
    assert verify_lines(lines) == FileReport(False, 3, 5, 4, str(TENANT))


def test_a_header_with_nothing_after_it_is_missing_every_event() -> None:
    lines = export(chain(), from_seq=3, to_seq=6)[:1]
    assert verify_lines(lines) == FileReport(False, 0, 3, 2, str(TENANT))


def test_a_wrong_prev_hash_is_found_at_the_first_seq() -> None:
    lines = export(chain(), from_seq=4)
    lines[0] = edit(lines[0], prev_hash=chain()[1].hash.hex())  # seq 2's, not seq 3's
    assert verify_lines(lines).first_bad_seq == 4


def test_a_range_with_no_prev_hash_has_nothing_to_chain_onto() -> None:
    lines = export(chain(), from_seq=4)
    lines[0] = edit(lines[0], prev_hash=None)
    report = verify_lines(lines)
    assert (report.ok, report.first_bad_seq) == (False, 4)


def test_a_wrong_head_hash_is_found_at_the_head() -> None:
    lines = export(chain())
    lines[0] = edit(lines[0], head_hash=chain()[-2].hash.hex())
    assert verify_lines(lines) == FileReport(False, N, N, N, str(TENANT))


def test_an_event_of_another_tenant_is_found_even_when_its_links_hold() -> None:
    # The other tenant's seq 5 chained onto ours: every hash is right, the tenant is not.
    ours, theirs = chain(), chain(tenant=OTHER)
    spliced = ours[:4]
    prev = spliced[-1].hash
    for e in theirs[4:]:
        e = dataclasses.replace(e, hash=db_hash(prev, e))
        spliced.append(e)
        prev = e.hash
    lines = export(spliced)
    assert header(lines)["tenant_id"] == str(TENANT)
    assert verify_lines(lines).first_bad_seq == 5


def test_a_consistently_rehashed_chain_still_fails_on_the_exported_head() -> None:
    lines = export(chain())
    lines[1:] = [event_line(e) for e in chain(change={2: {"actor_id": "mallory"}})]
    assert verify_lines(lines).first_bad_seq == N


# --- not an export at all --------------------------------------------------------------


@pytest.mark.parametrize("first", [
    b"",
    b"not json\n",
    b"[1, 2]\n",
    b'"helpdesk-audit-export/1"\n',
    b'{"export": "helpdesk-audit-export/2"}\n',
    b'{"tenant_id": "00000000-0000-4000-8000-0000000000aa"}\n',
])
def test_a_file_that_does_not_start_with_a_header_is_a_format_error(first: bytes) -> None:
    with pytest.raises(ExportFormatError, match="export header"):
        verify_lines([first, *export(chain(2))[1:]])


def test_an_empty_file_is_a_format_error() -> None:
    with pytest.raises(ExportFormatError):
        verify_lines([])


def test_a_second_header_is_a_format_error() -> None:
    lines = export(chain(3))
    with pytest.raises(ExportFormatError, match="not an exported event"):
        verify_lines([*lines[:2], lines[0], *lines[2:]])


@pytest.mark.parametrize("bad", [
    b"{not json\n",
    b"[1, 2, 3]\n",
    b"42\n",
])
def test_an_event_line_that_is_not_an_event_object_is_a_format_error(bad: bytes) -> None:
    lines = export(chain(3))
    with pytest.raises(ExportFormatError):
        verify_lines([lines[0], lines[1], bad, *lines[2:]])


@pytest.mark.parametrize(("field", "value"), [
    ("hash", "not-hex"),
    ("recorded_at", "2026-06-01 09:00:02"),
    ("seq", "two"),
    ("stream_id", "not-a-uuid"),
    ("tenant_id", None),
])
def test_an_unreadable_field_is_a_format_error(field: str, value: Any) -> None:
    lines = export(chain(3))
    lines[2] = edit(lines[2], **{field: value})
    with pytest.raises(ExportFormatError, match="not an exported event"):
        verify_lines(lines)


def test_an_event_line_missing_a_field_is_a_format_error() -> None:
    lines = export(chain(3))
    obj = orjson.loads(lines[2])
    del obj["metadata"]
    lines[2] = orjson.dumps(obj) + b"\n"
    with pytest.raises(ExportFormatError, match="metadata"):
        verify_lines(lines)


@pytest.mark.parametrize("fields", [
    {"export": FORMAT},
    {"export": FORMAT, "tenant_id": str(TENANT), "prev_seq": 0, "prev_hash": "zz",
     "from_seq": 1, "to_seq": 0, "head_seq": 0, "head_hash": None},
])
def test_a_header_with_unreadable_fields_is_a_format_error(fields: dict[str, Any]) -> None:
    with pytest.raises(ExportFormatError):
        verify_lines([orjson.dumps(fields) + b"\n"])
