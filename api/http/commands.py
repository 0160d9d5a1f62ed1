"""Running a command for an HTTP request: one unit of work, Idempotency-Key, If-Match.

One request is one transaction: the Idempotency-Key lock and record and everything
the handler does commit together (``api.http.idempotency``). ``If-Match`` names the
version a command requires; a handler's ``ConcurrencyError`` under it is 412.

A versioned record of the tenant's setup (a rule, a ticket field, an SLA calendar or
policy; a macro or a saved view through ``api.http.owned``) is read by ``read_one``,
changed by ``change_one`` and deleted by ``delete_one``: a change or a deletion is one
command under the caller's ``If-Match``, answered with the record and its ``ETag``
(after the change, or as it was before the deletion). A group is read the same way;
its change answers more than the group (the tickets still assigned to removed agents).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fastapi import Request, Response
from pydantic import BaseModel

from api.http.auth import Principal
from api.http.idempotency import idempotent
from api.http.pagination import PageAsked, Position, record_position, tenant_page_document
from api.http.problems import Problem
from api.http.reply import JsonReply, present
from domain.values import Actor, ActorKind, Role
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from handlers.owned import Caller

if TYPE_CHECKING:
    from api.root import Services

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
K = TypeVar("K")
K_contra = TypeVar("K_contra", contravariant=True)
C = TypeVar("C")
C_contra = TypeVar("C_contra", contravariant=True)
_ETAG = re.compile(r'^(?:W/)?"(\d{1,9})"$')


def parse_if_match(value: str | None) -> int | None:
    """The version an ``If-Match`` header asks for (None: no header, or ``*``)."""
    if value is None or value.strip() == "*":
        return None
    match = _ETAG.match(value.strip())
    if match is None:
        raise Problem(400, "invalid_if_match", 'If-Match must be an ETag such as "3"')
    return int(match.group(1))


def owner_caller(principal: Principal) -> Caller:
    """Who changes a macro or a view (``handlers.owned``): the principal's agent, and
    whether it is an admin."""
    return Caller(principal.agent_id, principal.role == Role.ADMIN.value)


def agent_actor(principal: Principal) -> Actor:
    """The domain actor of a non-intake key: its agent, or the key itself."""
    who = principal.agent_id if principal.agent_id is not None else principal.key_id
    return Actor(kind=ActorKind.AGENT, id=str(who))


def precondition_failed(expected: int, exc: ConcurrencyError) -> Problem:
    return Problem(412, "precondition_failed",
                   f"If-Match asked for version {expected}; the ticket is at {exc.actual}",
                   current_version=exc.actual)


def reading(services: Services, principal: Principal
            ) -> AbstractAsyncContextManager[UnitOfWork]:
    """A read-only unit of work of the principal's tenant and actor: what a route that
    only reads opens."""
    return services.store.unit_of_work(principal.tenant_id, principal.actor, readonly=True)


async def read_one(services: Services, principal: Principal,
                   load: Callable[[UnitOfWork, K], Awaitable[R | None]], record_id: K,
                   missing: str, reply: Callable[[R], JsonReply]) -> Response:
    """The record ``record_id`` that ``load`` reads in the principal's read-only unit of
    work, answered by ``reply``; none: 404 saying ``missing``."""
    async with reading(services, principal) as s:
        record = await load(s, record_id)
    return reply(present(record, missing)).response()


async def read_page(services: Services, principal: Principal, list_name: str,
                    read: Callable[[UnitOfWork, Position | None, int], Awaitable[Sequence[R]]],
                    document: Callable[[R], Any], asked: PageAsked, *,
                    filters: Mapping[str, str | None] | None = None) -> Response:
    """The page ``asked`` of a list the principal reads, as its tenant and actor (whom
    row-level security scopes: a portal contact, a widget session, a group-scoped
    agent), answered as ``{"data", "next_cursor"}``; ``filters`` are part of the
    cursor's scope (``tenant_list_page``)."""
    return JsonReply(200, await tenant_page_document(
        services.cursors, services.store, principal.tenant_id, list_name, read, document,
        asked, actor=principal.actor, filters=filters, position=record_position)).response()


