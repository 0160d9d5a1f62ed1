"""Ticket list filters on ticket fields, from query parameters named after the field.

``field.<key>=<value>`` filters checkbox (``true``/``false``), dropdown and
multiselect fields by any of the values (a comma list, repeats or both, as every list
parameter); ``field.<key>.gte`` / ``field.<key>.lte`` bound number (an integer) and
date (``YYYY-MM-DD``) fields, each given once. An option taken out of use is still a
value to filter by: tickets keep it. A key the tenant has not defined, an operation
its type does not have, or a value it cannot hold is a 400 naming the parameter.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date

from starlette.datastructures import QueryParams

from api.http.problems import Problem, invalid_parameter
from domain.fields import FieldDefinition, FieldType
from projections.reads import FieldFilter

PREFIX = "field."
DESCRIPTION = (
    "Filter by ticket field: `field.<key>=<value>` for checkbox, dropdown and multiselect "
    "fields (any of a comma list or repeats), `field.<key>.gte` / `field.<key>.lte` for "
    "number and date fields. An unknown key or an invalid value is a 400 naming it.")
_NAME = re.compile(r"^field\.([a-z][a-z0-9_]{0,39})(?:\.(gte|lte))?$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_INT = re.compile(r"^[+-]?\d{1,16}$")


def _bad(name: str, reason: str) -> Problem:
    return invalid_parameter(f"{name}: {reason}", name, reason=reason)


def field_filters(query: QueryParams, catalog: Mapping[str, FieldDefinition]
                  ) -> tuple[FieldFilter, ...]:
    """The field filters a query asks for, checked against the tenant's fields, in a
    canonical order (so equal filters make equal cursors)."""
    out: list[FieldFilter] = []
    for name in sorted({k for k in query if k.startswith(PREFIX)}):
        match = _NAME.match(name)
        if match is None:
            raise Problem(400, "unknown_parameter", f"unknown query parameter: {name}",
                          parameters=[name])
        key, bound = match.groups()
        d = catalog.get(key)
        if d is None:
            raise _bad(name, f"{key} is not a ticket field")
        raw = query.getlist(name)
        if bound is None:
            out.append(_any_of(name, d, raw))
        else:
            if len(raw) > 1:
                raise Problem(400, "repeated_parameter", f"query parameter {name!r} takes "
                              "one value; it was given more than once", parameters=[name])
            out.append(_bound(name, d, bound, raw[0]))
    return tuple(out)


def _any_of(name: str, d: FieldDefinition, raw: list[str]) -> FieldFilter:
    values = sorted({v.strip() for item in raw for v in item.split(",")})
    if not values or "" in values:
        raise _bad(name, "give one or more values")
    if d.type is FieldType.CHECKBOX:
        if not set(values) <= {"true", "false"}:
            raise _bad(name, "a checkbox is true or false")
        return FieldFilter(d.key, "any", tuple(values))
    if d.type not in (FieldType.DROPDOWN, FieldType.MULTISELECT):
        raise _bad(name, f"a {d.type} field filters by range ({name}.gte, {name}.lte)"
                   if d.type in (FieldType.NUMBER, FieldType.DATE)
                   else f"a {d.type} field does not filter")
    known = set(d.option_values(active_only=False))
    strange = [v for v in values if v not in known]
    if strange:
        raise _bad(name, f"{', '.join(strange)} is not an option of {d.key}")
    return FieldFilter(d.key, "any" if d.type is FieldType.DROPDOWN else "any_of_list",
                       tuple(values))


def _bound(name: str, d: FieldDefinition, bound: str, raw: str) -> FieldFilter:
    if d.type is FieldType.NUMBER:
        if not _INT.match(raw):
            raise _bad(name, "a number field takes an integer")
        return FieldFilter(d.key, f"number_{bound}", int(raw))
    if d.type is FieldType.DATE:
        try:
            ok = bool(_DATE.match(raw)) and date.fromisoformat(raw).year >= 1
        except ValueError:
            ok = False
        if not ok:
            raise _bad(name, "a date field takes YYYY-MM-DD")
        return FieldFilter(d.key, f"date_{bound}", raw)
    raise _bad(name, f"a {d.type} field has no range")


__all__ = ["DESCRIPTION", "PREFIX", "field_filters"]
