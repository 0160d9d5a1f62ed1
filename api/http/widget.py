"""Who may call the embeddable widget's routes (``/v1/widget/{tenant_id}/...``).

Every widget call must come from a page on one of the tenant's ``widget_origins``
(tenant settings): a browser says which in ``Origin``, and a call with no ``Origin``
or another one is a 403 ``origin_not_allowed``, before anything else is looked at.
An allowed origin is remembered on the request (``request.state.allowed_widget_origin``) so
that the answer carries ``Access-Control-Allow-Origin`` for it (api/http/cors.py).

The calls after ``POST .../sessions`` also carry the widget session's token
(``Authorization: Bearer``): it names its tenant, which must be the path's, and its
session, which must be open, and must be used from the origin it was opened from.
Removing an origin from the settings stops its sessions at the next call.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Depends, Request

from api.http.auth import check_access, operation_of
from api.http.headers import bearer_token
from api.http.principal import Principal
from api.http.problems import Problem
from api.ops import logging as logs
from domain.ids import TenantId
from handlers import widget

if TYPE_CHECKING:
    from api.root import Services

__all__ = ["WidgetAuthorized", "WidgetOrigin", "check_call", "check_widget_origin",
           "origin_not_allowed"]

_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="helpdesk-widget"'}


def origin_not_allowed(origin: str | None) -> Problem:
    said = "no Origin header" if origin is None else f"origin {origin!r}"
    return Problem(403, "origin_not_allowed",
                   f"the widget may not be called with {said}: the tenant's "
                   "widget_origins setting lists the origins it may be called from")


async def check_call(services: Services, tenant: TenantId, origin: str,
                     session_id: UUID | None, now: datetime) -> widget.CallCheck:
    """``handlers.widget.check_call`` in a read-only unit of work of the tenant, acting
    as the session when one is named."""
    actor = None if session_id is None else widget.widget_actor(session_id)
    async with services.store.unit_of_work(tenant, actor, readonly=True) as uow:
        return await widget.check_call(uow, origin, session_id, now)


def _origin(request: Request) -> str:
    origin = request.headers.get("origin")
    if origin is None or not origin.strip():
        raise origin_not_allowed(None)
    return origin


async def check_widget_origin(tenant_id: UUID, request: Request) -> str:
    """Dependency of ``POST .../sessions``: the request's origin, if the tenant lists
    it; else 403. (Not ``projections.tenant_settings.widget_origin``, which only puts
    an origin in the form browsers send it.)"""
    services: Services = request.state.services
    origin = _origin(request)
    check = await check_call(services, TenantId(tenant_id), origin, None,
                             services.clock.now())
    if not check.origin_listed:
        raise origin_not_allowed(origin)
    request.state.allowed_widget_origin = origin
    return origin


async def authorize_widget(tenant_id: UUID, request: Request) -> Principal:
    """Dependency of the widget's ticket routes: the widget session of the bearer
    token, called from an allowed origin (else 403) and the one it was opened from
    (else 403), while it is open (else 401)."""
    services: Services = request.state.services
    origin = _origin(request)
    now = services.clock.now()
    token = bearer_token(request.headers.get("authorization"))
    claims = None if token is None else services.widget_tokens.claims(token, now)
    session = claims.session_id if claims is not None and claims.tenant_id == tenant_id \
        else None
    check = await check_call(services, TenantId(tenant_id), origin, session, now)
    if not check.origin_listed:
        raise origin_not_allowed(origin)
    request.state.allowed_widget_origin = origin
    if claims is None or check.session_origin is None:
        raise Problem(401, "invalid_widget_token",
                      "missing widget session token, or its session has ended: open a "
                      "new one (POST /v1/widget/{tenant_id}/sessions)",
                      headers=_UNAUTHORIZED)
    if check.session_origin != origin:
        raise Problem(403, "origin_not_allowed",
                      "a widget session is used from the origin it was opened from")
    principal = Principal(tenant_id=claims.tenant_id, key_id=claims.session_id,
                          role=claims.role, credential="widget")
    check_access(principal, operation_of(request))
    request.state.principal = principal
    logs.bind(tenant_id=str(principal.tenant_id),
              actor=f"{principal.actor.kind}:{principal.actor.id}")
    return principal


WidgetOrigin = Annotated[str, Depends(check_widget_origin)]
"""The caller's origin, one the path's tenant lists in ``widget_origins``."""
WidgetAuthorized = Annotated[Principal, Depends(authorize_widget)]
"""A widget session, from its own allowed origin, allowed by ``api.http.access``."""
