"""The route side of what is shared by the tenant or personal to one agent: macros and
saved views (``api.routes.macros``, ``api.routes.views``; ``handlers.owned`` holds the
rules of who may change one).

A new one is shared (admins only, else 403) or personal to the caller's agent (a key
of no agent has none to give it: 422). A change or a deletion runs as any versioned
record's does (``commands.change_one``, ``commands.delete_one``), with the caller
handed to the handler, which holds it to who may.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar
from uuid import UUID

from fastapi import Request, Response
from pydantic import BaseModel

from api.http import commands
from api.http.auth import Principal
from api.http.commands import owner_caller
from api.http.problems import Problem
from api.http.reply import JsonReply
from domain.ids import AgentId
from domain.values import Role
from eventstore.store import UnitOfWork
from handlers.owned import Caller

if TYPE_CHECKING:
    from api.root import Services

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
C_contra = TypeVar("C_contra", contravariant=True)
C = TypeVar("C")


class OwnedChange(Protocol[C_contra, R_co]):
    """A handler that changes a macro or a view by a command, as the caller."""

    def __call__(self, uow: UnitOfWork, record_id: UUID, command: C_contra, caller: Caller,
                 /, *, expected_version: int | None = None) -> Awaitable[R_co]: ...


class OwnedDelete(Protocol[R_co]):
    """A handler that deletes a macro or a view as the caller, answering it as it was."""

    def __call__(self, uow: UnitOfWork, record_id: UUID, caller: Caller, at: datetime, /, *,
                 expected_version: int | None = None) -> Awaitable[R_co]: ...


def new_owner(principal: Principal, shared: bool, kind: str) -> AgentId | None:
    """The owner of a new ``kind`` (None: shared by the tenant), if the caller may
    make it so."""
    if shared:
        if principal.role != Role.ADMIN.value:
            raise Problem(403, "forbidden", f"only admins share {kind}s with the tenant")
        return None
    if principal.agent_id is None:
        raise Problem(422, "no_agent", f"a personal {kind} belongs to an agent; this key "
                                       f"acts as none (make it shared)")
    return AgentId(principal.agent_id)


async def change_owned(request: Request, services: Services, principal: Principal,
                       body: BaseModel, expected: int | None, change: OwnedChange[C, R],
                       record_id: UUID, command: C,
                       reply: Callable[[R], JsonReply]) -> Response:
    """``commands.change_one`` as the principal's agent (``owner_caller``), whom ``change``
    holds to who may change the record."""
    caller = owner_caller(principal)
    return await commands.change_one(
        request, services, principal, body, expected,
        lambda uow, key, given, *, expected_version=None: change(
            uow, key, given, caller, expected_version=expected_version),
        record_id, command, reply)


async def delete_owned(request: Request, services: Services, principal: Principal,
                       if_match: str | None, delete: OwnedDelete[R], record_id: UUID,
                       reply: Callable[[R], JsonReply]) -> Response:
    """``commands.delete_one`` as the principal's agent (``owner_caller``), whom ``delete``
    holds to who may delete the record."""
    caller = owner_caller(principal)
    return await commands.delete_one(
        request, services, principal, if_match,
        lambda uow, key, at, *, expected_version=None: delete(
            uow, key, caller, at, expected_version=expected_version),
        record_id, reply)


__all__ = ["OwnedChange", "OwnedDelete", "change_owned", "delete_owned", "new_owner"]
