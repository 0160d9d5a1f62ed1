"""Bearer authentication (an API key or a person's access token) and role checks.

An API key is looked up before the tenant is known, through the SECURITY DEFINER
function ``api_key_lookup``; an access token names its tenant and is checked against
its session under that tenant (api/http/tokens.py). Both are remembered for a few
seconds (api/http/keycache.py) and resolve to the same ``Principal``: everything after
(the role table, the actor the database stamps) treats them alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from fastapi import Depends, Request

from api.http.access import ROLE_PERMISSIONS, permission_for, roles_for
from api.http.headers import bearer_token
from api.http.principal import Principal
from api.http.problems import Problem
from api.http.tokens import Claims, looks_like_access_token
from api.ops import logging as logs
from handlers import portal

if TYPE_CHECKING:
    from api.root import Services

__all__ = ["Principal", "authenticate", "authorize", "authorize_customer", "check_access",
           "customer_of", "operation_of", "resolve"]


_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="helpdesk"'}


async def resolve(services: Services, token: str, *, expiry: bool = True
                  ) -> Principal | None:
    """The principal of a bearer credential, or None when it is unknown, revoked,
    expired or its session has ended. ``expiry`` false: an access token that has
    expired still counts while its session is open (the live feed's re-checks: the
    token opened the connection, the session keeps it)."""
    if looks_like_access_token(token):
        now = services.clock.now()
        claims = services.tokens.claims(token, now, expiry=expiry)
        return None if claims is None else await services.keys.session(claims, now)
    return await services.keys.lookup(token)


async def authenticate(request: Request) -> Principal:
    """Dependency: the request's principal, or 401."""
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Problem(401, "unauthorized", "missing bearer API key or access token",
                      headers=_UNAUTHORIZED)
    principal = await resolve(request.state.services, token)
    if principal is None:
        if looks_like_access_token(token):
            raise Problem(401, "invalid_access_token",
                          "the access token has expired or its session has ended: refresh "
                          "it or sign in again", headers=_UNAUTHORIZED)
        raise Problem(401, "invalid_api_key", "the API key is unknown or revoked",
                      headers=_UNAUTHORIZED)
    if principal.barred is not None:
        # 403, not 401: the key is genuine and unrevoked; the person it acts as may not
        # work here now, which a distinct code says (a 401 would read as a typo or a
        # revoked key, and the client cannot tell an admin what to fix).
        raise Problem(403, *principal.barred)
    request.state.principal = principal
    logs.bind(tenant_id=str(principal.tenant_id),
              actor=f"{principal.actor.kind}:{principal.actor.id}")
    return principal


def operation_of(request: Request) -> str:
    """``METHOD /route/{template}``: the request's key in the authorization table."""
    template = getattr(request.scope.get("route"), "path", request.url.path)
    return f"{request.method} {template}"


def refuse(role: str, allowed: frozenset[str]) -> Problem:
    return Problem(403, "forbidden",
                   f"role {role!r} may not do this; allowed: " + ", ".join(sorted(allowed)))


def check_access(principal: Principal, operation: str) -> None:
    """Raise the 403 that refuses ``principal`` ``operation``, if it is refused: its role
    does not hold the operation's permission (``forbidden``), or its key's scopes do not
    name it (``insufficient_scope``, naming the permission). Two lookups in frozen
    tables per request: a scoped key costs what a role key costs."""
    permission = permission_for(operation)
    if permission is None or permission not in ROLE_PERMISSIONS.get(principal.role, ()):
        raise refuse(principal.role, roles_for(operation))
    if principal.scopes is not None and permission not in principal.scopes:
        raise Problem(403, "insufficient_scope",
                      f"this API key's scopes do not include {permission!r}, which this "
                      "operation needs", permission=permission,
                      scopes=sorted(principal.scopes))


async def authorize(request: Request, principal: Principal = Depends(authenticate)
                    ) -> Principal:
    """Dependency: the principal, if its role holds the permission of this route's
    operation and its key's scopes (if any) name it; else 403."""
    check_access(principal, operation_of(request))
    return principal


async def _portal_session_open(services: Services, claims: Claims, now: datetime) -> bool:
    contact = claims.agent_id  # a portal token's subject is its contact
    async with services.store.unit_of_work(claims.tenant_id, portal.customer_actor(contact),
                                           readonly=True) as uow:
        return await portal.session_open(uow, claims.session_id, contact, now)


async def customer_of(services: Services, token: str, *, expiry: bool = True
                      ) -> Principal | None:
    """The contact a portal token signs in, while its portal session is open; None
    for anything else. ``expiry=False`` keeps an expired token's connection (the live
    feed) while its session is open, as the staff feed does."""
    now = services.clock.now()
    claims = services.portal_tokens.claims(token, now, expiry=expiry)
    if claims is None or not await _portal_session_open(services, claims, now):
        return None
    return Principal(tenant_id=claims.tenant_id, key_id=claims.session_id,
                     role=claims.role, contact_id=claims.agent_id, credential="portal")


async def authenticate_customer(request: Request) -> Principal:
    """Dependency of the portal's routes: the signed-in contact, or 401.

    Only a portal token counts here (a staff access token or an API key is refused: its
    signature is under another purpose), and only while its portal session is open.
    Not cached: one indexed row per request, and a sign-out stops the token at once.
    """
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Problem(401, "unauthorized", "missing bearer portal token",
                      headers=_UNAUTHORIZED)
    services: Services = request.state.services
    principal = await customer_of(services, token)
    if principal is None:
        raise Problem(401, "invalid_access_token",
                      "the portal token has expired or its session has ended: sign in "
                      "again", headers=_UNAUTHORIZED)
    request.state.principal = principal
    logs.bind(tenant_id=str(principal.tenant_id),
              actor=f"{principal.actor.kind}:{principal.actor.id}")
    return principal


async def authorize_customer(request: Request,
                             principal: Principal = Depends(authenticate_customer)
                             ) -> Principal:
    """Dependency: the signed-in contact, if the authorization table lets customers run
    this route's operation; else 403."""
    check_access(principal, operation_of(request))
    return principal
