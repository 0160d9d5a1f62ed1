"""Ticket fields: the typed values a tenant adds to its tickets, and their rules.

A field is defined per tenant (``FieldDefinition``, an aggregate of its own in
``domain.field_definitions``); a ticket holds ``{key: value}``. Events carry the key
and the value, never the title, so renaming a field rewrites no history. Every value
is checked against the definitions as they are when the command is decided:

* a key that is not defined, or whose field is inactive, is refused;
* a customer (an intake key, the portal, the widget) may set only fields whose
  definition allows intake and that are not ``customer_read_only`` (shown to
  customers, set by agents: a status, a plan, an order's dispatch date);
* the value must fit the type: ``text`` (non-blank, at most ``TEXT_MAX``
  characters), ``number`` (an integer: event data holds no floats), ``checkbox``
  (true or false), ``date`` (``YYYY-MM-DD``), ``dropdown`` (one active option's
  value), ``multiselect`` (a list of active options' values);
* an option taken out of use stays in the definition, inactive: tickets keep the
  value and show it, but no command can choose it again, except that a ticket may
  keep an inactive value it already holds when its other values change;
* ``required_on`` ``open``: the field must have a value when the ticket is opened
  (by whoever may set it) and cannot be cleared; ``solve``: moving to ``solved``
  needs a value for every active field required on open or on solve. The scheduler's
  sweep (a system actor) solves regardless: nobody is there to fill anything in.

``null`` (or an empty multiselect) clears a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from enum import StrEnum
from typing import Any

from pydantic import StrictBool, StrictInt, StrictStr

from domain.aggregate import KeyedState
from domain.errors import ValidationFailed
from domain.frozen import Frozen
from domain.values import Actor, ActorKind, UtcDatetime

FIELD_KEY_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
"""A field's key: a lower-case identifier of at most 40 characters."""
OPTION_VALUE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
"""An option's stable value: at most 64 letters, digits, ``_``, ``.`` or ``-``."""
TEXT_MAX = 1_000
TITLE_MAX = 100
OPTIONS_MAX = 200
NUMBER_MAX = 2**53 - 1
"""Numbers are integers within what every JSON reader keeps exactly."""
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

FieldValue = StrictBool | StrictInt | StrictStr | tuple[StrictStr, ...]
"""A ticket's value of one field, as events and state hold it."""


class FieldType(StrEnum):
    TEXT = "text"
    NUMBER = "number"
    CHECKBOX = "checkbox"
    DATE = "date"
    DROPDOWN = "dropdown"
    MULTISELECT = "multiselect"


CHOICE_TYPES = frozenset({FieldType.DROPDOWN, FieldType.MULTISELECT})
FILTERABLE_TYPES = frozenset({FieldType.CHECKBOX, FieldType.DROPDOWN, FieldType.MULTISELECT})
"""Types a list filters by value and analytics group by."""
RANGE_TYPES = frozenset({FieldType.NUMBER, FieldType.DATE})
"""Types a list filters by range."""


class RequiredOn(StrEnum):
    OPEN = "open"
    SOLVE = "solve"


class FieldOption(Frozen):
    """One choice of a dropdown or multiselect: a stable ``value`` and a ``title``."""

    value: str
    title: str
    active: bool = True


class FieldSpec(Frozen):
    """A ticket field's definition: its ``key`` and ``type``, fixed when it is defined,
    its title, options and rules. What ``DefineField`` asks for, ``TicketFieldDefined``
    records and a ``FieldDefinition`` holds as of its version."""

    key: str
    title: str
    type: FieldType
    options: tuple[FieldOption, ...] = ()
    required_on: RequiredOn | None = None
    active: bool = True
    intake: bool = False
    """Open to customers: intake keys and the portal may set it, and the portal shows
    its value; otherwise agents only."""
    customer_read_only: bool = False
    """With ``intake``: customers see the value but may not set it (agents do)."""
    personal: bool = False
    """A text field holding personal data (to be encrypted with the rest of it)."""


class FieldDefinition(FieldSpec, KeyedState):
    """A field as of ``version`` events of its stream."""

    created_at: UtcDatetime
    updated_at: UtcDatetime

    def option_values(self, *, active_only: bool = True) -> tuple[str, ...]:
        return tuple(o.value for o in self.options if o.active or not active_only)


FieldCatalog = Mapping[str, FieldDefinition]
"""A tenant's field definitions by key."""
NO_FIELDS: FieldCatalog = {}


def personal_keys(catalog: FieldCatalog) -> frozenset[str]:
    """The keys of the fields declared personal: their values are sealed like the
    other personal data of the ticket's requester (domain/personal.py)."""
    return frozenset(key for key, d in catalog.items() if d.personal)


def _where(key: str) -> str:
    return f"fields.{key}"


