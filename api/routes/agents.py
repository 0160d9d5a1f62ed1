"""``/v1/agents``: the tenant's agents (``handlers.agents`` keeps the rules).

Admins add and change agents, and invite people (``handlers.invitations``): the
invitation's token is shown once, in the answer, for the admin to pass on; the invitee
spends it at ``POST /v1/auth/invitations/accept`` to set a password. Agents may list
the tenant's agents (to pick an assignee).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from api.http import commands
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.pagination import tenant_page_document
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas import checked_by_domain, patch_fields_given, patch_schema
from domain.ids import AgentId
from domain.validation import EMAIL_PATTERN, NOT_BLANK
from domain.values import Role
from eventstore.store import UnitOfWork
from handlers import agents as agent_handlers
from handlers import invitations

_EMAIL = re.compile(EMAIL_PATTERN)
AgentRole = Literal["admin", "agent"]


def _email(value: str) -> str:
    value = value.strip()
    if len(value) > 254 or not _EMAIL.match(value):
        raise ValueError("not an e-mail address")
    return value


def _name(value: str) -> str:
    value = value.strip()
    if not 1 <= len(value) <= 200:
        raise ValueError("a name has 1 to 200 characters")
    return value


class AgentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str = Field(json_schema_extra=checked_by_domain(NOT_BLANK))
    role: AgentRole = "agent"

    _check_email = field_validator("email")(_email)
    _check_name = field_validator("name")(_name)


class AgentPatch(BaseModel):
    """Only the fields given change; null is not a value for any of them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=patch_schema())

    email: str | None = Field(None, json_schema_extra=checked_by_domain(EMAIL_PATTERN))
    name: str | None = Field(None, json_schema_extra=checked_by_domain(NOT_BLANK))
    role: AgentRole | None = None
    active: bool | None = Field(default=None, strict=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, data: Any) -> Any:
        return patch_fields_given(data, "email, name, role, active")

    @field_validator("email")
    @classmethod
    def _check_email(cls, value: str | None) -> str | None:
        return None if value is None else _email(value)

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        return None if value is None else _name(value)


class InvitationIn(AgentIn):
    """Whom to invite: the e-mail (an existing agent's lets them set a new password),
    and the name and role of the agent added when they accept."""


class InvitationOut(BaseModel):
    id: UUID
    email: str
    name: str
    role: AgentRole
    created_at: datetime
    expires_at: datetime
    token: str = Field(
        description="Spent once at `POST /v1/auth/invitations/accept`, before "
        "`expires_at`: shown only in this response (and in an Idempotency-Key replay of "
        "it, while IDEMPOTENCY_SECRET is configured).")


class AgentOut(BaseModel):
    id: UUID
    email: str
    name: str
    role: AgentRole
    active: bool
    version: int
    created_at: datetime
    updated_at: datetime


class AgentPage(BaseModel):
    data: list[AgentOut]
    next_cursor: str | None


router = APIRouter(prefix="/v1/agents", tags=["agents"], route_class=StrictRoute)


_FIELDS = tuple(AgentOut.model_fields)


def _out(row: Mapping[str, Any]) -> dict[str, Any]:
    """An agent's row as ``AgentOut`` (its fields in order; tests validate the shape)."""
    return {name: row[name] for name in _FIELDS}


@router.get("", response_model=AgentPage, responses=errors(),
            summary="List the tenant's agents")
async def list_agents(principal: Authorized, services: ServicesDep, paging: Paging) -> Any:
    return JsonReply(200, await tenant_page_document(
        services.cursors, services.store, principal.tenant_id, "agents",
        agent_handlers.list_agents, _out, paging)).response()


@router.post("", response_model=AgentOut, status_code=201, summary="Add an agent",
             responses=errors(409, 413, 415))
async def add_agent(
    body: AgentIn, request: Request, principal: Authorized, services: ServicesDep
) -> Response:
    command = agent_handlers.AddAgent(email=body.email, name=body.name, role=Role(body.role),
                                      at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(201, _out(await agent_handlers.add_agent(uow, command)))

    return await commands.run(request, services, principal, body.model_dump(mode="json"), work)


@router.post("/invitations", response_model=InvitationOut, status_code=201,
             summary="Invite a person to sign in (the token is shown only in this response)",
             responses=errors(409, 413, 415))
async def invite(
    body: InvitationIn, request: Request, principal: Authorized, services: ServicesDep
) -> Response:
    command = invitations.InviteAgent(
        email=body.email, name=body.name, role=Role(body.role), at=services.clock.now(),
        valid_for=timedelta(hours=services.settings.invitation_hours))

    async def work(uow: UnitOfWork) -> JsonReply:
        row = await invitations.invite(uow, command)
        lost = Problem(409, "secret_not_replayable",
                       f"this Idempotency-Key created invitation {row['id']}, whose token "
                       "this server can no longer show; invite again (the first one "
                       "expires unspent)", invitation_id=str(row["id"]))
        return JsonReply(201, {name: row[name] for name in InvitationOut.model_fields},
                         secret_lost=lost)

    return await commands.run(request, services, principal, body.model_dump(mode="json"), work)


@router.get("/{agent_id}", response_model=AgentOut, summary="One agent", responses=errors(404))
async def get_agent(agent_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        row = await agent_handlers.get_agent(s, agent_id)
    if row is None:
        raise Problem(404, "not_found", "no such agent")
    return JsonReply(200, _out(row)).response()


@router.patch("/{agent_id}", response_model=AgentOut, summary="Change an agent",
              responses=errors(404, 409, 413, 415))
async def patch_agent(
    agent_id: UUID, body: AgentPatch, request: Request, principal: Authorized, services: ServicesDep
) -> Response:
    given = body.model_dump(exclude_unset=True)
    command = agent_handlers.UpdateAgent(agent_id=AgentId(agent_id), **given,
                                         at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        row = await agent_handlers.update_agent(uow, command)
        return JsonReply(200, _out(row))

    response = await commands.run(request, services, principal, given, work)
    services.keys.clear()  # an agent's keys act as the agent: forget them here at once
    return response
