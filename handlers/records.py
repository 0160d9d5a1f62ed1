"""One record of the tenant's setup, written with its events: its row and its stream's
events go in the caller's one unit of work (rules, calendars, SLA policies,
macros and saved views).

A creation writes the row of the record its events fold to. A change is decided on
the record's row, locked until commit by the caller, after the caller's ``If-Match``
(412 on another version); a change to nothing records nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar
from uuid import UUID

from domain.events import Event
from domain.mapper import to_stored
from eventstore.store import UnitOfWork
from eventstore.types import NewEvent
from handlers.errors import Missing, expect_version, refused_as


class Record(Protocol):
    """A record's state as the write side holds it: its id and the version it is at (a
    state that also knows how to move on is ``domain.evolution.Versioned``)."""

    @property
    def id(self) -> UUID: ...
    @property
    def version(self) -> int: ...


T = TypeVar("T", bound=Record)
C = TypeVar("C")


async def append_events(uow: UnitOfWork, stream: UUID, version: int,
                        events: list[Event]) -> None:
    """Append ``events`` to the record's stream, which is at ``version``."""
    stored = [to_stored(e) for e in events]
    await uow.append(stream, version, [NewEvent(t, d, v) for t, v, d in stored])


async def create_record(uow: UnitOfWork, events: list[Event], *,
                        evolve: Callable[[T | None, Event], T],
                        write: Callable[[UnitOfWork, T], Awaitable[None]]) -> T:
    """The record the decided ``events`` create: its row written (``write(uow, record)``,
    which may refuse it first) and its stream started; returns the record."""
    record: T | None = None
    for event in events:
        record = evolve(record, event)
    assert record is not None  # a creation decides at least its first event
    await write(uow, record)
    await append_events(uow, record.id, 0, events)
    return record


async def change_record(uow: UnitOfWork, kind: str, record_id: UUID, state: T | None,
                        expected_version: int | None, *, missing: str,
                        decide: Callable[[T], list[Event]],
                        evolve: Callable[[T, Event], T],
                        write: Callable[[UnitOfWork, T, T], Awaitable[None]]) -> T:
    """Decide a change of the ``kind`` record ``state`` (None: not there, 404
    ``missing``), write its row (``write(uow, before, after)``) and append its events;
    returns the record after them (the record as it was, when nothing changes)."""
    if state is None:
        raise Missing("not_found", missing)
    expect_version(kind, state.version, expected_version)
    events = decide(state)
    if not events:
        return state
    after = state
    for event in events:
        after = evolve(after, event)
    await write(uow, state, after)
    await append_events(uow, record_id, state.version, events)
    return after


@dataclass(frozen=True, slots=True)
class LockedRecords(Generic[T, C]):
    """A kind of setup record every change of which is decided on its row, locked
    until commit (rules, calendars, SLA policies): ``kind`` as a 412 names it, ``noun``
    as a 404 does; a refusal of ``decide`` (the aggregate's decision on a creation or
    change command) is the 422 ``refusal``; ``evolve`` folds its events and ``lock``
    reads its row locked."""

    kind: str
    noun: str
    refusal: str
    decide: Callable[[C, T | None], list[Event]]
    evolve: Callable[[T | None, Event], T]
    lock: Callable[[UnitOfWork, UUID], Awaitable[T | None]]

    def decided(self, command: C, state: T | None) -> list[Event]:
        """``decide``'s events, its refusal the 422 ``refusal``."""
        with refused_as(self.refusal):
            return self.decide(command, state)

    async def create(self, uow: UnitOfWork, command: C,
                     write: Callable[[UnitOfWork, T], Awaitable[None]]) -> T:
        """Decide the creation and write it (``create_record``)."""
        return await create_record(uow, self.decided(command, None), evolve=self.evolve,
                                   write=write)

    async def change(self, uow: UnitOfWork, record_id: UUID, expected_version: int | None,
                     decide: Callable[[T], list[Event]],
                     write: Callable[[UnitOfWork, T, T], Awaitable[None]]) -> T:
        """Lock the record's row and change it (``change_record``; 404 for none):
        ``decide`` is ``decided`` for a change command, or a deletion's decision."""
        return await change_record(uow, self.kind, record_id,
                                   await self.lock(uow, record_id), expected_version,
                                   missing=f"no {self.noun} {record_id}", decide=decide,
                                   evolve=self.evolve, write=write)


__all__ = ["LockedRecords", "append_events", "change_record", "create_record"]
