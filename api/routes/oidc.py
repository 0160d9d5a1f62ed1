"""OpenID Connect sign-in for staff: the tenant's provider (admin) and the code flow.

- ``GET/PUT/DELETE /v1/settings/oidc`` (admin): the tenant's provider. The client
  secret is write-only (a PUT without it keeps the current one); the answer names the
  ``redirect_uri`` to register with the provider.
- ``GET /v1/auth/oidc/{tenant}``: the sign-in button (its label and where it starts),
  nulls when the tenant (slug or id) has no provider. The console asks it.
- ``GET /v1/auth/oidc/{tenant}/start``: redirects the browser to the provider, the
  state bound to the browser in a short-lived cookie (``SameSite=Lax``: it must come
  back with the provider's redirect).
- ``GET /v1/auth/oidc/{tenant}/callback``: the provider's redirect back. A good
  sign-in sets the refresh cookie exactly as password sign-in does and redirects to
  the console, which spends it at ``POST /v1/auth/refresh`` for its access token (the
  token is never in a URL). Any refusal is 401 ``oidc_sign_in_failed`` with its reason.

The rules are handlers/oidc.py; docs/sign-in.md tells the whole flow.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Cookie, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http import commands
from api.http.answer_headers import CACHE_CONTROL, LOCATION, SET_COOKIE, sends
from api.http.cookies import STAFF_REFRESH
from api.http.deps import Authorized, ServicesDep
from api.http.problem_docs import errors
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.root import session_lifetimes
from eventstore.store import UnitOfWork
from handlers import oidc
from handlers.oidc_provider import issuer_allowed

router = APIRouter(route_class=StrictRoute)

STATE_COOKIE = "hd_oidc"
STATE_PATH = "/v1/auth/oidc"
CONSOLE_AFTER = "/console/?signed_in=oidc"
"""Where a good sign-in lands: the console, told to spend its refresh cookie."""
DOMAIN = r"^[A-Za-z0-9\-]+(\.[A-Za-z0-9\-]+)+$"
TenantPath = Annotated[str, Path(min_length=1, max_length=63,
                                 description="the tenant's slug (any case) or its id")]


class OidcProviderIn(BaseModel):
    """The tenant's provider. ``client_secret`` may be left out to keep the current one."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1, max_length=40, examples=["Google"],
                       description="the provider's name on the button: \"Sign in with ...\"")
    issuer: str = Field(max_length=500, examples=["https://accounts.google.com"],
                        description="exactly as the provider's ID tokens name it (`iss`); "
                                    "https, or http on a loopback address")
    client_id: str = Field(min_length=1, max_length=500)
    client_secret: str | None = Field(default=None, min_length=1, max_length=500)
    allowed_domain: str | None = Field(
        default=None, max_length=253, pattern=DOMAIN, examples=["example.com"],
        description="when set, only e-mails of this domain sign in")
    create_agents: bool = Field(
        default=False, strict=True,
        description="whether a verified e-mail with no agent adds one (role `agent`) at its "
                    "first sign-in; off, such a sign-in is refused")

    @field_validator("issuer")
    @classmethod
    def _issuer(cls, value: str) -> str:
        if not issuer_allowed(value):
            raise ValueError("must be an https URL (http only on a loopback address), "
                             "without query or fragment")
        return value


class OidcProviderOut(BaseModel):
    """The provider; the client secret is never shown."""

    label: str
    issuer: str
    client_id: str
    allowed_domain: str | None
    create_agents: bool
    redirect_uri: str = Field(description="the callback to register with the provider")
    version: int
    created_at: datetime
    updated_at: datetime


class OidcButtonOut(BaseModel):
    label: str | None = Field(description="the provider's name on the button; null: the "
                                          "tenant offers no OpenID Connect sign-in")
    start_url: str | None = Field(description="where the browser goes to sign in")


def _callback(request: Request, tenant_id: Any) -> str:
    """The callback URL as the provider must have it registered: the tenant by its id
    (a slug may change)."""
    return str(request.base_url).rstrip("/") + f"{STATE_PATH}/{tenant_id}/callback"


@router.get("/v1/settings/oidc", tags=["settings"], response_model=OidcProviderOut,
            responses=errors(404), summary="The tenant's OpenID Connect provider")
