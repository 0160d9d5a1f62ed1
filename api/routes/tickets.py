"""Ticket routes: open, list, get, and the commands that change a ticket."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response
from pydantic import AfterValidator, BaseModel, BeforeValidator, StringConstraints, WithJsonSchema

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.auth import Principal
from api.http.commands import agent_actor, parse_if_match
from api.http.deps import Authorized, ServicesDep
from api.http.field_params import DESCRIPTION as FIELD_FILTERS_DOC
from api.http.field_params import PREFIX as FIELD_PREFIX
from api.http.field_params import field_filters
from api.http.headers import IfMatch
from api.http.pagination import DEFAULT_LIMIT, PageAsked, PageCursor, PageLimit, scope_of
from api.http.params import (
    ANY_OF,
    AgentOrMe,
    GroupOrMine,
    IdOrNone,
    IsoAwareDateTime,
    IsoDateTime,
)
from api.http.problem_docs import errors
from api.http.problems import Problem, invalid_parameter
from api.http.reply import JsonReply
from api.http.routing import QUERY_FAMILIES, StrictRoute
from api.http.ticket_answers import COMMAND_ANSWERS, ticket_reply
from api.http.ticket_pages import AsOf, ticket_page
from api.schemas.tickets import (
    AssigneeIn,
    FieldsIn,
    OpenTicketIn,
    PriorityIn,
    StateIn,
    TagsIn,
    TicketOut,
    TicketPage,
    etag,
)
from domain.ids import AgentId, GroupId, TicketId
from domain.ticket.commands import (
    Assign,
    ChangePriority,
    ChangeState,
    ChangeTags,
    Command,
    OpenTicket,
)
from domain.validation import TAG_PATTERN
from domain.values import Actor, ActorKind, Priority, Requester, Source, TicketState
from eventstore.store import UnitOfWork
from handlers.requesters import requester_of_contact
from handlers.ticket_fields import SetFields, set_fields
from handlers.tickets import run_command
from projections.fields import load_catalog
from projections.groups import unknown_groups
from projections.people import load_contact, load_organization
from projections.reads import TicketFilters, get_ticket
from projections.search import MAX_QUERY_LENGTH, check_query, text_search_config

router = APIRouter(prefix="/v1/tickets", tags=["tickets"], route_class=StrictRoute)


def _as_written(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


Tag = Annotated[str, StringConstraints(pattern=TAG_PATTERN), BeforeValidator(_as_written)]
"""A tag as commands store it: a lower-case slug (``AUTH`` finds what ``auth`` does)."""


async def _command(request: Request, services: ServicesDep, principal: Principal,
                   ticket_id: UUID, body: BaseModel, command: Command, if_match: str | None,
                   *, partial: bool = False) -> Response:
    """Run ``command``; ``body`` (only the members it sets, when ``partial``) is what an
    Idempotency-Key is held to."""
    expected = parse_if_match(if_match)
    payload = body.model_dump(mode="json", exclude_unset=partial)

    async def work(uow: UnitOfWork) -> JsonReply:
        return ticket_reply(await run_command(uow, ticket_id, command,
                                              expected_version=expected))

    return await commands.run(request, services, principal, payload, work,
                              expected_version=expected, deferring=True)


@router.post("", status_code=201, response_model=TicketOut,
             responses=errors(404, 409, 410, 413, 415) | sends(201, required=(ETAG, LOCATION)),
             summary="Open a ticket")
async def open_ticket(
    body: OpenTicketIn, request: Request, services: ServicesDep, principal: Authorized,
) -> Response:
    """The requester is resolved to a contact in the same transaction: an e-mail no
    contact has creates one, a known one links to it; ``{"contact_id": ...}`` names
    the contact (422 ``unknown_contact`` when the tenant has none such)."""
    ticket_id = TicketId(uuid.uuid4())
    at = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        if body.requester.contact_id is not None:
            requester = await requester_of_contact(uow, body.requester.contact_id)
        else:
            assert body.requester.email is not None
            requester = Requester(email=body.requester.email, name=body.requester.name)
        # An intake key opens the ticket on the customer's behalf.
        actor = (Actor(kind=ActorKind.CUSTOMER, id=requester.email)
                 if principal.role == "intake" else agent_actor(principal))
        command = OpenTicket(ticket_id=ticket_id, subject=body.subject, body=body.body,
                             requester=requester, priority=body.priority, source=body.source,
                             tags=tuple(body.tags), actor=actor, at=at,
                             group_id=None if body.group_id is None else GroupId(body.group_id),
                             fields=body.fields)
        return ticket_reply(await run_command(uow, ticket_id, command,
                                              files=body.attachments), 201)

    # Without a group, field values or files the recorded request is what it was before
    # tickets had them, so a retry across an upgrade still matches its Idempotency-Key.
    unset = ({"group_id"} if body.group_id is None else set()) | (
        set() if body.fields else {"fields"}) | (set() if body.attachments else {"attachments"})
    payload = body.model_dump(mode="json", exclude=unset)
    return await commands.run(request, services, principal, payload, work, deferring=True)


async def _known(session: UnitOfWork, filters: TicketFilters) -> None:  # a Guard
    """A group, contact or organization the tenant does not have is 404, in a filter
    too; a query the tenant's text-search configuration cannot parse is 400."""
    tenant = session.tenant_id
    if filters.q is not None:
        config = await text_search_config(session.conn, tenant)
        await check_query(session.conn, filters.q, config)
    if filters.group_id is not None and await unknown_groups(
            session.conn, tenant, [filters.group_id]):
        raise Problem(404, "not_found", f"no group {filters.group_id}")
    if filters.requester_id is not None and await load_contact(
            session.conn, tenant, filters.requester_id) is None:
        raise Problem(404, "not_found", f"no contact {filters.requester_id}")
    if filters.organization_id is not None and await load_organization(
            session.conn, tenant, filters.organization_id) is None:
        raise Problem(404, "not_found", f"no organization {filters.organization_id}")


