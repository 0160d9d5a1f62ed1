"""Tenant settings over HTTP: ``GET/PUT /v1/settings``.

The wire model is ``api.schemas.settings``, the value ``domain.tenant_settings``; keys:
``sla_targets`` (per priority, business milliseconds), ``business_hours`` (a
``domain.business_hours.Calendar`` or null for calendar time), ``paused_states`` and ``sweep`` (days
before a pending ticket is solved and a solved one closed). No row means the
defaults. A PUT replaces the whole document and is also a ``SettingsChanged`` event
on the tenant stream.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, sends
from api.http.deps import Authorized, ServicesDep
from api.http.headers import IfMatch
from api.http.problem_docs import errors
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.settings import TenantSettingsDoc
from eventstore.store import UnitOfWork
from handlers import tenant_settings as settings_handlers

router = APIRouter(prefix="/v1/settings", tags=["settings"], route_class=StrictRoute)


def _etag(version: int) -> str:
    return f'"{version}"'


@router.get("", response_model=TenantSettingsDoc,
            responses=errors() | sends(200, required=(ETAG,)),
            summary="The tenant's settings")
async def get_settings(principal: Authorized, services: ServicesDep, response: Response) -> Any:
    async with commands.reading(services, principal) as s:
        state = await settings_handlers.get_settings(s)
    response.headers[ETAG.name] = _etag(state.version)
    return state.document


@router.put("", response_model=TenantSettingsDoc, summary="Replace the tenant's settings",
            responses=errors(409, 412, 413, 415) | sends(200, required=(ETAG,)))
async def put_settings(
    body: TenantSettingsDoc,
    request: Request,
    principal: Authorized,
    services: ServicesDep,
    if_match: IfMatch = None,
) -> Response:
    command = settings_handlers.ReplaceSettings(settings=body.to_settings(),
                                                at=services.clock.now())
    expected = commands.parse_if_match(if_match)

    async def work(uow: UnitOfWork) -> JsonReply:
        state = await settings_handlers.replace_settings(uow, command,
                                                         expected_version=expected)
        return JsonReply(200, state.document, {ETAG.name: _etag(state.version)})

    return await commands.run(request, services, principal, body.fingerprint(), work)
