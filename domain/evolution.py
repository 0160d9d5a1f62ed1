"""How a configuration aggregate's state moves on by one event.

A macro, a saved view, a rule, an SLA policy and an SLA calendar each keep a
``version`` and an ``updated_at``, and their change events name only what changed
(None: left as it was). Each ``evolve_x`` says which event starts and which ends its
stream; the step itself is the same for all and is written here once, as is the
first state a stream's first event makes (``first_version``). Replaying a stream
(``replay``) is the same for every aggregate, the ticket's too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, Self, TypeVar

from pydantic import BaseModel

from domain.events import Event


class Versioned(Protocol):
    @property
    def version(self) -> int: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Self: ...


S = TypeVar("S", bound=Versioned)
T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


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