ACTIVE_STATES = tuple(s.value for s in TicketState
                      if s not in (TicketState.SOLVED, TicketState.CLOSED))
"""What ``state=active`` stands for: every state but solved and closed."""


def _state_or_active(value: str) -> str:
    if value != "active" and value not in {s.value for s in TicketState}:
        raise ValueError("expected one of " + ", ".join(
            f"`{s}`" for s in [*TicketState, "active"]))
    return value


StateOrActive = Annotated[str, AfterValidator(_state_or_active), WithJsonSchema(
    {"type": "string", "enum": [*(s.value for s in TicketState), "active"]})]

SORT_DOC = ("`created` (the default): newest first. `sla_due`: the next deadline of a "
            "running SLA clock, soonest first (overdue ones first of all), then the tickets "
            "with no running clock; ties by ticket id. "
            "Each order has its own cursors: pass `next_cursor` back with the same `sort`.")


def _me(principal: Principal, name: str, word: str) -> UUID:
    """The calling agent, for ``assignee=me`` and ``group_id=mine``."""
    if principal.agent_id is None:
        raise invalid_parameter(f"{name}={word} needs a caller who is an agent: this API key "
                                "acts for no agent, so pass the agent's id instead", name)
    return principal.agent_id


@router.get("", response_model=TicketPage, responses=errors(404), summary="List tickets",
            description="Newest first, or by SLA due time with `sort=sla_due`; pass "
                        "``next_cursor`` back as ``cursor`` with the same filters and "
                        "sort. " + FIELD_FILTERS_DOC,
            openapi_extra={QUERY_FAMILIES: [FIELD_PREFIX]})
