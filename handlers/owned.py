"""Creating, finding, changing and deleting what is shared by the tenant or personal to
one agent: macros and saved views (``handlers.macros``, ``handlers.saved_views``).

Who may: a shared one, admins only (403); a personal one, its owner or an admin; to
anyone else another agent's personal record is not there (404), as it is not there
for them on every read. The change is decided on the record's row, locked until
commit, after the caller's ``If-Match`` (412 on another version); the row and the
stream's event are written in the one unit of work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar
from uuid import UUID

import asyncpg

from domain.events import Event
from domain.ids import TenantId
from eventstore.store import UnitOfWork
from eventstore.types import Write
from handlers.errors import Forbidden, Missing, refused_as
from handlers.records import change_record, create_record


class Owned(Protocol):
    @property
    def id(self) -> UUID: ...
    @property
    def version(self) -> int: ...
    @property
    def owner_id(self) -> UUID | None: ...


T = TypeVar("T", bound=Owned)
T_co = TypeVar("T_co", bound=Owned, covariant=True)


class Rows(Protocol[T_co]):
    """The rows of one kind of owned record (``projections.owned.OwnedRows``)."""

    @property
    def record(self) -> str: ...
    async def load(self, conn: asyncpg.Connection, tenant_id: TenantId, record_id: UUID,
                   reader: UUID | None) -> T_co | None: ...
    async def for_update(self, conn: asyncpg.Connection, tenant_id: TenantId,
                         record_id: UUID) -> T_co | None: ...
    async def delete(self, write: Write, tenant_id: TenantId, record_id: UUID) -> None: ...


@dataclass(frozen=True, slots=True)
class Caller:
    """Who changes a record: the caller's agent (None: a key of no agent) and whether
    the caller is an admin."""

    agent_id: UUID | None
    admin: bool


@dataclass(frozen=True, slots=True)
class OwnedRecords(Generic[T]):
    """The handlers of one kind of owned record (macros, saved views): its rows
    (``rows.record`` names the kind in messages), how its events fold and how its
    deletion is decided. Each kind brings its own checks and row writes to ``create``
    and ``change``; deleting and finding one are the same for every kind."""

    rows: Rows[T]
    evolve: Callable[[T | None, Event], T]
    decide_delete: Callable[[T, datetime], list[Event]]

    async def create(self, uow: UnitOfWork, *, decide: Callable[[], list[Event]],
                     write: Callable[[UnitOfWork, T], Awaitable[None]]) -> T:
        """Decide the creation of a record, write its row (``write(uow, record)``, which
        may refuse it first) and start its stream; returns the record."""
        with refused_as(f"invalid_{self.rows.record}"):
            events = decide()
        return await create_record(uow, events, evolve=self.evolve, write=write)

    async def change(self, uow: UnitOfWork, record_id: UUID, caller: Caller,
                     expected_version: int | None, *, decide: Callable[[T], list[Event]],
                     write: Callable[[UnitOfWork, T, T], Awaitable[None]]) -> T:
        """Decide a change (or a deletion) of a record the caller may change, write its
        row (``write(uow, before, after)``) and append its events; returns the record
        after them (the record as it was, when nothing changes)."""
        kind = self.rows.record
        state = await self.rows.for_update(uow.conn, uow.tenant_id, record_id)
        if state is None or (state.owner_id is not None
                             and state.owner_id != caller.agent_id and not caller.admin):
            raise Missing("not_found", f"no {kind} {record_id}")
        if state.owner_id is None and not caller.admin:
            raise Forbidden("forbidden", f"only admins change a shared {kind}")

        def decided(state: T) -> list[Event]:
            with refused_as(f"invalid_{kind}"):
                return decide(state)

        return await change_record(uow, kind, record_id, state, expected_version,
                                   missing=f"no {kind} {record_id}", decide=decided,
                                   evolve=self.evolve, write=write)

    async def delete(self, uow: UnitOfWork, record_id: UUID, caller: Caller, at: datetime,
                     /, *, expected_version: int | None = None) -> T:
        """Delete a record as ``change`` changes one: its row goes and its stream ends
        with the deciding event; returns the record as it last was, one version on."""

        async def write(uow: UnitOfWork, before: T, after: T) -> None:
            await self.rows.delete(uow.write, uow.tenant_id, record_id)

        return await self.change(uow, record_id, caller, expected_version,
                                 decide=lambda state: self.decide_delete(state, at),
                                 write=write)

    async def visible(self, uow: UnitOfWork, record_id: UUID, reader: UUID | None) -> T:
        """The record a reader asked for, or the 404 of one that is not there for them."""
        record = await self.rows.load(uow.conn, uow.tenant_id, record_id, reader)
        if record is None:
            raise Missing("not_found", f"no {self.rows.record} {record_id}")
        return record


__all__ = ["Caller", "OwnedRecords"]
