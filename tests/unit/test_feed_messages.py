"""The feed's wire format: room names and the JSON of every message the server sends."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest

from api.feed import messages as msg
from api.feed.messages import BadRoom, Room
from domain.ids import TenantId
from domain.mapper import to_stored
from eventstore.types import RecordedEvent
from tests.unit.domain.support import given, open_cmd

TENANT = TenantId(uuid.UUID("00000000-0000-4000-8000-0000000000aa"))
TICKET = uuid.UUID("6f1c0e7a-1b2c-4d3e-8f40-0123456789ab")
AT = datetime(2026, 6, 1, 9, 0, 0, 250_000, tzinfo=UTC)


def recorded(type_: str, data: dict[str, Any], schema_version: int = 1,
             recorded_at: datetime = AT) -> RecordedEvent:
    return RecordedEvent(
        tenant_id=TENANT, seq=42, stream_id=TICKET, version=3, type=type_,
        schema_version=schema_version, data=data, metadata={"request_id": "r"},
        actor_kind="api_key", actor_id="key-1", recorded_at=recorded_at, hash=b"\x00" * 32)


# --- rooms -----------------------------------------------------------------------------


def test_the_tenant_room() -> None:
    room = Room.parse("tenant")
    assert room == Room("tenant", None)
    assert room.wants(TICKET) and room.wants(uuid.uuid4())


@pytest.mark.parametrize("spelling", [
    f"ticket:{TICKET}",
    f"ticket:{str(TICKET).upper()}",
    f"ticket:{TICKET.hex}",
    f"ticket:{{{TICKET}}}",
    f"ticket:urn:uuid:{TICKET}",
])
def test_a_ticket_room_is_named_by_its_canonical_id(spelling: str) -> None:
    room = Room.parse(spelling)
    assert room == Room(f"ticket:{TICKET}", TICKET)
    assert room.wants(TICKET) and not room.wants(uuid.UUID(int=1))


@pytest.mark.parametrize("value", [
    "Tenant", "tenant ", " tenant", "tenants", "", "ticket", "ticket:", "ticket:abc",
    f"ticket:{TICKET}x", f"tickets:{TICKET}", f"Ticket:{TICKET}", str(TICKET),
    None, 7, True, ["tenant"], {"room": "tenant"},
])
def test_anything_else_is_a_bad_room(value: Any) -> None:
    with pytest.raises(BadRoom) as info:
        Room.parse(value)
    assert isinstance(info.value, ValueError)
    assert "room must be" in str(info.value) or "does not name a ticket id" in str(info.value)


def test_a_bad_ticket_id_is_named_in_the_error() -> None:
    with pytest.raises(BadRoom, match="'ticket:abc' does not name a ticket id"):
        Room.parse("ticket:abc")


# --- event messages --------------------------------------------------------------------


def test_an_event_body_carries_the_stored_facts() -> None:
    data = {"assignee": str(uuid.UUID(int=5)), "at": "2026-06-01T08:59:00.000000Z"}
    assert msg.event_body(recorded("TicketAssigned", data)) == {
        "type": "TicketAssigned",
        "stream_id": str(TICKET),
        "version": 3,
        "data": data,
        "recorded_at": "2026-06-01T09:00:00.250000Z",
        "actor": {"kind": "api_key", "id": "key-1"},
    }


def test_recorded_at_is_given_in_utc() -> None:
    cest = timezone(timedelta(hours=2))
    body = msg.event_body(recorded("X", {}, recorded_at=AT.astimezone(cest)))
    assert body["recorded_at"] == "2026-06-01T09:00:00.250000Z"


def _ticket_opened_v1() -> dict[str, Any]:
    """A TicketOpened payload as schema version 1 stored it (requester flat)."""
    _, version, data = to_stored(given(open_cmd())[0])
    assert version == 2
    v1 = {k: v for k, v in data.items() if k != "requester"}
    v1["requester_email"] = data["requester"]["email"]
    return v1


def test_an_old_payload_reaches_subscribers_in_the_current_shape() -> None:
    v1 = _ticket_opened_v1()
    data = msg.event_body(recorded("TicketOpened", v1, schema_version=1))["data"]
    assert "requester_email" not in data
    assert data["requester"] == {"email": "ann@example.com", "name": None, "contact_id": None}
    assert {k: v for k, v in data.items() if k != "requester"} == {
        k: v for k, v in v1.items() if k != "requester_email"}


@pytest.mark.parametrize(("type_", "version", "data"), [
    ("SomethingNew", 1, {"x": 1}),                       # a type this code does not know
    ("TicketOpened", 3, {"future": True}),               # newer than the code
    ("TicketOpened", 1, {"requester_email": "a@b.c"}),   # old, but does not fit
])
def test_an_event_that_cannot_be_upcast_is_passed_on_as_stored(
        type_: str, version: int, data: dict[str, Any]) -> None:
    assert msg.event_body(recorded(type_, data, schema_version=version))["data"] == data


def test_an_event_message_is_one_json_object_with_its_room_and_seq() -> None:
    body = msg.event_body(recorded("TicketAssigned", {"assignee": None}))
    text = msg.event_message(f"ticket:{TICKET}", 42, body)
    assert list(orjson.loads(text)) == ["type", "room", "seq", "event"]
    assert orjson.loads(text) == {"type": "event", "room": f"ticket:{TICKET}", "seq": 42,
                                  "event": body}


# --- control messages ------------------------------------------------------------------


def test_control_message_texts() -> None:
    assert msg.gap("tenant", 5000) == '{"type":"gap","room":"tenant","head_seq":5000}'
    assert msg.control("heartbeat") == '{"type":"heartbeat"}'
    assert msg.control("subscribed", room="tenant", head_seq=57, replayed=16) == (
        '{"type":"subscribed","room":"tenant","head_seq":57,"replayed":16}')
    assert msg.control("pong", id=1) == '{"type":"pong","id":1}'
    assert msg.error("bad_room", "room must be 'tenant' or 'ticket:<uuid>'", op="subscribe") == (
        '{"type":"error","code":"bad_room",'
        '"detail":"room must be \'tenant\' or \'ticket:<uuid>\'","op":"subscribe"}')
