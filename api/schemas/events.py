"""Events as the audit endpoints show them (a ticket's or a field's history, the feed)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel

from eventstore.types import RecordedEvent


class ActorOut(BaseModel):
    kind: str
    id: str


class EventOut(BaseModel):
    seq: int
    stream_id: UUID
    version: int
    type: str
    schema_version: int
    data: dict[str, Any]
    metadata: dict[str, Any]
    actor: ActorOut
    recorded_at: datetime
    hash: str


class EventPage(BaseModel):
    data: list[EventOut]
    next_cursor: str | None


def render_event(e: RecordedEvent) -> dict[str, Any]:
    """An event as the audit endpoints show it."""
    return {
        "seq": e.seq, "stream_id": e.stream_id, "version": e.version, "type": e.type,
        "schema_version": e.schema_version, "data": e.data, "metadata": e.metadata,
        "actor": {"kind": e.actor_kind, "id": e.actor_id}, "recorded_at": e.recorded_at,
        "hash": e.hash.hex(),
    }
