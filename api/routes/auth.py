"""``/v1/auth``: who the caller is.

``GET /v1/auth/me`` answers every role: the tenant, the role, the credential the
request came with, the agent it acts as, and the operations of the authorization
table (``api.http.access``) the role may run. The console reads it after sign-in to
show what the role may do and hide the rest, from the same table the service
enforces. Today the credential is always an API key; people signing in with an
e-mail and a password will come with another credential kind, answered here alike.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from api.http.access import ACCESS
from api.http.deps import Authorized, ServicesDep
from api.http.idempotency import JsonReply
from api.http.problem_docs import errors
from api.http.routing import StrictRoute
from domain.values import Role
from projections.reads import whoami

router = APIRouter(prefix="/v1/auth", tags=["auth"], route_class=StrictRoute)


class TenantOut(BaseModel):
    id: UUID
    name: str


class CredentialOut(BaseModel):
    kind: Literal["api_key"] = Field(description="how the request authenticated")
    id: UUID = Field(description="the API key's id, as in `/v1/api-keys`")
    name: str | None = Field(description="the API key's name")


class MeAgentOut(BaseModel):
    id: UUID
    name: str
    email: str


class MeOut(BaseModel):
    tenant: TenantOut
    role: Role
    credential: CredentialOut
    agent: MeAgentOut | None = Field(
        description="the agent this credential acts as (its work is attributed to them); "
                    "null for a key that acts as itself")
    operations: list[str] = Field(
        description="the operations this role may run, as `METHOD /path` (`WS` for the "
                    "live feed), from the authorization table of docs/api.md")


def operations_of(role: str) -> list[str]:
    """The operations of the authorization table that ``role`` may run, sorted."""
    return sorted(op for op, roles in ACCESS.items() if role in roles)


@router.get("/me", response_model=MeOut, responses=errors(),
            summary="Who is calling, and what its role may do")
async def me(principal: Authorized, services: ServicesDep) -> Response:
    async with services.store.session(principal.tenant_id, readonly=True) as session:
        row = await whoami(session.conn, principal.tenant_id, principal.key_id,
                           principal.agent_id)
    assert row is not None, "a key's tenant is visible under its own context"
    agent = None
    if principal.agent_id is not None and row["agent_name"] is not None:
        agent = {"id": principal.agent_id, "name": row["agent_name"],
                 "email": row["agent_email"]}
    return JsonReply(200, {
        "tenant": {"id": principal.tenant_id, "name": row["tenant_name"]},
        "role": principal.role,
        "credential": {"kind": "api_key", "id": principal.key_id, "name": row["key_name"]},
        "agent": agent,
        "operations": operations_of(principal.role),
    }).response()
