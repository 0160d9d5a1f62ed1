"""Bearer API key authentication and role checks.

The key is looked up before the tenant is known, through the SECURITY DEFINER
function ``api_key_lookup`` (remembered for a few seconds: api/http/keycache.py);
everything after runs under that key's tenant.
"""

from __future__ import annotations

from fastapi import Depends, Request

from api.http.access import roles_for
from api.http.principal import Principal
from api.http.problems import Problem
from api.ops import logging as logs

__all__ = ["Principal", "authenticate", "authorize", "bearer_token", "operation_of"]


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="helpdesk"'}


async def authenticate(request: Request) -> Principal:
    """Dependency: the request's principal, or 401."""
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Problem(401, "unauthorized", "missing bearer API key", headers=_UNAUTHORIZED)
    principal: Principal | None = await request.state.services.keys.lookup(token)
    if principal is None:
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


async def authorize(request: Request, principal: Principal = Depends(authenticate)
                    ) -> Principal:
    """Dependency: the principal, if the authorization table lets its role run this
    route's operation; else 403."""
    allowed = roles_for(operation_of(request))
    if principal.role not in allowed:
        raise refuse(principal.role, allowed)
    return principal
