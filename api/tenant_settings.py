"""Tenant settings: the document, its strict validation, and ``GET/PUT /v1/settings``.

The document (``tenant_settings.settings``) has four keys: ``sla_targets`` (per
priority, business milliseconds), ``business_hours`` (a ``domain.Calendar`` or null
for calendar time), ``paused_states`` and ``sweep`` (days before a pending ticket is
solved and a solved one closed). No row means the defaults. A PUT replaces the whole
document and is also a ``SettingsChanged`` event on the tenant stream.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Depends, Header, Request, Response
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from api.auth import Principal, require
from api.deps import ServicesDep
from api.idempotency import JsonReply, idempotent
from api.problem_docs import errors
from api.problems import Problem
from api.routing import StrictRoute
from api.tenant_stream import record
from domain.business_hours import Calendar
from domain.events import SettingsChanged
from domain.ids import TenantId
from domain.sla import DEFAULT_PAUSED_STATES, DEFAULT_TARGETS
from domain.values import Priority, TicketState
from eventstore.sqlfile import load_queries
from projections.settings import DEFAULT_PENDING_DAYS, DEFAULT_SOLVED_DAYS

Q = load_queries(Path(__file__).with_name("admin.sql"))

DAY_MS = 86_400_000
MAX_TARGET_MS = 366 * DAY_MS
PAUSABLE = frozenset({TicketState.PENDING, TicketState.ON_HOLD, TicketState.SOLVED})


class SlaTargetDoc(BaseModel):
    """Targets of one priority, in business milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_response_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]
    resolution_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]

    @model_validator(mode="after")
    def _ordered(self) -> SlaTargetDoc:
        if self.first_response_ms > self.resolution_ms:
            raise ValueError("first_response_ms must not exceed resolution_ms")
        return self


class SweepDoc(BaseModel):
    """Days of inactivity before the sweep solves a pending ticket / closes a solved one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pending_days: Annotated[StrictInt, Field(ge=1, le=365)]
    solved_days: Annotated[StrictInt, Field(ge=1, le=365)]


class TenantSettingsDoc(BaseModel):
    """The whole settings document; a PUT must give every key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sla_targets: dict[Priority, SlaTargetDoc]
    business_hours: Calendar | None
    paused_states: list[TicketState]
    sweep: SweepDoc

    @field_validator("sla_targets")
    @classmethod
    def _every_priority(cls, value: dict[Priority, SlaTargetDoc]) -> dict[Priority, SlaTargetDoc]:
        missing = [p.value for p in Priority if p not in value]
        if missing:
            raise ValueError("targets are required for every priority; missing: "
                             + ", ".join(missing))
        return {p: value[p] for p in Priority}

    @field_validator("paused_states")
    @classmethod
    def _pausable(cls, value: list[TicketState]) -> list[TicketState]:
        wrong = [s.value for s in value if s not in PAUSABLE]
        if wrong:
            raise ValueError("only pending, on_hold and solved can pause clocks; not "
                             + ", ".join(wrong))
        if len(set(value)) != len(value):
            raise ValueError("paused_states lists a state twice")
        # A canonical order, so equal settings make equal events.
        return sorted(value, key=list(TicketState).index)

    def document(self) -> dict[str, Any]:
        """The JSON document as stored (ints and strings only)."""
        return self.model_dump(mode="json")


DEFAULT_SETTINGS = TenantSettingsDoc(
    sla_targets={p: SlaTargetDoc(first_response_ms=t.first_response_ms,
                                 resolution_ms=t.resolution_ms)
                 for p, t in DEFAULT_TARGETS.items()},
    business_hours=None,
    paused_states=sorted(DEFAULT_PAUSED_STATES, key=list(TicketState).index),
    sweep=SweepDoc(pending_days=DEFAULT_PENDING_DAYS, solved_days=DEFAULT_SOLVED_DAYS),
)


async def load_settings(
    conn: asyncpg.Connection, tenant_id: TenantId
) -> tuple[TenantSettingsDoc, int]:
    """The tenant's settings and their version (0 for the defaults), in the caller's
    tenant-armed transaction."""
    row = await conn.fetchrow(Q["get_settings"], tenant_id)
    if row is None:
        return DEFAULT_SETTINGS, 0
    # Keys missing from an older document read as their defaults.
    doc = {**DEFAULT_SETTINGS.document(), **row["settings"]}
    return TenantSettingsDoc.model_validate(doc), row["version"]


router = APIRouter(prefix="/v1/settings", tags=["settings"], route_class=StrictRoute)
Admin = Annotated[Principal, Depends(require("admin"))]


def _etag(version: int) -> str:
    return f'"{version}"'


@router.get("", response_model=TenantSettingsDoc, responses=errors(),
            summary="The tenant's settings")
async def get_settings(principal: Admin, services: ServicesDep, response: Response) -> Any:
    async with services.store.session(principal.tenant_id, readonly=True) as s:
        doc, version = await load_settings(s.conn, principal.tenant_id)
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
            current, version = await load_settings(s.conn, principal.tenant_id)
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
