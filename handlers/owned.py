"""Changing and deleting what is shared by the tenant or personal to one agent: macros
and saved views (``handlers.macros``, ``handlers.saved_views``).

Who may: a shared one, admins only (403); a personal one, its owner or an admin; to
anyone else another agent's personal record is not there (404), as it is not there
for them on every read. The change is decided on the record's row, locked until
commit, after the caller's ``If-Match`` (412 on another version); the row and the
stream's event are written in the one unit of work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar
from uuid import UUID

from domain.errors import ValidationFailed
from domain.events import Event
from domain.mapper import to_stored
from eventstore.store import UnitOfWork
from eventstore.types import NewEvent
from handlers.errors import Forbidden, Invalid, Missing, expect_version


class Owned(Protocol):
    @property
    def id(self) -> UUID: ...
    @property
    def version(self) -> int: ...
    @property
    def owner_id(self) -> UUID | None: ...


T = TypeVar("T", bound=Owned)


@dataclass(frozen=True, slots=True)
class Caller:
    """Who changes a record: the caller's agent (None: a key of no agent) and whether
    the caller is an admin."""

    agent_id: UUID | None
    admin: bool


async def changed(uow: UnitOfWork, kind: str, record_id: UUID, caller: Caller,
                  expected_version: int | None, *,
                  load: Callable[[UnitOfWork, UUID], Awaitable[T | None]],
                  decide: Callable[[T], list[Event]],
                  evolve: Callable[[T, Event], T],
                  write: Callable[[UnitOfWork, T, T], Awaitable[None]]) -> T:
    """Decide a change (or a deletion) of a ``kind`` record the caller may change,
    write its row (``write(uow, before, after)``) and append its events; returns the
    record after them (the record as it was, when nothing changes)."""
    state = await load(uow, record_id)
    if state is None or (state.owner_id is not None and state.owner_id != caller.agent_id
                         and not caller.admin):
        raise Missing("not_found", f"no {kind} {record_id}")
    if state.owner_id is None and not caller.admin:
        raise Forbidden("forbidden", f"only admins change a shared {kind}")
    expect_version(kind, state.version, expected_version)
    try:
        events = decide(state)
    except ValidationFailed as exc:
        raise Invalid(f"invalid_{kind}", f"{exc.field}: {exc.message}", field=exc.field,
                      reason=exc.message) from exc
    if not events:
        return state
    after = state
    for event in events:
        after = evolve(after, event)
    await write(uow, state, after)
    stored = [to_stored(e) for e in events]
    await uow.append(record_id, state.version, [NewEvent(t, d, v) for t, v, d in stored])
    return after


__all__ = ["Caller", "changed"]
