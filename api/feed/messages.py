"""The WebSocket feed's wire format: rooms and the messages the server sends.

Every message is one JSON text frame. An event is encoded once per room it goes to,
however many subscribers receive it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson

from domain.mapper import current_data, format_datetime
from eventstore.types import RecordedEvent

TENANT_ROOM = "tenant"
NOTICES_ROOM = "notifications"
"""The connection's own agent's notifications: activity on the tickets it follows."""
TICKET_PREFIX = "ticket:"
STREAM_ROOMS = {TICKET_PREFIX: "ticket", "contact:": "contact", "organization:": "organization"}
"""Rooms of one stream, by prefix: a ticket's, a contact's or an organization's."""


class BadRoom(ValueError):
    """A room name that is neither ``tenant`` nor ``<kind>:<uuid>`` of a stream room."""


@dataclass(frozen=True, slots=True)
class Room:
    """A parsed room: the whole tenant, the connection's notifications, or one stream
    (a ticket, a contact or an organization)."""

    name: str
    stream_id: uuid.UUID | None

    @classmethod
    def parse(cls, value: Any) -> Room:
        """Parse ``tenant``, ``notifications``, ``ticket:<uuid>``, ``contact:<uuid>`` or
        ``organization:<uuid>``; raise ``BadRoom`` otherwise."""
        if value == TENANT_ROOM:
            return cls(TENANT_ROOM, None)
        if value == NOTICES_ROOM:
            return cls(NOTICES_ROOM, None)
        if isinstance(value, str):
            for prefix, kind in STREAM_ROOMS.items():
                if value.startswith(prefix):
                    try:
                        stream_id = uuid.UUID(value[len(prefix):])
                    except ValueError:
                        raise BadRoom(f"{value!r} does not name a {kind} id") from None
                    return cls(f"{prefix}{stream_id}", stream_id)
        raise BadRoom("room must be 'tenant', 'notifications', 'ticket:<uuid>', "
                      "'contact:<uuid>' or 'organization:<uuid>'")

    @property
    def notices(self) -> bool:
        """The notifications room (api/feed/notices.py), which no stream fills."""
        return self.name == NOTICES_ROOM

    def wants(self, stream_id: uuid.UUID) -> bool:
        return self.stream_id is None or self.stream_id == stream_id


def event_body(event: RecordedEvent) -> dict[str, Any]:
    """The ``event`` object of an event message."""
    return {
        "type": event.type,
        "stream_id": str(event.stream_id),
        "version": event.version,
        "data": current_data(event.type, event.schema_version, event.data),
        "recorded_at": format_datetime(event.recorded_at),
        "actor": {"kind": event.actor_kind, "id": event.actor_id},
    }


def event_message(room: str, seq: int, body: dict[str, Any]) -> str:
    return orjson.dumps({"type": "event", "room": room, "seq": seq, "event": body}).decode()


def withheld(room: str, seq: int) -> str:
    """In the tenant room, in place of an event the connection's role may not read
    (``api.http.access.event_types_for``): its position moves past ``seq`` and the
    room stays contiguous."""
    return orjson.dumps({"type": "withheld", "room": room, "seq": seq}).decode()


def control(type_: str, **fields: Any) -> str:
    """A non-event message: subscribed, gap, error, pong, heartbeat, authenticated."""
    return orjson.dumps({"type": type_, **fields}).decode()


def gap(room: str, head_seq: int) -> str:
    return control("gap", room=room, head_seq=head_seq)


def error(code: str, detail: str, **extra: Any) -> str:
    return control("error", code=code, detail=detail, **extra)
