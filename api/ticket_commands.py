"""Running a ticket command for an HTTP request: idempotency, If-Match, retries.

One request is one transaction: the Idempotency-Key lock and record, the command's
read models, timers and events all commit together. Without ``If-Match`` a version
conflict is retried on fresh state (each attempt in a savepoint, so the key's lock is
kept); with it, a mismatch is 412.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from fastapi import Request, Response

from api.auth import Principal
from api.bootstrap import Services
from api.idempotency import JsonReply, idempotent
from api.problems import Problem
from domain.commands import Command
from domain.values import Actor, ActorKind
from eventstore.errors import ConcurrencyError
from eventstore.store import Session
from scheduler.commands import CommandResult, execute

MAX_ATTEMPTS = 5
_ETAG = re.compile(r'^(?:W/)?"(\d{1,9})"$')

BuildCommand = Callable[[Session, datetime], Awaitable[Command]]
MakeReply = Callable[[CommandResult], JsonReply]


def parse_if_match(value: str | None) -> int | None:
    """The version an ``If-Match`` header asks for (None: no header, or ``*``)."""
    if value is None or value.strip() == "*":
        return None
    match = _ETAG.match(value.strip())
    if match is None:
        raise Problem(400, "invalid_if_match", 'If-Match must be an ETag such as "3"')
    return int(match.group(1))


def agent_actor(principal: Principal) -> Actor:
    """The domain actor of a non-intake key: its agent, or the key itself."""
    who = principal.agent_id if principal.agent_id is not None else principal.key_id
    return Actor(kind=ActorKind.AGENT, id=str(who))


async def run_command(
    request: Request,
    services: Services,
    principal: Principal,
    ticket_id: UUID,
    payload: Any,
    build: BuildCommand,
    reply: MakeReply,
    *,
    if_match: str | None = None,
) -> Response:
    """Decide and commit ``build``'s command on ``ticket_id``; answer ``reply(result)``."""
    expected = parse_if_match(if_match)
    async with services.store.session(principal.tenant_id, principal.actor) as session:

        async def work() -> JsonReply:
            result = await _with_retries(session, services, ticket_id, build, expected)
            return reply(result)

        return await idempotent(request, principal, session, payload, work)


async def _with_retries(session: Session, services: Services, ticket_id: UUID,
                        build: BuildCommand, expected: int | None) -> CommandResult:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            async with session.conn.transaction():  # a savepoint: a lost race undoes only this
                command = await build(session, services.clock.now())
                return await execute(session, ticket_id, command, expected_version=expected)
        except ConcurrencyError as exc:
            if expected is not None:
                raise Problem(412, "precondition_failed",
                              f"If-Match asked for version {expected}; the ticket is at "
                              f"{exc.actual}", current_version=exc.actual) from exc
            if attempt == MAX_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
