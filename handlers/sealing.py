"""Events as a handler appends them: the stored form, with the personal fields the
store must seal, and whose data key seals them.

The domain declares what is personal (domain/personal.py); the event store seals what
it is told to and knows nothing of events (eventstore/sealing.py). This is where one
meets the other: every handler that appends events which may hold personal data
builds them here.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any
from uuid import UUID

from domain.events import Event
from domain.mapper import to_stored
from domain.personal import declared_subject, paths_in
from eventstore.types import NewEvent


def stored_event(type_: str, data: dict[str, Any], schema_version: int, stream_id: UUID, *,
                 subject: UUID | None = None, fields: Collection[str] = ()) -> NewEvent:
    """The event to append to ``stream_id``, its personal fields named for sealing.

    Their subject is the one the event names itself (a contact's own events, an
    event that carries the requester), else ``subject`` (a message: the ticket's
    requester contact). ``fields``: the keys of the ticket fields declared personal,
    whose values are sealed too."""
    whose = declared_subject(type_, stream_id, data) or subject
    paths = paths_in(type_, data, fields) if whose is not None else ()
    return NewEvent(type_, data, schema_version, seal=paths, subject=whose)


def new_event(event: Event, stream_id: UUID, *, subject: UUID | None = None,
              fields: Collection[str] = ()) -> NewEvent:
    """``stored_event`` of a domain event."""
    type_, schema_version, data = to_stored(event)
    return stored_event(type_, data, schema_version, stream_id, subject=subject,
                        fields=fields)


__all__ = ["new_event", "stored_event"]
