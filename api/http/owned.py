"""The route side of what is shared by the tenant or personal to one agent: macros and
saved views (``api.routes.macros``, ``api.routes.views``; ``handlers.owned`` holds the
rules of who may change one).

A new one is shared (admins only, else 403) or personal to the caller's agent (a key
of no agent has none to give it: 422). A change or a deletion runs as one command
under the caller's ``If-Match`` and answers the record with its ``ETag``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from uuid import UUID

from fastapi import Request, Response
from pydantic import BaseModel

from api.http import commands
from api.http.auth import Principal
from api.http.commands import owner_caller, parse_if_match
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


class Change(Protocol[C_contra, R_co]):
    """A handler that changes a macro or a view by a command, as the caller."""

    def __call__(self, uow: UnitOfWork, record_id: UUID, command: C_contra, caller: Caller,
                 /, *, expected_version: int | None = None) -> Awaitable[R_co]: ...


class Delete(Protocol[R_co]):
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


async def run_owned(request: Request, services: Services, principal: Principal,
                    payload: Any, expected: int | None,
                    change: Callable[[UnitOfWork, Caller], Awaitable[R]],
                    reply: Callable[[R], JsonReply]) -> Response:
    """Run ``change(uow, caller)`` as the principal's command under ``expected`` (the
    ``If-Match`` version) and answer ``reply`` of what it returns."""
    caller = owner_caller(principal)
    return await commands.run_to(request, services, principal, payload,
                                 lambda uow: change(uow, caller), reply,
                                 expected_version=expected)


async def change_owned(request: Request, services: Services, principal: Principal,
                       body: BaseModel, expected: int | None, change: Change[C, R],
                       record_id: UUID, command: C,
                       reply: Callable[[R], JsonReply]) -> Response:
    """Change ``record_id`` by ``change`` with ``command`` under ``expected`` (the
    ``If-Match`` version), and answer ``reply`` of the record after it; the members
    ``body`` sets are what an Idempotency-Key is held to."""
    return await run_owned(
        request, services, principal, body.model_dump(mode="json", exclude_unset=True),
        expected, lambda uow, caller: change(uow, record_id, command, caller,
                                             expected_version=expected), reply)


async def delete_owned(request: Request, services: Services, principal: Principal,
                       if_match: str | None, delete: Delete[R], record_id: UUID,
                       reply: Callable[[R], JsonReply]) -> Response:
    """Delete ``record_id`` by ``delete`` under the ``If-Match`` version, now, and answer
    ``reply`` of the record as it was."""
    expected = parse_if_match(if_match)
    at = services.clock.now()
    return await run_owned(
        request, services, principal, None, expected,
        lambda uow, caller: delete(uow, record_id, caller, at, expected_version=expected), reply)


__all__ = ["Change", "Delete", "change_owned", "delete_owned", "new_owner", "run_owned"]
