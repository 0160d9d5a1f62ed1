"""Ticket routes: open, list, get, and the commands that change a ticket."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Query, Request, Response
from pydantic import BeforeValidator, StringConstraints

from api.http import commands
from api.http.auth import Principal
from api.http.commands import agent_actor, parse_if_match
from api.http.deps import Authorized, ServicesDep
from api.http.headers import IfMatch
from api.http.idempotency import JsonReply
from api.http.pagination import DEFAULT_LIMIT, MAX_LIMIT, paginate, scope_of
from api.http.params import ANY_OF, IsoDateTime
from api.http.problem_docs import COMMAND_ERRORS, errors
from api.http.problems import Problem
from api.http.routing import StrictRoute
from api.schemas.tickets import (
    AssigneeIn,
    OpenTicketIn,
    PriorityIn,
    StateIn,
    TagsIn,
    TicketOut,
    TicketPage,
    etag,
    ticket_view,
)
from domain.commands import Assign, ChangePriority, ChangeState, ChangeTags, Command, OpenTicket
from domain.ids import AgentId, TicketId
from domain.validation import TAG_PATTERN
from domain.values import Actor, ActorKind, Priority, Requester, Source, TicketState
from eventstore.store import Session
from handlers.tickets import CommandResult, run_command
from projections.reads import TicketFilters, get_ticket, list_tickets
from projections.search import (
    MAX_QUERY_LENGTH,
    check_query,
    text_search_config,
)

router = APIRouter(prefix="/v1/tickets", tags=["tickets"], route_class=StrictRoute)


def _as_written(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


Tag = Annotated[str, StringConstraints(pattern=TAG_PATTERN), BeforeValidator(_as_written)]
"""A tag as commands store it: a lower-case slug (``AUTH`` finds what ``auth`` does)."""


def ticket_reply(result: CommandResult, status: int = 200) -> JsonReply:
    """Answer a command with the ticket and its ETag (and Location when created)."""
    t = result.ticket
    headers = {"ETag": etag(t.version)}
    if status == 201:
        headers["Location"] = f"/v1/tickets/{t.id}"
    return JsonReply(status, ticket_view(t), headers)


async def _command(request: Request, services: ServicesDep, principal: Principal,
                   ticket_id: UUID, payload: Any, command: Command,
                   if_match: str | None) -> Response:
    expected = parse_if_match(if_match)

    async def work(uow: Session) -> JsonReply:
        return ticket_reply(await run_command(uow, ticket_id, command,
                                              expected_version=expected))

    return await commands.run(request, services, principal, payload, work,
                              expected_version=expected)


@router.post("", status_code=201, response_model=TicketOut, responses=errors(409, 413, 415),
             summary="Open a ticket")
async def open_ticket(
    body: OpenTicketIn, request: Request, services: ServicesDep, principal: Authorized,
) -> Response:
    ticket_id = TicketId(uuid.uuid4())
    requester = Requester(email=body.requester.email, name=body.requester.name)
    # An intake key opens the ticket on the customer's behalf.
    actor = (Actor(kind=ActorKind.CUSTOMER, id=requester.email) if principal.role == "intake"
             else agent_actor(principal))

    command = OpenTicket(ticket_id=ticket_id, subject=body.subject, body=body.body,
                         requester=requester, priority=body.priority, source=body.source,
                         tags=tuple(body.tags), actor=actor, at=services.clock.now())

    async def work(uow: Session) -> JsonReply:
        return ticket_reply(await run_command(uow, ticket_id, command), 201)

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work)


@router.get("", response_model=TicketPage, responses=errors(), summary="List tickets")
async def list_(
    services: ServicesDep,
    principal: Authorized,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    state: Annotated[list[TicketState] | None, Query(description=ANY_OF)] = None,
    priority: Annotated[list[Priority] | None, Query(description=ANY_OF)] = None,
    source: Annotated[list[Source] | None, Query(description=ANY_OF)] = None,
    assignee: Annotated[str | None, Query(
        pattern=r"^(none|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$",
        description="An agent id, or `none` for unassigned tickets.")] = None,
    tag: Annotated[list[Tag] | None, Query(description=ANY_OF)] = None,
    created_after: IsoDateTime | None = None,
    created_before: IsoDateTime | None = None,
    updated_after: Annotated[IsoDateTime | None, Query(
        description="changed at or after this instant: a convenience for simple pollers; "
                    "`GET /v1/changes` is the exact way to follow changes")] = None,
    q: Annotated[str | None, Query(max_length=MAX_QUERY_LENGTH,
                                   description="a search query, as `GET /v1/search` "
                                               "takes it; the list keeps its order")] = None,
) -> Response:
    """Newest first; pass ``next_cursor`` back as ``cursor`` with the same filters."""
    filters = TicketFilters(
        states=_values(state), priorities=_values(priority), sources=_values(source),
        assignee=UUID(assignee) if assignee and assignee != "none" else None,
        unassigned=assignee == "none", tags=_values(tag),
        created_after=_utc(created_after), created_before=_utc(created_before),
        updated_after=_utc(updated_after), q=q,
    )
    scope = scope_of(principal.tenant_id, "tickets", {
        "state": filters.states, "priority": filters.priorities,
        "source": filters.sources, "assignee": assignee, "tag": filters.tags,
        "created_after": filters.created_after and filters.created_after.isoformat(),
        "created_before": filters.created_before and filters.created_before.isoformat(),
        "updated_after": filters.updated_after and filters.updated_after.isoformat(),
        "q": q,
    })
    codec = services.cursors
    after = codec.decode(scope, cursor) if cursor is not None else None
    async with services.store.session(principal.tenant_id, readonly=True) as session:
        if q is not None:
            config = await text_search_config(session.conn, principal.tenant_id)
            await check_query(session.conn, q, config)
        rows = await list_tickets(session.conn, principal.tenant_id, filters, after, limit + 1)
    page, next_cursor = paginate(codec, scope, rows, limit, lambda t: (t.created_at, t.id))
    # The stored documents go out as they are: no decoding, validation or re-encoding.
    return JsonReply(200, {"data": [orjson.Fragment(t.view) for t in page],
                           "next_cursor": next_cursor}).response()


@router.get("/{ticket_id}", response_model=TicketOut, responses=errors(404),
            summary="One ticket with its SLA clocks")
async def get_one(ticket_id: UUID, services: ServicesDep, principal: Authorized) -> Response:
    async with services.store.session(principal.tenant_id, readonly=True) as session:
        ticket = await get_ticket(session.conn, principal.tenant_id, ticket_id)
    if ticket is None:
        raise Problem(404, "not_found", "the ticket does not exist")
    return Response(ticket.view, media_type="application/json",
                    headers={"ETag": etag(ticket.version)})


@router.post("/{ticket_id}/assignee", response_model=TicketOut, responses=COMMAND_ERRORS,
             summary="Assign or unassign")
async def assign(ticket_id: UUID, body: AssigneeIn, request: Request, services: ServicesDep,
                 principal: Authorized, if_match: IfMatch = None) -> Response:
    agent = AgentId(body.agent_id) if body.agent_id is not None else None
    command = Assign(agent_id=agent, actor=agent_actor(principal), at=services.clock.now())
    return await _command(request, services, principal, ticket_id,
                          body.model_dump(mode="json"), command, if_match)


@router.post("/{ticket_id}/priority", response_model=TicketOut, responses=COMMAND_ERRORS,
             summary="Change the priority")
async def set_priority(ticket_id: UUID, body: PriorityIn, request: Request,
                       services: ServicesDep, principal: Authorized,
                       if_match: IfMatch = None) -> Response:
    command = ChangePriority(priority=body.priority, actor=agent_actor(principal),
                             at=services.clock.now())
    return await _command(request, services, principal, ticket_id,
                          body.model_dump(mode="json"), command, if_match)


@router.post("/{ticket_id}/state", response_model=TicketOut, responses=COMMAND_ERRORS,
             summary="Move the ticket to another state")
async def set_state(ticket_id: UUID, body: StateIn, request: Request, services: ServicesDep,
                    principal: Authorized, if_match: IfMatch = None) -> Response:
    command = ChangeState(to=body.state, reason=body.reason, actor=agent_actor(principal),
                          at=services.clock.now())
    return await _command(request, services, principal, ticket_id,
                          body.model_dump(mode="json"), command, if_match)


@router.post("/{ticket_id}/tags", response_model=TicketOut, responses=COMMAND_ERRORS,
             summary="Add and remove tags")
async def change_tags(ticket_id: UUID, body: TagsIn, request: Request, services: ServicesDep,
                      principal: Authorized, if_match: IfMatch = None) -> Response:
    command = ChangeTags(add=tuple(body.add), remove=tuple(body.remove),
                         actor=agent_actor(principal), at=services.clock.now())
    return await _command(request, services, principal, ticket_id,
                          body.model_dump(mode="json"), command, if_match)


def _values(values: Sequence[str] | None) -> tuple[str, ...]:
    """A list parameter's distinct values in a canonical order (none: no filter)."""
    return tuple(sorted({str(v) for v in values})) if values else ()


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
