"""What every aggregate's commands and states are made of.

A command asks for something at a business time, ``at``, which the caller reads from
the injected clock (the domain never reads one). A change command names the parts to
change, and its event records those that differ from the state (``ChangedParts``).
A state is what the events of one stream add up to: the thing's ``id`` and how many
events it has seen (``version``, what a concurrent writer is refused on). A state's own
fields follow, and its ``created_at`` and ``updated_at`` close them: its documents have
always ended with the two, and a base's fields would come first.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar
from uuid import UUID

from pydantic import BaseModel

from domain.frozen import Frozen
from domain.values import Actor, UtcDatetime

if TYPE_CHECKING:
    # Annotations only: domain.fields, which the events import, is made of these
    # shapes, so loading this module must not load the events.
    from domain.events import Event

V = TypeVar("V")


class BaseCommand(Frozen):
    """Something a caller asks of an aggregate, as of ``at``."""

    at: UtcDatetime


class ActorCommand(BaseCommand):
    """A command someone issued: ``actor`` is who asks, and the history names them."""

    actor: Actor


class Identified(Frozen):
    """A thing of the tenant, named by its ``id``, first in its documents. A state
    declares ``id`` again with its own id type; it keeps its place, first."""

    id: UUID


class AggregateState(Identified):
    """An aggregate's state as of ``version`` events of its stream (1: as created)."""

    version: int


class KeyedState(Frozen):
    """The state of an aggregate whose stream a key names rather than an id (a ticket
    field's): the ``key`` and how many events it has seen, first in its documents."""

    key: str
    version: int


class NamedState(AggregateState):
    """The state of a thing a tenant configures and finds by its name (a group, an
    organization, a macro, a view, a rule, an SLA policy or calendar)."""

    name: str


class ChangedParts:
    """What a change command asks for that differs from ``state``: each part it gives
    is checked, and kept when it is not what the state holds already, and a change to
    nothing records no event. Rules, macros, views, calendars and SLA policies decide
    their changes so; their change events name the parts kept."""

    def __init__(self, state: BaseModel) -> None:
        self._state = state
        self.parts: dict[str, object] = {}

    def given(self, part: str, value: V | None, check: Callable[[V], V] | None = None) -> None:
        """Keep ``value`` (None: not given), checked, as ``part`` if it differs."""
        if value is None:
            return
        if check is not None:
            value = check(value)
        if value != getattr(self._state, part):
            self.parts[part] = value

    def events(self, kind: type[Event], at: datetime) -> list[Event]:
        """The ``kind`` event of the parts kept, as of ``at``; none if none differ."""
        return [kind.model_validate({"at": at, **self.parts})] if self.parts else []


__all__ = ["ActorCommand", "AggregateState", "BaseCommand", "ChangedParts", "Identified",
           "KeyedState", "NamedState"]
