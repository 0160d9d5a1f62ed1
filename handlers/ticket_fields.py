"""Ticket field definitions (one stream per field, ``domain.field_definitions``) and
changing a ticket's field values.

Defining or changing a field decides on the state its inline row holds (locked), writes
the row and stages the event on the field's stream in one unit of work; the stream's
expected version makes a lost race a ``ConcurrencyError`` (412 under ``If-Match``).
History and as-of read the field's stream, as for tickets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.errors import NotFound
from domain.events import Event
from domain.field_definitions import (
    DefineField,
    UpdateField,
    decide_field,
    evolve_field,
    field_stream_id,
    fold_field,
)
from domain.fields import FieldDefinition
from domain.mapper import from_stored, to_stored
from domain.ticket.commands import ChangeFields
from domain.values import Actor
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from eventstore.types import NewEvent, RecordedEvent
from handlers.errors import Conflict
from handlers.tickets import CommandResult, requester_actor, run_command
from projections.fields import count_fields, load_catalog, load_field, write_field

MAX_FIELDS = 100
"""The most fields a tenant defines (the catalog is read whole by ticket commands)."""


async def _commit(uow: UnitOfWork, before: FieldDefinition | None, events: list[Event],
                  key: str) -> FieldDefinition:
    stream = field_stream_id(uow.tenant_id, key)
    after = before
    for event in events:
        after = evolve_field(after, event)
    assert after is not None
    if not await write_field(uow.conn, uow.tenant_id, stream, after):
        raise ConcurrencyError(stream, 0, None)
    stored = [to_stored(e) for e in events]
    await uow.append(stream, 0 if before is None else before.version,
                     [NewEvent(t, data, v) for t, v, data in stored])
    return after


async def define_field(uow: UnitOfWork, command: DefineField) -> FieldDefinition:
    """Define a field; ``already_exists`` (409) for a key the tenant has used."""
    before = await load_field(uow.conn, uow.tenant_id, command.key, for_update=True)
    events = decide_field(command, before)
    if await count_fields(uow.conn, uow.tenant_id) >= MAX_FIELDS:
        raise Conflict("too_many_fields", f"a tenant defines at most {MAX_FIELDS} fields; "
                                          "deactivate one or change it instead")
    return await _commit(uow, before, events, command.key)


async def update_field(uow: UnitOfWork, key: str, command: UpdateField, *,
                       expected_version: int | None = None) -> FieldDefinition:
    """Change a field; a change to nothing records nothing. ``expected_version`` (an
    ``If-Match``) must be the field's version."""
    before = await load_field(uow.conn, uow.tenant_id, key, for_update=True)
    if before is None:
        raise NotFound("no such ticket field")
    if expected_version is not None and expected_version != before.version:
        raise ConcurrencyError(field_stream_id(uow.tenant_id, key), expected_version,
                               before.version)
    events = decide_field(command, before)
    if not events:
        return before
    return await _commit(uow, before, events, key)


async def get_field(uow: UnitOfWork, key: str) -> FieldDefinition | None:
    return await load_field(uow.conn, uow.tenant_id, key)


async def list_fields(uow: UnitOfWork) -> list[FieldDefinition]:
    """Every field of the tenant in key order, inactive ones included."""
    return list((await load_catalog(uow.conn, uow.tenant_id)).values())


async def field_events(uow: UnitOfWork, key: str, *, after_version: int = 0,
                       limit: int | None = None, to_version: int | None = None,
                       until: datetime | None = None) -> list[RecordedEvent]:
    """Events of field ``key``'s stream: a page after ``after_version``, or the events
    up to ``to_version`` or recorded at or before ``until``."""
    stream = field_stream_id(uow.tenant_id, key)
    if limit is not None:
        return await uow.read_stream_page(stream, after_version, limit)
    if until is not None:
        return await uow.read_stream_until(stream, until)
    return await uow.read_stream(stream, to_version=to_version)


def replay(events: list[RecordedEvent]) -> FieldDefinition | None:
    """The definition the events fold to (None: no events)."""
    return fold_field(from_stored(e.type, e.schema_version, e.data) for e in events)


@dataclass(frozen=True, slots=True)
class SetFields:
    """Set a ticket's field values; ``actor`` None means the ticket's requester (an
    intake key writing for the customer)."""

    ticket_id: UUID
    values: Mapping[str, Any]
    at: datetime
    actor: Actor | None = None


async def set_fields(uow: UnitOfWork, command: SetFields, *,
                     expected_version: int | None = None) -> CommandResult:
    """Change field values on a ticket, checked against the definitions now."""
    actor = (command.actor if command.actor is not None
             else await requester_actor(uow, command.ticket_id))
    change = ChangeFields(values=dict(command.values), actor=actor, at=command.at)
    return await run_command(uow, command.ticket_id, change, expected_version=expected_version)


__all__ = ["MAX_FIELDS", "SetFields", "define_field", "field_events", "get_field",
           "list_fields", "replay", "set_fields", "update_field"]