async def get_provider(request: Request, principal: Authorized,
                       services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        doc = await oidc.get_provider(s)
    if doc is None:
        raise oidc.not_configured()
    return JsonReply(200, {**doc, "redirect_uri": _callback(request, principal.tenant_id)}
                     ).response()


@router.put("/v1/settings/oidc", tags=["settings"], response_model=OidcProviderOut,
            responses=errors(409, 413, 415),
            summary="Set the tenant's OpenID Connect provider")
async def put_provider(body: OidcProviderIn, request: Request, principal: Authorized,
                       services: ServicesDep) -> Response:
    """Turns OpenID Connect sign-in on (or changes it); a new provider needs its
    ``client_secret``, which is sealed and never returned."""
    command = oidc.SetProvider(label=body.label, issuer=body.issuer, client_id=body.client_id,
                               client_secret=body.client_secret,
                               allowed_domain=body.allowed_domain,
                               create_agents=body.create_agents, at=services.clock.now())
    redirect_uri = _callback(request, principal.tenant_id)

    async def work(uow: UnitOfWork) -> JsonReply:
        doc = await oidc.set_provider(uow, command)
        return JsonReply(200, {**doc, "redirect_uri": redirect_uri})

    # The secret stays out of the Idempotency-Key record.
    return await commands.run(request, services, principal,
                              body.model_dump(mode="json", exclude={"client_secret"}), work)


@router.delete("/v1/settings/oidc", tags=["settings"], response_model=OidcProviderOut,
               responses=errors(404), summary="Turn OpenID Connect sign-in off")
async def delete_provider(request: Request, principal: Authorized,
                          services: ServicesDep) -> Response:
    """Sessions it opened stay open; the answer is the provider as it was."""
    at = services.clock.now()
    redirect_uri = _callback(request, principal.tenant_id)

    async def work(uow: UnitOfWork) -> JsonReply:
        doc = await oidc.remove_provider(uow, at)
        return JsonReply(200, {**doc, "redirect_uri": redirect_uri})

    return await commands.run(request, services, principal, None, work)


@router.get("/v1/auth/oidc/{tenant}", tags=["auth"], response_model=OidcButtonOut,
            responses=errors(), summary="The tenant's \"Sign in with ...\" button")
async def oidc_button(tenant: TenantPath, services: ServicesDep) -> Response:
    """Nulls when there is no button to show: a tenant without a provider and an
    unknown one answer alike (and the console's probe is no failed request)."""
    found = await oidc.button(services.store, tenant)
    if found is None:
        return JsonReply(200, {"label": None, "start_url": None}).response()
    tenant_id, label = found
    return JsonReply(200, {"label": label,
                           "start_url": f"{STATE_PATH}/{tenant_id}/start"}).response()


@router.get("/v1/auth/oidc/{tenant}/start", tags=["auth"], status_code=303,
            responses=errors(404, 502) | sends(303, required=(LOCATION, SET_COOKIE)),
            summary="Go to the tenant's OpenID Connect provider to sign in")
async def oidc_start(tenant: TenantPath, request: Request,
                     services: ServicesDep) -> Response:
    started = await oidc.start(services.store, services.oidc, tenant,
                               lambda tenant_id: _callback(request, tenant_id),
                               services.clock.now())
    response = Response(status_code=303, headers={"Location": started.url,
                                                  "Cache-Control": "no-store"})
    response.set_cookie(STATE_COOKIE, started.state,
                        max_age=int(oidc.ATTEMPT_TTL.total_seconds()), path=STATE_PATH,
                        httponly=True, samesite="lax", secure=request.url.scheme == "https")
    return response


@router.get("/v1/auth/oidc/{tenant}/callback", tags=["auth"], status_code=303,
            responses=errors(404, 502)
            | sends(303, required=(LOCATION, SET_COOKIE, CACHE_CONTROL)),
            summary="The provider's redirect back: a session, then the console")
async def oidc_callback(
        tenant: TenantPath, request: Request, services: ServicesDep,
        state: Annotated[str, Query(min_length=1, max_length=200)],
        code: Annotated[str | None, Query(min_length=1, max_length=4000)] = None,
        error: Annotated[str | None, Query(max_length=200)] = None,
        error_description: Annotated[str | None, Query(max_length=2000)] = None,
        error_uri: Annotated[str | None, Query(max_length=2000)] = None,
        iss: Annotated[str | None, Query(max_length=500,
                                         description="the issuer (RFC 9207), checked "
                                                     "when the provider sends it")] = None,
        scope: Annotated[str | None, Query(max_length=2000)] = None,
        session_state: Annotated[str | None, Query(max_length=500)] = None,
        authuser: Annotated[str | None, Query(max_length=50)] = None,
        hd: Annotated[str | None, Query(max_length=253)] = None,
        prompt: Annotated[str | None, Query(max_length=200)] = None,
        hd_oidc: Annotated[str | None, Cookie(max_length=200,
                                              include_in_schema=False)] = None) -> Response:
    """The refresh cookie is set as by ``POST /v1/auth/sign-in``; the console's
    ``POST /v1/auth/refresh`` then answers the access token. The parameters besides
    ``code``, ``state``, ``error`` and ``iss`` are what providers add to their redirect
    (Google's ``scope``, ``authuser``, ``hd``, ``prompt``; ``session_state``): taken,
    and not used."""
    now = services.clock.now()
    done = await oidc.finish(services.store, services.oidc,
                             session_lifetimes(services.settings),
                             oidc.Finish(tenant=tenant, code=code, state=state,
                                         browser_state=hd_oidc, at=now, error=error,
                                         iss=iss))
    where = f"{CONSOLE_AFTER}&tenant={quote(str(done.tenant_id))}"
    response = Response(status_code=303, headers={"Location": where,
                                                  "Cache-Control": "no-store"})
    response.delete_cookie(STATE_COOKIE, path=STATE_PATH, httponly=True, samesite="lax",
                           secure=request.url.scheme == "https")
    return STAFF_REFRESH.set(response, request, done.refresh_token, done.refresh_expires_at,
                             now)
