"""How an aggregate's state moves on by one event.

A macro, a saved view, a rule, an SLA policy and an SLA calendar each keep a
``version`` and an ``updated_at``, and their change events name only what changed
(None: left as it was); a group's, an organization's and a contact's events say what
they set. Every such stream starts with one kind of event (``stream_start``), which
makes the state's first version (``first_version``); each later event moves it on by
one (``one_version_on``, or ``next_version`` by the parts each event type gives), and
an event of another stream is refused the same way everywhere. Each ``evolve_x`` says
only which events its stream holds and what they give. Replaying a stream
(``replay``, ``fold_with``) is the same for every aggregate, the ticket's too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, Self, TypeVar

from pydantic import BaseModel

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


def first_version(state: type[M], event: Event, **fields: object) -> M:
    """The state a stream's first event makes: version 1, created and last updated
    when the event happened, with ``fields`` as the event gives them."""
    return state.model_validate({"version": 1, "created_at": event.at,
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
