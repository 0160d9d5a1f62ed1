"""The saved view aggregate: a name and the ticket list's filters, shared by the tenant
or personal to one agent.

A view has its own stream (the stream id is the view id): ``ViewCreated``, then
``ViewChanged``, and ``ViewDeleted`` at its end (the stream keeps what it was).
Its filters are the ticket list's query parameters as given (``{"state": ["open"],
"fields.plan": "gold"}``): what each means, and whether it is valid, is the list's
own business, asked when the view is saved (``api.http.ticket_list``), so a view
takes every filter the list takes. Here are only the rules of the shape.
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.aggregate import BaseCommand, ChangedParts, NamedState
from domain.errors import AlreadyExists, ValidationFailed
from domain.events import Event
from domain.evolution import StreamSteps
from domain.ids import AgentId
from domain.validation import check_name
from domain.values import UtcDatetime
from domain.workflow_events import (
    Filters,
    NewView,
    ViewChanged,
    ViewChanges,
    ViewCreated,
    ViewDeleted,
)

VIEW_NAME_MAX = 100
FILTERS_MAX = 30
VALUE_MAX = 1000
PAGING = frozenset({"cursor", "limit"})
"""List parameters that are not filters: a view's pages bring their own."""


class SavedView(NamedState):
    owner_id: AgentId | None
    """The agent whose personal view it is; None: shared by the tenant."""
    filters: Filters
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateView(NewView, BaseCommand):
    """Create a view: shared by the tenant, and of every ticket, unless told."""

    owner_id: AgentId | None = None
    filters: Filters = {}


class ChangeView(ViewChanges, BaseCommand):
    """Change the parts given (None: as it is); ``filters`` replaces them all."""


def check_view_name(name: str) -> str:
    return check_name(name, VIEW_NAME_MAX)


def check_filters(filters: Mapping[str, str | list[str]]) -> Filters:
    """The filters, each name once, values as strings; refuses paging parameters."""
    if len(filters) > FILTERS_MAX:
        raise ValidationFailed(f"a view has at most {FILTERS_MAX} filters", field="filters")
    out: Filters = {}
    for name in sorted(filters):
        value = filters[name]
        where = f"filters.{name}"
        if name in PAGING or not name or len(name) > 100:
            raise ValidationFailed(f"{name!r} is not a filter of the ticket list", field=where)
        values = value if isinstance(value, list) else [value]
        if not values or any(not isinstance(v, str) or len(v) > VALUE_MAX for v in values):
            raise ValidationFailed(f"give a value of at most {VALUE_MAX} characters, or a "
                                   "list of them", field=where)
        out[name] = list(values) if isinstance(value, list) else value
    return out


def decide_view(command: CreateView, state: SavedView | None) -> list[Event]:
    if state is not None:
        raise AlreadyExists("the view already exists")
    return [ViewCreated(view_id=command.view_id, name=check_view_name(command.name),
                        owner_id=command.owner_id, filters=check_filters(command.filters),
                        at=command.at)]


def decide_change_view(command: ChangeView, state: SavedView) -> list[Event]:
    """The ``ViewChanged`` of the parts that differ (none: no event)."""
    changes = ChangedParts(state)
    changes.given("name", command.name, check_view_name)
    changes.given("filters", command.filters, check_filters)
    return changes.events(ViewChanged, command.at)


def decide_delete_view(state: SavedView, at: UtcDatetime) -> list[Event]:
    return [ViewDeleted(at=at)]


_STEPS = StreamSteps("a view stream", SavedView, ViewCreated, "view_id", (ViewChanged, ViewDeleted))
evolve_view = _STEPS.evolve
fold_view = _STEPS.fold


__all__ = ["FILTERS_MAX", "PAGING", "VIEW_NAME_MAX", "ChangeView", "CreateView", "Filters",
           "SavedView", "check_filters", "check_view_name", "decide_change_view",
           "decide_delete_view", "decide_view", "evolve_view", "fold_view"]
