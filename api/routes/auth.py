"""``/v1/auth``: people sign in, refresh, sign out and accept invitations; who is calling.

- ``POST /v1/auth/sign-in`` takes ``{tenant, email, password}`` (the tenant's slug
  or id) and answers a signed
  access token (``ACCESS_TOKEN_MINUTES``) in the body and an opaque refresh token in an
  httpOnly, ``SameSite=Strict`` cookie scoped to ``/v1/auth`` (``Secure`` over https),
  so page scripts never see it. Every failure is the same 401 ``sign_in_failed``.
- ``POST /v1/auth/refresh`` spends the cookie's refresh token for a new pair; a token
  spent before revokes its whole session (401 ``invalid_refresh_token``).
- ``POST /v1/auth/sign-out`` ends the cookie's session and clears the cookie.
- ``POST /v1/auth/invitations/accept`` spends an invitation's token to set a password.
- ``GET /v1/auth/me`` answers every role: the tenant, the role, the credential the
  request came with (an API key or a sign-in session, with a key's scopes), the agent
  it acts as, the permissions the caller holds (its role's, narrowed to its key's
  scopes) and the operations of the authorization table (``api.http.access``) they
  allow. The console reads it after sign-in to show what the caller may do and hide
  the rest, from the same table the service enforces.

The rules are ``handlers.sessions`` and ``handlers.invitations``; failed sign-ins count
against the account and the caller's address in Postgres
(handlers/sign_in_throttle.py), and against the address in the rate limiter when Redis
is there (api/ops/ratelimit.py). The portal signs in through the same
``api.http.sign_in.SignInRoutes``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Cookie, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.http.access import operations_of, permissions_of
from api.http.answer_headers import CACHE_CONTROL, SET_COOKIE, merged, sends
from api.http.cookies import STAFF_REFRESH
from api.http.deps import Authorized, ServicesDep
from api.http.problem_docs import errors
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.sign_in import SignInRoutes
from api.schemas.sign_in import SignInIn
from domain.values import Role
from handlers import invitations, sessions
from handlers.credentials import MAX_PASSWORD, MIN_PASSWORD, check_password
from projections.reads import whoami

router = APIRouter(prefix="/v1/auth", tags=["auth"], route_class=StrictRoute)
_REFRESH_ANSWERS = merged(errors(), sends(200, required=(SET_COOKIE, CACHE_CONTROL)),
                          sends(401, required=(SET_COOKIE,)))
"""A refresh: a new cookie, or the refused one cleared."""


class TenantOut(BaseModel):
    id: UUID
    name: str


class CredentialOut(BaseModel):
    kind: Literal["api_key", "session"] = Field(
        description="how the request authenticated: an API key, or a person's access "
                    "token from signing in")
    id: UUID = Field(description="the API key's id, as in `/v1/api-keys`, or the sign-in "
                                 "session's id")
    name: str | None = Field(description="the API key's name (null for a session)")
    scopes: list[str] | None = Field(
        description="a scoped API key's scopes, sorted; null for an unscoped key or a "
                    "session")


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
    permissions: list[str] = Field(
        description="the permissions this caller holds, sorted: its role's, narrowed to "
                    "its key's scopes (docs/api.md, Permissions)")
    operations: list[str] = Field(
        description="the operations those permissions allow, as `METHOD /path` (`WS` for "
                    "the live feed), from the authorization table of docs/api.md")


@router.get("/me", response_model=MeOut, responses=errors(),
            summary="Who is calling, and what its permissions let it do")
async def me(principal: Authorized, services: ServicesDep) -> Response:
    held = permissions_of(principal.role, principal.scopes)
    async with services.store.unit_of_work(principal.tenant_id, readonly=True) as uow:
        row = await whoami(uow.conn, principal.tenant_id, principal.key_id,
                           principal.agent_id)
    assert row is not None, "a caller's tenant is visible under its own context"
    agent = None
    if principal.agent_id is not None and row["agent_name"] is not None:
        agent = {"id": principal.agent_id, "name": row["agent_name"],
                 "email": row["agent_email"]}
    return JsonReply(200, {
        "tenant": {"id": principal.tenant_id, "name": row["tenant_name"]},
        "role": principal.role,
        "credential": {"kind": principal.credential, "id": principal.key_id,
                       "name": row["key_name"],
                       "scopes": None if principal.scopes is None else sorted(principal.scopes)},
        "agent": agent,
        "permissions": sorted(held),
        "operations": operations_of(held),
    }).response()


RefreshCookie = Annotated[str | None, Cookie(alias=STAFF_REFRESH.name, max_length=200,
                                             include_in_schema=False)]


class SignedInOut(BaseModel):
    access_token: str = Field(description="send as `Authorization: Bearer <token>`")
    token_type: Literal["Bearer"]
    expires_in: int = Field(description="seconds until the access token expires")
    expires_at: datetime
    refresh_expires_at: datetime = Field(
        description="when the refresh cookie expires unless it is used before (each "
                    "refresh starts the period again, up to the session's cap)")
    tenant_id: UUID
    agent_id: UUID
    role: Role


class AcceptIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200,
                       description="the invitation's token, as the admin passed it on")
    password: str = Field(min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, pattern=r"\S",
                          description="the password to sign in with (10 characters or more, "
                                      "not only spaces)")


class AcceptedOut(BaseModel):
    tenant_id: UUID
    agent_id: UUID
    email: str


STAFF_SIGN_IN = SignInRoutes(sessions.STAFF, STAFF_REFRESH, lambda services: services.tokens,
                             None, lambda done: {"agent_id": done.holder_id,
                                                 "role": done.role})


@router.post("/sign-in", response_model=SignedInOut, responses=errors(413, 415, 429)
             | sends(200, required=(SET_COOKIE, CACHE_CONTROL)),
             summary="Sign in with e-mail and password (the refresh token is set as a cookie)")
async def sign_in(body: SignInIn, request: Request, services: ServicesDep) -> Response:
    """Every failure is the same 401 ``sign_in_failed``; too many for the account or
    from the address are a 429 with ``Retry-After`` (docs/api.md, Sign-in)."""
    return await STAFF_SIGN_IN.sign_in(body, request, services)


@router.post("/refresh", response_model=SignedInOut, responses=_REFRESH_ANSWERS,
             summary="A new access token for the refresh cookie, which is rotated")
async def refresh(request: Request, services: ServicesDep,
                  hd_refresh: RefreshCookie = None) -> Response:
    # A refusal may be a replay that revoked the session: forget its tokens here at
    # once (other processes hear of it through the notification).
    return await STAFF_SIGN_IN.refresh(request, services, hd_refresh,
                                       on_refused=services.keys.clear)


@router.post("/sign-out", status_code=204, responses=errors() | sends(204, required=(SET_COOKIE,)),
             summary="End the refresh cookie's session and clear the cookie")
async def sign_out(request: Request, services: ServicesDep,
                   hd_refresh: RefreshCookie = None) -> Response:
    await sessions.sign_out(services.store, hd_refresh, services.clock.now())
    services.keys.clear()  # the session's access tokens stop here at once
    return STAFF_REFRESH.forget(Response(status_code=204), request)


@router.post("/invitations/accept", response_model=AcceptedOut,
             responses=errors(404, 410, 413, 415),
             summary="Spend an invitation: set the password to sign in with")
async def accept_invitation(body: AcceptIn, services: ServicesDep) -> Response:
    command = invitations.AcceptInvitation(token=body.token,
                                           password=check_password(body.password),
                                           at=services.clock.now())
    accepted = await invitations.accept(services.store, services.passwords, command)
    return JsonReply(200, accepted).response()