async def run(
    request: Request,
    services: Services,
    principal: Principal,
    payload: Any,
    work: Callable[[UnitOfWork], Awaitable[JsonReply]],
    *,
    expected_version: int | None = None,
    deferring: bool = False,
) -> Response:
    """Run ``work`` in one unit of work of the principal's tenant and actor, once per
    Idempotency-Key; a version conflict under ``expected_version`` is 412.

    ``deferring`` sends the unit of work's writes in its COMMIT's message
    (``UnitOfWork.deferring``): for work that reads nothing it wrote, as a ticket
    command does."""
    async with services.store.unit_of_work(principal.tenant_id, principal.actor) as uow:
        uow.deferring = deferring

        async def attempt() -> JsonReply:
            try:
                return await work(uow)
            except ConcurrencyError as exc:
                if expected_version is None:
                    raise
                raise precondition_failed(expected_version, exc) from exc

        return await idempotent(request, principal, uow, payload, attempt,
                                server_secret=services.settings.idempotency_secret)


async def run_to(
    request: Request,
    services: Services,
    principal: Principal,
    payload: Any,
    call: Callable[[UnitOfWork], Awaitable[R]],
    reply: Callable[[R], JsonReply],
    *,
    expected_version: int | None = None,
) -> Response:
    """``run`` the command ``call`` and answer ``reply`` of what it returns: the shape of
    a route that creates, changes or deletes one record."""

    async def work(uow: UnitOfWork) -> JsonReply:
        return reply(await call(uow))

    return await run(request, services, principal, payload, work,
                     expected_version=expected_version)


class RecordChange(Protocol[K_contra, C_contra, R_co]):
    """A handler that changes the record named by a key by a command, answering it."""

    def __call__(self, uow: UnitOfWork, record_id: K_contra, command: C_contra, /, *,
                 expected_version: int | None = None) -> Awaitable[R_co]: ...


class RecordDelete(Protocol[K_contra, R_co]):
    """A handler that deletes the record named by a key at an instant, answering it as
    it was."""

    def __call__(self, uow: UnitOfWork, record_id: K_contra, at: datetime, /, *,
                 expected_version: int | None = None) -> Awaitable[R_co]: ...


async def change_one(request: Request, services: Services, principal: Principal,
                     body: BaseModel, expected: int | None, change: RecordChange[K, C, R],
                     record_id: K, command: C, reply: Callable[[R], JsonReply]) -> Response:
    """Change ``record_id`` by ``change`` with ``command`` under ``expected`` (the
    ``If-Match`` version), and answer ``reply`` of the record after it; the members
    ``body`` sets are what an Idempotency-Key is held to."""
    return await run_to(
        request, services, principal, body.model_dump(mode="json", exclude_unset=True),
        lambda uow: change(uow, record_id, command, expected_version=expected), reply,
        expected_version=expected)


async def delete_one(request: Request, services: Services, principal: Principal,
                     if_match: str | None, delete: RecordDelete[K, R], record_id: K,
                     reply: Callable[[R], JsonReply]) -> Response:
    """Delete ``record_id`` by ``delete`` under the ``If-Match`` version, now, and answer
    ``reply`` of the record as it was."""
    expected = parse_if_match(if_match)
    at = services.clock.now()
    return await run_to(
        request, services, principal, None,
        lambda uow: delete(uow, record_id, at, expected_version=expected), reply,
        expected_version=expected)


__all__ = ["RecordChange", "RecordDelete", "agent_actor", "change_one", "delete_one",
           "owner_caller", "parse_if_match", "precondition_failed", "read_one", "read_page",
           "reading", "run", "run_to"]
