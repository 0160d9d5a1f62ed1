"""``/v1/groups``: teams of agents that tickets are routed to (``handlers.groups``
keeps the rules).

Admins create and change groups; agents, admins and auditors read them. Commands take
``Idempotency-Key``; a PATCH takes ``If-Match`` (the group's ETag). A group's past is
in the audit endpoints (``/v1/groups/{id}/history`` and ``/as-of``).
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import DEFAULT_LIMIT, MAX_LIMIT, tenant_list_page
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.groups import GroupChangedOut, GroupIn, GroupOut, GroupPage, GroupPatch
from api.schemas.tickets import etag
from domain.group import ChangeGroup, CreateGroup, Group
from domain.ids import AgentId, GroupId
from eventstore.store import UnitOfWork
from handlers import groups as group_handlers
from projections.groups import list_groups
from projections.views import group_document

router = APIRouter(prefix="/v1/groups", tags=["groups"], route_class=StrictRoute)

def _reply(group: Group, status: int = 200, **extra: Any) -> JsonReply:
    headers = {"ETag": etag(group.version)}
    if status == 201:
        headers["Location"] = f"/v1/groups/{group.id}"
    return JsonReply(status, group_document(group) | extra, headers)


@router.get("", response_model=GroupPage, responses=errors(), summary="List the groups")
async def list_(
    principal: Authorized,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Response:
    """Oldest first; pass ``next_cursor`` back as ``cursor``."""

    async def read(s: UnitOfWork, after: Any, limit: int) -> list[dict[str, Any]]:
        return [group_document(g) for g in await list_groups(s.conn, s.tenant_id, after, limit)]

    page, nxt = await tenant_list_page(services.cursors, services.store, principal.tenant_id,
                                       "groups", read, limit, cursor)
    return JsonReply(200, {"data": page, "next_cursor": nxt}).response()


@router.post("", response_model=GroupOut, status_code=201, summary="Create a group",
             responses=errors(409, 413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create(body: GroupIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    command = CreateGroup(group_id=GroupId(uuid.uuid4()), name=body.name,
                          members=tuple(AgentId(m) for m in body.members),
                          at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        return _reply(await group_handlers.create_group(uow, command), 201)

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work)


@router.get("/{group_id}", response_model=GroupOut, responses=errors(404)
                                                              | sends(200, required=(ETAG,)),
            summary="One group; `ETag`")
async def get_one(group_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    async with services.store.session(principal.tenant_id, principal.actor, readonly=True) as s:
        group = await group_handlers.get_group(s, group_id)
    if group is None:
        raise Problem(404, "not_found", f"no group {group_id}")
    return _reply(group).response()


@router.patch("/{group_id}", response_model=GroupChangedOut,
              responses=errors(404, 409, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Rename a group or replace its members")
async def patch(group_id: UUID, body: GroupPatch, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None) -> Response:
    """Removing an agent leaves the group's tickets they hold assigned to them;
    ``still_assigned`` says which."""
    given = body.model_dump(mode="json", exclude_unset=True)
    expected = parse_if_match(if_match)
    command = ChangeGroup(
        name=body.name,
        members=None if body.members is None else tuple(AgentId(m) for m in body.members),
        at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        change = await group_handlers.change_group(uow, group_id, command,
                                                   expected_version=expected)
        return _reply(change.group, still_assigned=change.still_assigned)

    return await commands.run(request, services, principal, given, work,
                              expected_version=expected)
