"""``/v1/api-keys``: issue, list and revoke the tenant's API keys (admin only).

The secret is returned once, in the POST response; only its hash is stored. An
Idempotency-Key replay of that response shows the same secret while the server has
``IDEMPOTENCY_SECRET`` (the record keeps it sealed), and is refused with 409
``secret_not_replayable`` naming the key to revoke otherwise. A key issued with
``scopes`` holds only those permissions (api/http/access.py ``PERMISSIONS``): a subset
of its role's, and never one the issuing credential does not hold itself (422
``excess_scopes`` naming the excess). The rules and events are ``handlers.api_keys``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http import commands
from api.http.access import ROLE_PERMISSIONS, permissions_of
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.pagination import tenant_page_document
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from domain.values import Role
from eventstore.store import UnitOfWork
from handlers import api_keys as key_handlers


class ApiKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    role: Role
    agent_id: UUID | None = Field(
        default=None,
        description="The active agent (person) the key acts as: required for an `agent` "
        "key, optional for an `admin` key (without it, its work is attributed to the key), "
        "refused for the other roles. The key stops working while that agent is inactive.")
    scopes: list[Annotated[str, Field(min_length=1, max_length=100)]] | None = Field(
        default=None, min_length=1, max_length=200,
        description="The permissions the key holds (`GET /v1/auth/me` lists a caller's; "
        "docs/api.md, Permissions, has the catalog): a subset of its role's, and none the "
        "credential issuing it lacks. Left out: all its role's permissions. A scoped key "
        "is refused anything else with 403 `insufficient_scope`.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        value = value.strip()
        if not 1 <= len(value) <= 200:
            raise ValueError("a name has 1 to 200 characters")
        return value


class ApiKeyOut(BaseModel):
    id: UUID
    name: str
    role: Role
    prefix: str
    agent_id: UUID | None
    scopes: list[str] | None = Field(
        description="the permissions a scoped key holds, sorted; null: all its role's")
    created_at: datetime
    revoked_at: datetime | None


class IssuedKeyOut(ApiKeyOut):
    secret: str = Field(
        description="The key itself: shown only in the response that issued it (and in "
        "an Idempotency-Key replay of it, while IDEMPOTENCY_SECRET is configured).")


class ApiKeyPage(BaseModel):
    data: list[ApiKeyOut]
    next_cursor: str | None


router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"], route_class=StrictRoute)


@router.get("", response_model=ApiKeyPage, responses=errors(),
            summary="List the tenant's API keys")
async def list_keys(principal: Authorized, services: ServicesDep, paging: Paging) -> Any:
    return JsonReply(200, await tenant_page_document(
        services.cursors, services.store, principal.tenant_id, "api-keys",
        key_handlers.list_keys, lambda r: _out(r, model=ApiKeyOut), paging)).response()


@router.post("", response_model=IssuedKeyOut, status_code=201,
             summary="Issue an API key (the secret is shown only in this response)",
             responses=errors(409, 413, 415))
async def issue_key(
    body: ApiKeyIn, request: Request, principal: Authorized, services: ServicesDep
) -> Response:
    command = key_handlers.IssueKey(
        name=body.name, role=body.role, agent_id=body.agent_id, at=services.clock.now(),
        scopes=None if body.scopes is None else frozenset(body.scopes),
        role_permissions=ROLE_PERMISSIONS[body.role.value],
        issuer_permissions=permissions_of(principal.role, principal.scopes))

    async def work(uow: UnitOfWork) -> JsonReply:
        issued = await key_handlers.issue_key(uow, command)
        # The secret is in no table; an Idempotency-Key record keeps this answer only
        # sealed (api.http.replay_seal), and a replay that cannot open it names the key.
        lost = Problem(409, "secret_not_replayable",
                       f"this Idempotency-Key issued API key {issued.id}, whose secret "
                       "this server can no longer show; revoke it "
                       f"(DELETE /v1/api-keys/{issued.id}) and issue another",
                       key_id=str(issued.id))
        return JsonReply(201, _out({
            "id": issued.id, "name": issued.name, "role": issued.role,
            "prefix": issued.prefix, "agent_id": issued.agent_id, "scopes": issued.scopes,
            "created_at": issued.created_at, "revoked_at": None, "secret": issued.secret}),
            secret_lost=lost)

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work)


@router.delete("/{key_id}", response_model=ApiKeyOut, summary="Revoke an API key",
               responses=errors(404, 409))
async def revoke_key(
    key_id: UUID, request: Request, principal: Authorized, services: ServicesDep
) -> Response:
    now = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        row = await key_handlers.revoke_key(uow, key_id, now)
        return JsonReply(200, _out(row, model=ApiKeyOut))

    response = await commands.run(request, services, principal, None, work)
    # Committed: this process forgets the key now; the others when the database's
    # notification reaches them (api/http/keycache.py).
    services.keys.clear()
    return response


def _out(row: Mapping[str, Any], model: type[BaseModel] = IssuedKeyOut) -> dict[str, Any]:
    """A key's row in ``model``'s shape (its fields in order; tests validate the shape)."""
    return {name: row[name] for name in model.model_fields}
