"""``/v1/groups``: teams of agents that tickets are routed to (``handlers.groups``
keeps the rules).

Admins create and change groups; agents, admins and auditors read them. Commands take
``Idempotency-Key``; a PATCH takes ``If-Match`` (the group's ETag). A group's past is
in the audit endpoints (``/v1/groups/{id}/history`` and ``/as-of``).
"""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import tenant_list_document
from api.http.problem_docs import errors
from api.http.reply import JsonReply, versioned
from api.http.routing import StrictRoute
from api.schemas.groups import GroupChangedOut, GroupIn, GroupOut, GroupPage, GroupPatch
from domain.group import ChangeGroup, CreateGroup, Group
from domain.ids import AgentId, GroupId
from eventstore.store import UnitOfWork
from handlers import groups as group_handlers
from projections.groups import list_groups
from projections.views import group_document

router = APIRouter(prefix="/v1/groups", tags=["groups"], route_class=StrictRoute)

def _reply(group: Group, **extra: Any) -> JsonReply:
    return versioned(200, group_document(group) | extra, group.version)


def _created(group: Group) -> JsonReply:
    return versioned(201, group_document(group), group.version, f"/v1/groups/{group.id}")


@router.get("", response_model=GroupPage, responses=errors(), summary="List the groups")
async def list_(principal: Authorized, services: ServicesDep, paging: Paging) -> Response:
    """Oldest first; pass ``next_cursor`` back as ``cursor``."""
    return JsonReply(200, await tenant_list_document(
        services.cursors, services.store, principal.tenant_id, "groups", list_groups,
        group_document, paging)).response()


@router.post("", response_model=GroupOut, status_code=201, summary="Create a group",
             responses=errors(409, 413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create(body: GroupIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    command = CreateGroup(group_id=GroupId(uuid.uuid4()), name=body.name,
                          members=tuple(AgentId(m) for m in body.members),
                          at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: group_handlers.create_group(uow, command), _created)


@router.get("/{group_id}", response_model=GroupOut, responses=errors(404)
                                                              | sends(200, required=(ETAG,)),
            summary="One group; `ETag`")
async def get_one(group_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    return await commands.read_one(services, principal, group_handlers.get_group, group_id,
                                   f"no group {group_id}", _reply)


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