async def list_(
    request: Request,
    services: ServicesDep,
    principal: Authorized,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
    sort: Annotated[Literal["created", "sla_due"], Query(description=SORT_DOC)] = "created",
    state: Annotated[list[StateOrActive] | None, Query(
        description=ANY_OF + " `active` stands for every state but `solved` and "
                             "`closed`.")] = None,
    priority: Annotated[list[Priority] | None, Query(description=ANY_OF)] = None,
    source: Annotated[list[Source] | None, Query(description=ANY_OF)] = None,
    assignee: Annotated[AgentOrMe | None, Query(
        description="An agent id, `me` for the calling agent's tickets (a key or "
                    "session that acts as an agent), or `none` for unassigned "
                    "tickets.")] = None,
    tag: Annotated[list[Tag] | None, Query(description=ANY_OF)] = None,
    group_id: Annotated[GroupOrMine | None, Query(
        description="A group id (404 if the tenant has no such group), `mine` for "
                    "tickets in any group the calling agent is a member of, or `none` "
                    "for tickets in no group.")] = None,
    created_after: IsoDateTime | None = None,
    created_before: IsoDateTime | None = None,
    requester_id: Annotated[IdOrNone | None, Query(
        description="A contact id, or `none` for tickets not linked to a contact.")] = None,
    organization_id: Annotated[IdOrNone | None, Query(
        description="An organization id (its contacts' tickets), or `none` for tickets "
                    "of contacts in no organization.")] = None,
    updated_after: Annotated[IsoDateTime | None, Query(
        description="changed at or after this instant: a convenience for simple pollers; "
                    "`GET /v1/changes` is the exact way to follow changes")] = None,
    q: Annotated[str | None, Query(max_length=MAX_QUERY_LENGTH,
                                   description="a search query, as `GET /v1/search` "
                                               "takes it; the list keeps its order")] = None,
    as_of_seq: Annotated[int | None, Query(ge=0, le=2**63 - 1, description=AS_OF_DOC)] = None,
    as_of: Annotated[IsoAwareDateTime | None, Query(
        description="the desk as it stood at this instant: as `as_of_seq` at the last "
                    "event recorded by then")] = None,
) -> Response:
    """Newest first, or by SLA due time; pass ``next_cursor`` back as ``cursor`` with
    the same filters and sort. A ``requester_id`` or ``organization_id`` the tenant
    does not have is 404."""
    moment = _as_of(as_of_seq, as_of, sort, q)
    states = _values(state)
    if "active" in states:
        states = tuple(sorted((set(states) - {"active"}) | set(ACTIVE_STATES)))
    filters = TicketFilters(
        states=states, priorities=_values(priority), sources=_values(source),
        assignee=(_me(principal, "assignee", "me") if assignee == "me"
                  else _uuid(assignee)),
        unassigned=assignee == "none", tags=_values(tag),
        group_id=None if group_id == "mine" else _uuid(group_id),
        no_group=group_id == "none",
        member=_me(principal, "group_id", "mine") if group_id == "mine" else None,
        created_after=_utc(created_after), created_before=_utc(created_before),
        requester_id=_uuid(requester_id), no_requester=requester_id == "none",
        organization_id=_uuid(organization_id), no_organization=organization_id == "none",
        updated_after=_utc(updated_after), q=q,
    )
    if any(k.startswith(FIELD_PREFIX) for k in request.query_params):
        async with commands.reading(services, principal) as session:
            catalog = await load_catalog(session.conn, principal.tenant_id)
        filters = replace(filters, fields=field_filters(request.query_params, catalog))
    # Filters are named only when given, so cursors handed out before one existed hold.
    # ``me`` and ``mine`` are named as the agent they stand for: one agent's cursor is
    # not another's.
    given = {"group_id": group_id, "requester_id": requester_id,
             "organization_id": organization_id}
    scope = scope_of(principal.tenant_id, "tickets", {
        "state": filters.states, "priority": filters.priorities,
        "source": filters.sources,
        "assignee": str(filters.assignee) if assignee == "me" else assignee,
        "tag": filters.tags,
        "created_after": filters.created_after and filters.created_after.isoformat(),
        "created_before": filters.created_before and filters.created_before.isoformat(),
        **{name: value for name, value in given.items() if value is not None},
        **({"member": str(filters.member)} if filters.member is not None else {}),
        **({"fields": [[f.key, f.op, f.value] for f in filters.fields]}
           if filters.fields else {}),
        **({"updated_after": filters.updated_after.isoformat()}
           if filters.updated_after is not None else {}),
        **({"q": q} if q is not None else {}),
        **({"sort": sort} if sort != "created" else {}),
        **({"as_of_seq": as_of_seq} if as_of_seq is not None else {}),
        **({"as_of": moment.at.isoformat()} if moment and moment.at else {}),
    })
    return await ticket_page(services, principal.tenant_id, principal.actor, scope, filters,
                             PageAsked(limit, cursor), lambda session: _known(session, filters),
                             order=sort, as_of=moment)


AS_OF_DOC = ("The desk as it stood just after this seq of the tenant's events: each "
             "ticket as the API showed it then, under the same filters (an organization "
             "is the contact's as it was then; `group_id=mine` is the caller's groups "
             "now), newest first; the answer's `as_of_seq` names the seq. A seq ahead "
             "of the tenant's head is 400; `sort=sla_due` and `q` are not taken with it.")


