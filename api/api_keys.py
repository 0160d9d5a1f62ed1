"""``/v1/api-keys``: issue, list and revoke the tenant's API keys (admin only).

The secret is returned once, in the POST response; only its hash is stored. Issuing
and revoking are ``ApiKeyIssued`` / ``ApiKeyRevoked`` events in the same transaction,
so the audit feed shows who did it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.auth import Principal, require
from api.deps import ServicesDep
from api.idempotency import JsonReply, idempotent
from api.keys import insert_key
from api.pagination import DEFAULT_LIMIT, MAX_LIMIT, tenant_list_page
from api.problem_docs import errors
from api.problems import Problem
from api.routing import StrictRoute
from api.tenant_stream import record
from domain.events import ApiKeyIssued, ApiKeyRevoked
from domain.ids import ApiKeyId
from domain.values import Role
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("admin.sql"))

# Keys that act as a person may name the agent they act as; machine roles may not.
LINKABLE = frozenset({Role.ADMIN, Role.AGENT})


class ApiKeyIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    role: Role
    agent_id: UUID | None = None

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
    created_at: datetime
    revoked_at: datetime | None


class IssuedKeyOut(ApiKeyOut):
    secret: str | None = Field(
        description="The key itself: shown only in the response that issued it "
        "(null when the answer is an Idempotency-Key replay).")


class ApiKeyPage(BaseModel):
    data: list[ApiKeyOut]
    next_cursor: str | None


router = APIRouter(prefix="/v1/api-keys", tags=["api-keys"], route_class=StrictRoute)
Admin = Annotated[Principal, Depends(require("admin"))]


@router.get("", response_model=ApiKeyPage, responses=errors(),
            summary="List the tenant's API keys")
async def list_keys(
    principal: Admin,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    cursor: Annotated[str | None, Query(max_length=1000)] = None,
) -> Any:
    page, nxt = await tenant_list_page(services, principal.tenant_id, "api-keys",
                                       Q["list_api_keys"], limit, cursor)
    return {"data": [_out(dict(r), model=ApiKeyOut) for r in page], "next_cursor": nxt}


@router.post("", response_model=IssuedKeyOut, status_code=201,
             summary="Issue an API key (the secret is shown only in this response)",
             responses=errors(409, 413, 415))
async def issue_key(
    body: ApiKeyIn, request: Request, principal: Admin, services: ServicesDep
) -> Response:
    now = services.clock.now()
    if body.agent_id is not None and body.role not in LINKABLE:
        raise Problem(422, "validation_failed",
                      f"a {body.role.value} key cannot act as an agent; agent_id is for "
                      "admin and agent keys")
    secrets: list[str] = []
    async with services.store.session(principal.tenant_id, principal.actor) as s:

        async def work() -> JsonReply:
            if body.agent_id is not None:
                agent = await s.conn.fetchrow(Q["get_agent"], principal.tenant_id,
                                              body.agent_id)
                if agent is None or not agent["active"]:
                    raise Problem(422, "unknown_agent",
                                  "agent_id names no active agent of this tenant")
            issued = await insert_key(s.conn, principal.tenant_id, name=body.name,
                                      role=body.role.value, agent_id=body.agent_id)
            await record(s, ApiKeyIssued(key_id=ApiKeyId(issued.id), name=issued.name,
                                         role=body.role, prefix=issued.prefix, at=now))
            secrets.append(issued.secret)
            # The idempotency record keeps the answer without the secret: only its hash
            # is ever stored, so a replay shows the key with "secret": null.
            return JsonReply(201, _out({
                "id": issued.id, "name": issued.name, "role": issued.role,
                "prefix": issued.prefix, "agent_id": issued.agent_id,
                "created_at": issued.created_at, "revoked_at": None, "secret": None}))

        response = await idempotent(request, principal, s, body.model_dump(mode="json"), work)
    if not secrets:
        return response
    shown = orjson.loads(response.body)
    shown["secret"] = secrets[0]
    return JsonReply(201, shown).response()


@router.delete("/{key_id}", response_model=ApiKeyOut, summary="Revoke an API key",
               responses=errors(404, 409))
async def revoke_key(
    key_id: UUID, request: Request, principal: Admin, services: ServicesDep
) -> Response:
    now = services.clock.now()
    async with services.store.session(principal.tenant_id, principal.actor) as s:

        async def work() -> JsonReply:
            row = await s.conn.fetchrow(Q["revoke_api_key"], principal.tenant_id, key_id, now)
            if row is None:
                raise Problem(404, "not_found", "no such API key")
            if row["changed"]:
                await record(s, ApiKeyRevoked(key_id=ApiKeyId(key_id), at=now))
            out = dict(row)
            del out["changed"]
            return JsonReply(200, _out(out, model=ApiKeyOut))

        return await idempotent(request, principal, s, None, work)


def _out(row: dict[str, Any], model: type[BaseModel] = IssuedKeyOut) -> dict[str, Any]:
    return model.model_validate(row).model_dump(mode="json")