def check_value(d: FieldDefinition, raw: Any, held: FieldValue | None = None
                ) -> FieldValue | None:
    """``raw`` as field ``d`` stores it (None: cleared); ``held`` is the ticket's current
    value, whose inactive options may stay."""
    where = _where(d.key)
    if raw is None:
        return None
    match d.type:
        case FieldType.TEXT:
            if not isinstance(raw, str) or not raw.strip():
                raise ValidationFailed(f"{d.key} takes non-blank text", field=where)
            if len(raw) > TEXT_MAX:
                raise ValidationFailed(f"{d.key} takes at most {TEXT_MAX} characters",
                                       field=where)
            return raw
        case FieldType.NUMBER:
            if isinstance(raw, bool) or not isinstance(raw, int) or abs(raw) > NUMBER_MAX:
                raise ValidationFailed(f"{d.key} takes an integer", field=where)
            return raw
        case FieldType.CHECKBOX:
            if not isinstance(raw, bool):
                raise ValidationFailed(f"{d.key} takes true or false", field=where)
            return raw
        case FieldType.DATE:
            return _date(d.key, raw)
        case FieldType.DROPDOWN:
            allowed = set(d.option_values()) | ({held} if isinstance(held, str) else set())
            if not isinstance(raw, str) or raw not in allowed:
                raise ValidationFailed(f"{raw!r} is not an option of {d.key}", field=where)
            return raw
        case FieldType.MULTISELECT:
            return _multiselect(d, raw, held)
    raise AssertionError(d.type)  # pragma: no cover


def _date(key: str, raw: Any) -> str:
    if isinstance(raw, str) and _DATE.match(raw):
        try:
            if date.fromisoformat(raw).year >= 1:
                return raw
        except ValueError:
            pass
    raise ValidationFailed(f"{key} takes a date as YYYY-MM-DD", field=_where(key))


def _multiselect(d: FieldDefinition, raw: Any, held: FieldValue | None) -> FieldValue | None:
    if not isinstance(raw, list | tuple) or not all(isinstance(v, str) for v in raw):
        raise ValidationFailed(f"{d.key} takes a list of option values", field=_where(d.key))
    kept = set(held) if isinstance(held, tuple) else set()
    allowed = set(d.option_values()) | kept
    for value in raw:
        if value not in allowed:
            raise ValidationFailed(f"{value!r} is not an option of {d.key}", field=_where(d.key))
    if not raw:
        return None
    # The definition's order, every option once: equal choices are equal values.
    chosen = set(raw)
    return tuple(v for v in d.option_values(active_only=False) if v in chosen)


def customer_settable(d: FieldDefinition) -> bool:
    """Whether a customer may give field ``d`` a value (open to intake, not read-only)."""
    return d.intake and not d.customer_read_only


def check_values(values: Mapping[str, Any], catalog: FieldCatalog, actor: Actor,
                 held: Mapping[str, FieldValue]) -> dict[str, FieldValue | None]:
    """Check values a command sets (None clears), in key order; see the module's rules."""
    out: dict[str, FieldValue | None] = {}
    for key in sorted(values):
        d = catalog.get(key)
        if d is None:
            raise ValidationFailed(f"{key} is not a ticket field", field=_where(key))
        if not d.active:
            raise ValidationFailed(f"{key} is inactive", field=_where(key))
        if actor.kind is ActorKind.CUSTOMER and not customer_settable(d):
            raise ValidationFailed(f"{key} is set by agents only" + (
                " (customers see it read-only)" if d.intake else ""), field=_where(key))
        out[key] = check_value(d, values[key], held.get(key))
    return out


def require(catalog: FieldCatalog, fields: Mapping[str, FieldValue], on: RequiredOn,
            actor: Actor) -> None:
    """Refuse, naming them, the active fields required ``on`` opening (those ``actor``
    may set) or solving (those required on open or solve) that have no value."""
    if actor.kind is ActorKind.SYSTEM:
        return
    stages = {RequiredOn.OPEN} if on is RequiredOn.OPEN else {RequiredOn.OPEN, RequiredOn.SOLVE}
    missing = sorted(
        key for key, d in catalog.items()
        if d.active and d.required_on in stages and fields.get(key) is None
        and (on is RequiredOn.SOLVE or actor.kind is not ActorKind.CUSTOMER
             or customer_settable(d)))
    if missing:
        verb = "opening" if on is RequiredOn.OPEN else "solving"
        raise ValidationFailed(f"{verb} needs a value for {', '.join(missing)}",
                               field=_where(missing[0]))


__all__ = [
    "CHOICE_TYPES",
    "FIELD_KEY_PATTERN",
    "FILTERABLE_TYPES",
    "NO_FIELDS",
    "OPTION_VALUE_PATTERN",
    "RANGE_TYPES",
    "FieldCatalog",
    "FieldDefinition",
    "FieldOption",
    "FieldType",
    "FieldValue",
    "RequiredOn",
    "check_value",
    "check_values",
    "customer_settable",
    "personal_keys",
    "require",
]
