"""Tenant settings over HTTP: ``GET/PUT /v1/settings``.

The document and its one model live in ``projections.settings``; it has four keys:
``sla_targets`` (per priority, business milliseconds), ``business_hours`` (a
``domain.Calendar`` or null for calendar time), ``paused_states`` and ``sweep`` (days
before a pending ticket is solved and a solved one closed). No row means the
defaults. A PUT replaces the whole document and is also a ``SettingsChanged`` event
on the tenant stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response

from api.auth import Principal, require
from api.deps import ServicesDep
from api.idempotency import JsonReply, idempotent
from api.problem_docs import errors
from api.problems import Problem
from api.routing import StrictRoute
from api.tenant_stream import record
from domain.events import SettingsChanged
from eventstore.sqlfile import load_queries
from projections.settings import TenantSettingsDoc, load_document

Q = load_queries(Path(__file__).with_name("admin.sql"))

router = APIRouter(prefix="/v1/settings", tags=["settings"], route_class=StrictRoute)
Admin = Annotated[Principal, Depends(require("admin"))]


def _etag(version: int) -> str:
    return f'"{version}"'


@router.get("", response_model=TenantSettingsDoc, responses=errors(),
            summary="The tenant's settings")
async def get_settings(principal: Admin, services: ServicesDep, response: Response) -> Any:
    async with services.store.session(principal.tenant_id, readonly=True) as s:
        doc, version = await load_document(s.conn, principal.tenant_id)
    response.headers["ETag"] = _etag(version)
    return doc.document()


@router.put("", response_model=TenantSettingsDoc, summary="Replace the tenant's settings",
            responses=errors(409, 412, 413, 415))
async def put_settings(
    body: TenantSettingsDoc,
    request: Request,
    principal: Admin,
    services: ServicesDep,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    now = services.clock.now()
    doc = body.document()
    async with services.store.session(principal.tenant_id, principal.actor) as s:

        async def work() -> JsonReply:
            current, version = await load_document(s.conn, principal.tenant_id)
            if if_match is not None and if_match.strip() != _etag(version):
                raise Problem(412, "precondition_failed",
                              f"the settings are at version {version}", current_version=version)
            if current.document() == doc and version > 0:
                return JsonReply(200, doc, {"ETag": _etag(version)})
            row = await s.conn.fetchrow(Q["put_settings"], principal.tenant_id, doc, now)
            assert row is not None
            await record(s, SettingsChanged(settings=doc, at=now))
            return JsonReply(200, doc, {"ETag": _etag(row["version"])})

        return await idempotent(request, principal, s, doc, work)
