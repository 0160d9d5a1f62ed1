"""The one serialization boundary between events and what the store keeps.

``to_stored`` turns an event into ``(type, schema_version, data)`` where ``data`` holds
only ``str``/``int``/``bool``/``None``/``list``/``dict``; ``from_stored`` reads it
back, first running upcasters that bring payloads of older schema versions to the
current shape. Stored events are never rewritten; old shapes are upgraded on read.

Datetimes are written as ISO-8601 UTC with microseconds and ``Z``
(``2026-06-01T09:00:00.000000Z``) so equal instants always produce equal bytes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from enum import Enum
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ValidationError

from domain.errors import DomainError, UnknownEventType, ValidationFailed
from domain.event_types import EVENT_TYPES
from domain.events import Event
from domain.personal import field_at, paths_in
from domain.ticket.events import TicketOpened

JsonData = dict[str, Any]
Upcaster = Callable[[JsonData], JsonData]


def to_stored(event: Event) -> tuple[str, int, JsonData]:
    """Serialise an event to ``(type, schema_version, json-ready dict)``."""
    data = _plain(event.model_dump(mode="python"))
    assert isinstance(data, dict)
    for name in event.OMIT_EMPTY:
        if not data.get(name):
            data.pop(name, None)
    return event.TYPE, event.SCHEMA_VERSION, data


def from_stored(
    type_: str,
    schema_version: int,
    data: Mapping[str, Any],
    *,
    upcasters: Mapping[tuple[str, int], Upcaster] | None = None,
) -> Event:
    """Read a stored event back, upcasting older schema versions step by step.

    Raises ``UnknownEventType`` for an unknown type, a version newer than the code, or a
    gap in the upcaster chain; ``ValidationFailed`` if the payload does not fit.
    """
    cls = EVENT_TYPES.get(type_)
    if cls is None:
        raise UnknownEventType(f"unknown event type {type_!r}")
    chain = UPCASTERS if upcasters is None else upcasters
    version = schema_version
    if version > cls.SCHEMA_VERSION or version < 1:
        raise UnknownEventType(
            f"{type_} schema version {version} is not readable "
            f"(current is {cls.SCHEMA_VERSION})"
        )
    payload = dict(data)
    while version < cls.SCHEMA_VERSION:
        step = chain.get((type_, version))
        if step is None:
            raise UnknownEventType(f"no upcaster for {type_} v{version}")
        payload = step(payload)
        version += 1
    payload = _blank_unread(type_, payload)
    try:
        return cls.model_validate(payload)
    except ValidationError as exc:
        raise ValidationFailed(f"stored {type_} v{schema_version} does not fit: {exc}") from exc


def current_data(type_: str, schema_version: int, data: JsonData) -> JsonData:
    """A stored payload in its type's current shape, as readers outside the store are
    shown it; a payload that cannot be upcast (a type the code does not know, say) is
    passed on as stored rather than dropped."""
    cls = EVENT_TYPES.get(type_)
    if cls is None or schema_version == cls.SCHEMA_VERSION:
        return data
    try:
        return to_stored(from_stored(type_, schema_version, data))[2]
    except DomainError:
        return data
def _blank_unread(type_: str, payload: JsonData) -> JsonData:
    """A personal field that is not text here (still sealed, or ``{"erased": true}``
    once its subject was erased) replays as an empty text: a fold or a projection
    never held personal data it could not read, and erasure changes no count."""
    for path in paths_in(type_, payload):
        if isinstance(field_at(payload, path), dict):
            payload = _replaced(payload, path, "")
    return payload


def _replaced(data: Any, path: tuple[str, ...], value: Any) -> Any:
    if isinstance(data, list):
        items = list(data)
        index = int(path[0])
        items[index] = value if len(path) == 1 else _replaced(data[index], path[1:], value)
        return items
    out = dict(data)
    out[path[0]] = value if len(path) == 1 else _replaced(data[path[0]], path[1:], value)
    return out


def format_datetime(value: datetime) -> str:
    """The canonical text of an instant: UTC, microseconds, ``Z``."""
    if value.tzinfo is None:
        raise ValueError("naive datetime in event data")
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _plain(value: Any) -> Any:
    # Explicit walk rather than pydantic's JSON mode: pydantic drops zero microseconds
    # and would let floats through, and both would break the store's canonical hash.
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, int):
        return value
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="python"))
    if isinstance(value, dict):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_plain(v) for v in value]
        return sorted(items) if isinstance(value, set | frozenset) else items
    raise TypeError(f"cannot store {type(value).__name__} in event data")


def _ticket_opened_v1_to_v2(data: JsonData) -> JsonData:
    """v1 kept the requester flat as ``requester_email`` (and optional
    ``requester_name``); v2 nests it as ``requester: {email, name}``."""
    out = dict(data)
    email = out.pop("requester_email")
    name = out.pop("requester_name", None)
    out["requester"] = {"email": email, "name": name}
    return out


UPCASTERS: Mapping[tuple[str, int], Upcaster] = MappingProxyType(
    {(TicketOpened.TYPE, 1): _ticket_opened_v1_to_v2}
)
"""``(type, version) -> fn`` turning a payload of ``version`` into ``version + 1``."""

__all__ = ["UPCASTERS", "JsonData", "Upcaster", "current_data", "format_datetime", "from_stored",
           "to_stored"]
