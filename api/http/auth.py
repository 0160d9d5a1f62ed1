"""Bearer API key authentication and role checks.

The key is looked up before the tenant is known, through the SECURITY DEFINER
function ``api_key_lookup``; everything after runs under that key's tenant.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from fastapi import Depends, Request

from api.http.access import roles_for
from api.http.problems import Problem
from api.ops import logging as logs
from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import acquire
from eventstore.types import StoreActor
from handlers.api_keys import KEY_PREFIX, hash_secret

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: which tenant, which key, which role, and the agent
    (person) the key acts as, if any, with whether that agent is active."""

    tenant_id: TenantId
    key_id: UUID
    role: str
    agent_id: UUID | None = None
    agent_active: bool | None = None

    @property
    def actor(self) -> StoreActor:
        """The actor the database stamps onto events this caller causes."""
        return StoreActor("api_key", str(self.key_id))

    @property
    def barred(self) -> tuple[str, str] | None:
        """Why this key may do nothing at all, as (code, detail); None: it may act.

        A key that acts as a person works only while that person is an active agent:
        deactivating an agent stops its keys from writing and from reading, and
        reactivating them lets the same keys work again (they are not revoked). An
        agent key always acts as an agent (``issue_key`` refuses one without); one
        issued before that rule belongs to nobody and is barred as well.
        """
        if self.agent_id is not None and not self.agent_active:
            return ("agent_inactive",
                    "the agent this API key acts as is deactivated; an admin can "
                    "reactivate the agent or revoke the key")
        if self.agent_id is None and self.role == "agent":
            return ("agent_key_unlinked",
                    "this agent key belongs to no agent; an admin issues agent keys "
                    "with agent_id")
        return None


def bearer_token(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def lookup_key(pool: Any, secret: str, *, timeout: float | None = 5.0
                     ) -> Principal | None:
    """Map a key secret to its principal, or None for an unknown or revoked key."""
    if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
        return None
    async with acquire(pool, timeout=timeout) as conn:
        row = await conn.fetchrow(Q["api_key_lookup"], hash_secret(secret))
    if row is None:
        return None
    return Principal(TenantId(row["tenant_id"]), row["key_id"], row["role"], row["agent_id"],
                     row["agent_active"])


_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="helpdesk"'}


async def authenticate(request: Request) -> Principal:
    """Dependency: the request's principal, or 401."""
    cached = getattr(request.state, "principal", None)
    if isinstance(cached, Principal):
        return cached
    token = bearer_token(request.headers.get("authorization"))
    if token is None:
        raise Problem(401, "unauthorized", "missing bearer API key", headers=_UNAUTHORIZED)
    services = request.state.services
    principal = await lookup_key(services.pool, token,
                                 timeout=services.settings.db_acquire_timeout)
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
