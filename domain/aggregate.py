"""What every aggregate's commands and states are made of.

A command asks for something at a business time, ``at``, which the caller reads from
the injected clock (the domain never reads one). A state is what the events of one
stream add up to: the thing's ``id`` and how many events it has seen (``version``,
what a concurrent writer is refused on). A state's own fields follow, and its
``created_at`` and ``updated_at`` close them: its documents have always ended with
the two, and a base's fields would come first.
"""

from __future__ import annotations

from uuid import UUID

from domain.frozen import Frozen
from domain.values import Actor, UtcDatetime


class BaseCommand(Frozen):
    """Something a caller asks of an aggregate, as of ``at``."""

    at: UtcDatetime


class ActorCommand(BaseCommand):
    """A command someone issued: ``actor`` is who asks, and the history names them."""

    actor: Actor


class AggregateState(Frozen):
    """An aggregate's state as of ``version`` events of its stream (1: as created).
    A state declares ``id`` again with its own id type; it keeps its place, first."""

    id: UUID
    version: int


class NamedState(AggregateState):
    """The state of a thing a tenant configures and finds by its name (a group, an
    organization, a macro, a view, a rule, an SLA policy or calendar)."""

    name: str


__all__ = ["ActorCommand", "AggregateState", "BaseCommand", "NamedState"]