def _as_of(seq: int | None, at: datetime | None, sort: str, q: str | None) -> AsOf | None:
    """The moment an as-of list describes (None: now); what it does not take is 400."""
    if seq is None and at is None:
        return None
    if seq is not None and at is not None:
        raise invalid_parameter("give as_of_seq or as_of, not both", "as_of_seq", "as_of")
    name = "as_of_seq" if seq is not None else "as_of"
    if sort != "created":
        raise invalid_parameter(f"{name} lists newest first only: leave out sort",
                                name, "sort")
    if q is not None:
        raise invalid_parameter(f"{name} does not search: the search index holds the "
                                "current text only", name, "q")
    return AsOf(seq=seq, at=_utc(at))


@router.get("/{ticket_id}", response_model=TicketOut, responses=errors(404)
                                                                | sends(200, required=(ETAG,)),
            summary="One ticket with its SLA clocks")
async def get_one(ticket_id: UUID, services: ServicesDep, principal: Authorized) -> Response:
    async with commands.reading(services, principal) as session:
        ticket = await get_ticket(session.conn, principal.tenant_id, ticket_id)
    if ticket is None:
        raise Problem(404, "not_found", "the ticket does not exist")
    return Response(ticket.view, media_type="application/json",
                    headers={"ETag": etag(ticket.version)})


@router.post("/{ticket_id}/assignee", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Assign to an agent, a group or both, or unassign")
async def assign(ticket_id: UUID, body: AssigneeIn, request: Request, services: ServicesDep,
                 principal: Authorized, if_match: IfMatch = None) -> Response:
    given = body.model_fields_set
    command = Assign(
        agent_id=None if body.agent_id is None else AgentId(body.agent_id),
        set_agent="agent_id" in given,
        group_id=None if body.group_id is None else GroupId(body.group_id),
        set_group="group_id" in given,
        actor=agent_actor(principal), at=services.clock.now())
    return await _command(request, services, principal, ticket_id, body, command, if_match,
                          partial=True)


@router.post("/{ticket_id}/priority", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Change the priority")
async def set_priority(ticket_id: UUID, body: PriorityIn, request: Request,
                       services: ServicesDep, principal: Authorized,
                       if_match: IfMatch = None) -> Response:
    command = ChangePriority(priority=body.priority, actor=agent_actor(principal),
                             at=services.clock.now())
    return await _command(request, services, principal, ticket_id, body, command, if_match)


@router.post("/{ticket_id}/state", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Move the ticket to another state")
async def set_state(ticket_id: UUID, body: StateIn, request: Request, services: ServicesDep,
                    principal: Authorized, if_match: IfMatch = None) -> Response:
    command = ChangeState(to=body.state, reason=body.reason, actor=agent_actor(principal),
                          at=services.clock.now())
    return await _command(request, services, principal, ticket_id, body, command, if_match)


@router.post("/{ticket_id}/tags", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Add and remove tags")
async def change_tags(ticket_id: UUID, body: TagsIn, request: Request, services: ServicesDep,
                      principal: Authorized, if_match: IfMatch = None) -> Response:
    command = ChangeTags(add=tuple(body.add), remove=tuple(body.remove),
                         actor=agent_actor(principal), at=services.clock.now())
    return await _command(request, services, principal, ticket_id, body, command, if_match)


@router.post("/{ticket_id}/fields", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Set or clear ticket field values")
async def change_fields(ticket_id: UUID, body: FieldsIn, request: Request,
                        services: ServicesDep, principal: Authorized,
                        if_match: IfMatch = None) -> Response:
    # An intake key sets values for the customer (only fields open to intake).
    actor = None if principal.role == "intake" else agent_actor(principal)
    command = SetFields(ticket_id=ticket_id, values=body.fields, at=services.clock.now(),
                        actor=actor)
    expected = parse_if_match(if_match)

    async def work(uow: UnitOfWork) -> JsonReply:
        return ticket_reply(await set_fields(uow, command, expected_version=expected))

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work, expected_version=expected)


def _values(values: Sequence[str] | None) -> tuple[str, ...]:
    """A list parameter's distinct values in a canonical order (none: no filter)."""
    return tuple(sorted({str(v) for v in values})) if values else ()


def _uuid(value: str | None) -> UUID | None:
    return UUID(value) if value is not None and value != "none" else None


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
