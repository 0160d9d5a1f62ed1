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
from typing import Protocol, TypeVar
from uuid import UUID

from domain.errors import ValidationFailed
from domain.events import Event
from domain.ids import TenantId
from eventstore.store import UnitOfWork
from eventstore.types import Write
from handlers.errors import Forbidden, Invalid, Missing
from handlers.records import change_record, create_record


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


def _invalid(kind: str, exc: ValidationFailed) -> Invalid:
    return Invalid(f"invalid_{kind}", f"{exc.field}: {exc.message}", field=exc.field,
                   reason=exc.message)


async def created(uow: UnitOfWork, kind: str, *, decide: Callable[[], list[Event]],
                  evolve: Callable[[T | None, Event], T],
                  write: Callable[[UnitOfWork, T], Awaitable[None]]) -> T:
    """Decide the creation of a ``kind`` record, write its row (``write(uow, record)``,
    which may refuse it first) and start its stream; returns the record."""
    try:
        events = decide()
    except ValidationFailed as exc:
        raise _invalid(kind, exc) from exc
    return await create_record(uow, events, evolve=evolve, write=write)


def found(kind: str, record_id: UUID, record: T | None) -> T:
    """The record a reader asked for, or the 404 of one that is not there for them."""
    if record is None:
        raise Missing("not_found", f"no {kind} {record_id}")
    return record


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

    def decided(state: T) -> list[Event]:
        try:
            return decide(state)
        except ValidationFailed as exc:
            raise _invalid(kind, exc) from exc

    return await change_record(uow, kind, record_id, state, expected_version,
                               missing=f"no {kind} {record_id}", decide=decided,
                               evolve=evolve, write=write)


async def deleted(uow: UnitOfWork, kind: str, record_id: UUID, caller: Caller,
                  expected_version: int | None, *,
                  load: Callable[[UnitOfWork, UUID], Awaitable[T | None]],
                  decide: Callable[[T], list[Event]],
                  evolve: Callable[[T, Event], T],
                  remove: Callable[[Write, TenantId, UUID], Awaitable[None]]) -> T:
    """A deletion decided as ``changed`` decides a change: the row goes
    (``remove(write, tenant, id)``) and the stream ends with the deciding event;
    returns the record as it last was, one version on."""

    async def write(uow: UnitOfWork, before: T, after: T) -> None:
        await remove(uow.write, uow.tenant_id, record_id)

    return await changed(uow, kind, record_id, caller, expected_version, load=load,
                         decide=decide, evolve=evolve, write=write)


__all__ = ["Caller", "changed", "created", "deleted", "found"]
