"""The ticket field definition aggregate: one stream per field, keyed by the field.

A field's stream id is derived from the tenant and the key, so a key names one stream
forever: defining a key a second time finds the stream taken (``AlreadyExists``), and
as nothing deletes a field (it is deactivated), a key is never reused. The key and the
type never change; every other attribute does, and each change records the whole
definition after it (``TicketFieldUpdated``), so history and as-of read plainly.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from domain.aggregate import BaseCommand
from domain.errors import AlreadyExists, CorruptStream, NotFound, ValidationFailed
from domain.events import Event, TicketFieldDefined, TicketFieldUpdated
from domain.evolution import first_version, fold_with, stream_start
from domain.fields import (
    CHOICE_TYPES,
    FIELD_KEY_PATTERN,
    OPTION_VALUE_PATTERN,
    OPTIONS_MAX,
    TITLE_MAX,
    FieldDefinition,
    FieldOption,
    FieldSpec,
    FieldType,
)
from domain.ids import TenantId

_KEY = re.compile(FIELD_KEY_PATTERN)
_OPTION = re.compile(OPTION_VALUE_PATTERN)
CHANGEABLE = ("title", "options", "required_on", "active", "intake", "customer_read_only",
              "personal")
"""What a change may set; ``key`` and ``type`` are fixed at definition."""


def field_stream_id(tenant_id: TenantId, key: str) -> uuid.UUID:
    """The stream of field ``key`` of a tenant (the same key always names it)."""
    return uuid.uuid5(tenant_id, f"ticket-field:{key}")


class DefineField(FieldSpec, BaseCommand):
    """Define a ticket field: its key and type, fixed from now on, and the rest."""


class UpdateField(BaseCommand):
    """Change the given attributes (``CHANGEABLE``) only. ``options``, when given, is
    the list of options to offer: an option left out stays, inactive, so the values
    tickets hold remain readable."""

    changes: dict[str, Any]


FieldCommand = DefineField | UpdateField


def decide_field(command: FieldCommand, state: FieldDefinition | None) -> list[Event]:
    """The events a command produces on a field's stream (None: not defined yet)."""
    if isinstance(command, DefineField):
        if state is not None:
            raise AlreadyExists(f"field {command.key} exists; a key is never reused")
        if not _KEY.match(command.key):
            raise ValidationFailed(f"{command.key!r} is not a field key (a lower-case "
                                   "identifier of at most 40 characters)", field="key")
        attrs = command.model_dump(exclude={"key", "type", "at"})
        _check(command.type, attrs)
        return [TicketFieldDefined(key=command.key, type=command.type, at=command.at, **attrs)]
    if state is None:
        raise NotFound("no such ticket field")
    unknown = set(command.changes) - set(CHANGEABLE)
    if unknown:
        raise ValidationFailed(f"{', '.join(sorted(unknown))} cannot be changed",
                               field=sorted(unknown)[0])
    current = state.model_dump(include=set(CHANGEABLE))
    attrs = {**current, **command.changes}
    if "options" in command.changes:
        attrs["options"] = _merge_options(state.options, command.changes["options"])
    _check(state.type, attrs)
    after = {**attrs, "options": tuple(FieldOption.model_validate(o) for o in attrs["options"])}
    before = {**current, "options": state.options}
    if after == before:
        return []
    return [TicketFieldUpdated(key=state.key, at=command.at, **after)]


def _merge_options(old: tuple[FieldOption, ...], given: Iterable[Any]) -> tuple[FieldOption, ...]:
    new = tuple(FieldOption.model_validate(o) for o in given)
    named = {o.value for o in new}
    return new + tuple(o.model_copy(update={"active": False}) for o in old
                       if o.value not in named)


def _check(type_: FieldType, attrs: Mapping[str, Any]) -> None:
    title = attrs["title"]
    if not isinstance(title, str) or not title.strip() or len(title) > TITLE_MAX:
        raise ValidationFailed(f"a title has 1 to {TITLE_MAX} characters", field="title")
    options = tuple(FieldOption.model_validate(o) for o in attrs["options"])
    if type_ in CHOICE_TYPES:
        if not any(o.active for o in options):
            raise ValidationFailed(f"a {type_} field needs an active option", field="options")
        if len(options) > OPTIONS_MAX:
            raise ValidationFailed(f"a field has at most {OPTIONS_MAX} options",
                                   field="options")
        values = [o.value for o in options]
        if len(set(values)) != len(values):
            raise ValidationFailed("option values must be distinct", field="options")
        for o in options:
            if not _OPTION.match(o.value):
                raise ValidationFailed(f"{o.value!r} is not an option value",
                                       field="options")
            if not o.title.strip() or len(o.title) > TITLE_MAX:
                raise ValidationFailed(f"an option title has 1 to {TITLE_MAX} characters",
                                       field="options")
    elif options:
        raise ValidationFailed(f"a {type_} field has no options", field="options")
    if attrs["customer_read_only"] and not attrs["intake"]:
        raise ValidationFailed("customer_read_only needs intake: only a field open to "
                               "customers is shown to them read-only (turn both off to "
                               "close it)", field="customer_read_only")
    if attrs["personal"] and type_ is not FieldType.TEXT:
        raise ValidationFailed("only a text field holds personal data", field="personal")


def evolve_field(state: FieldDefinition | None, event: Event) -> FieldDefinition:
    """Apply one event of a field's stream."""
    if state is None:
        defined = stream_start(event, TicketFieldDefined, "a field stream")
        return first_version(FieldDefinition, defined)
    if not isinstance(event, TicketFieldUpdated) or event.key != state.key:
        raise CorruptStream(f"{event.TYPE} does not continue field {state.key}")
    return state.model_copy(update={
        **event.model_dump(exclude={"at", "key"}), "options": event.options,
        "version": state.version + 1, "updated_at": event.at})


fold_field = fold_with(evolve_field)


__all__ = ["CHANGEABLE", "DefineField", "FieldCommand", "UpdateField", "decide_field",
           "evolve_field", "field_stream_id", "fold_field"]
