"""How an aggregate's state moves on by one event.

A macro, a saved view, a rule, an SLA policy and an SLA calendar each keep a
``version`` and an ``updated_at``, and their change events name only what changed
(None: left as it was); a group's, an organization's and a contact's events say what
they set. Every such stream starts with one kind of event (``stream_start``), which
makes the state's first version (``first_version``); each later event moves it on by
one (``one_version_on``, or ``next_version`` by the parts each event type gives), and
an event of another stream is refused the same way everywhere. Each ``evolve_x`` says
only which events its stream holds and what they give; where the events say plainly
what they set, one ``StreamSteps`` says it. Replaying a stream (``replay``,
``fold_with``, ``fold_onto``) is the same for every aggregate, the ticket's too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, Protocol, Self, TypeVar

from pydantic import BaseModel

from domain.aggregate import AggregateState
from domain.errors import CorruptStream
from domain.events import Event


class Versioned(Protocol):
    @property
    def version(self) -> int: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Self: ...


S = TypeVar("S", bound=Versioned)
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
E = TypeVar("E", bound=Event)
A = TypeVar("A", bound=AggregateState)


def first_version(state: type[M], event: Event, **fields: object) -> M:
    """The state a stream's first event makes: version 1, created and last updated
    when the event happened, and each field as the event records it (a field of the
    same name), or as ``fields`` gives it (the id, which the event names for its kind:
    ``group_id``)."""
    recorded = {name: getattr(event, name) for name in state.model_fields
                if name in type(event).model_fields and name != "at"}
    return state.model_validate({**recorded, "version": 1, "created_at": event.at,
                                 "updated_at": event.at, **fields})


def replay(evolve: Callable[[T | None, Event], T], events: Iterable[Event],
           state: T | None = None) -> T | None:
    """``state`` (None: before the stream's first event) after ``events``, each applied
    by ``evolve``; None for no state and no events."""
    for event in events:
        state = evolve(state, event)
    return state


def fold_with(evolve: Callable[[T | None, Event], T]) -> Callable[[Iterable[Event]], T | None]:
    """Replaying a stream of ``evolve``'s kind from the start: the state after the
    events, None for an empty stream."""
    def fold(events: Iterable[Event]) -> T | None:
        return replay(evolve, events)
    return fold


def fold_onto(evolve: Callable[[T | None, Event], T]
              ) -> Callable[[T | None, Iterable[Event]], T | None]:
    """Replaying events onto a state kept in a row (an agent's, an API key's, the
    webhook's: their events are on the tenant stream, and the row is where their state
    is read): the state after the events; None for no state and no events."""
    def fold(state: T | None, events: Iterable[Event]) -> T | None:
        return replay(evolve, events, state)
    return fold


def stream_start(event: Event, first: type[E], stream: str) -> E:
    """``event`` as the first of ``stream`` (``"a group stream"``), which a ``first``
    starts; any other event there means the stream is corrupt."""
    if not isinstance(event, first):
        raise CorruptStream(f"{stream} must start with {first.TYPE}, not {event.TYPE}")
    return event


def next_version(state: S, event: Event, steps: Mapping[type[Event], Iterable[str]],
                 stream: str) -> S:
    """``state`` one version on by ``event``, taking the parts ``steps`` names for its
    type (a deletion names none); an event of a type not in ``steps`` does not belong to
    ``stream`` (``"a group stream"``)."""
    for kind, parts in steps.items():
        if isinstance(event, kind):
            return one_version_on(state, event, parts)
    raise CorruptStream(f"{event.TYPE} does not belong to {stream}")


def one_version_on(state: S, event: Event, parts: Iterable[str] = (),
                   also: Mapping[str, object] | None = None) -> S:
    """``state`` one version on as of ``event.at``, taking each of ``parts`` that the
    event gives (not None), then ``also``. With no parts (a deletion) it is the last
    state the thing was in, one version on."""
    changes: dict[str, object] = {"version": state.version + 1, "updated_at": event.at}
    for part in parts:
        value = getattr(event, part)
        if value is not None:
            changes[part] = value
    changes.update(also or {})
    return state.model_copy(update=changes)


@dataclass(frozen=True)
class StreamSteps(Generic[A]):
    """How the state of one kind of aggregate follows its stream, for the kinds whose
    events say plainly what they set (a group, an organization, a rule, a macro, a
    view, a calendar): a ``first`` starts the stream and names the thing in its
    ``id_field``; each of the ``later`` event types moves the state one version on by
    the fields it shares with the state, where it gives them (a deletion shares none);
    any other event is refused."""

    stream: str
    """The stream as a refusal names it: ``"a macro stream"``."""
    state: type[A]
    first: type[Event]
    id_field: str
    later: tuple[type[Event], ...]

    def evolve(self, state: A | None, event: Event) -> A:
        """Apply one event to the state (None before the stream's first event)."""
        if state is None:
            first = stream_start(event, self.first, self.stream)
            return first_version(self.state, first, id=getattr(first, self.id_field))
        return next_version(state, event, self.steps, self.stream)

    @cached_property
    def steps(self) -> dict[type[Event], tuple[str, ...]]:
        """The parts each later event type gives: the fields it shares with the state."""
        return {kind: tuple(name for name in kind.model_fields
                            if name in self.state.model_fields and name != "at")
                for kind in self.later}

    def fold(self, events: Iterable[Event]) -> A | None:
        """Replay a stream from the start; None for an empty stream."""
        return replay(self.evolve, events)
