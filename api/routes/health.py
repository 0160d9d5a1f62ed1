"""Liveness and readiness.

``/health/live`` answers as long as the process serves requests. ``/health/ready``
runs every check of ``api.ops.health`` and answers 503 only when one of them says
it is critical and failing.
"""

from __future__ import annotations

import asyncio
import time
from typing import Literal

import orjson
from fastapi import APIRouter
from pydantic import BaseModel, Field
from starlette.responses import Response

from api.http.deps import ServicesDep
from api.http.routing import StrictRoute
from api.ops.health import CHECKS, HealthCheck
from api.ops.readiness import CheckResult

router = APIRouter(route_class=StrictRoute, tags=["health"])


class LiveOut(BaseModel):
    status: Literal["ok"]


class CheckOut(BaseModel):
    status: str = Field(description="ok, degraded, lagging, dormant, disabled, stalled "
                                    "or unavailable")
    latency_ms: float = Field(ge=0)
    detail: str | None = Field(None, description="Why, when the check is not ok")


class ReadyOut(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, CheckOut]


_NOT_READY = {"description": "Not ready: a critical check is failing (the same body, "
                             "`status: unavailable`)",
              "content": {"application/json": {"schema": {
                  "$ref": "#/components/schemas/ReadyOut"}}}}


@router.get("/health/live", summary="The process is up", response_model=LiveOut)
async def live() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/health/ready",
    summary="Ready to serve: Postgres reachable and enabled loops alive",
    response_model=ReadyOut,
    responses={503: _NOT_READY},
)
async def ready(services: ServicesDep) -> Response:
    async def run(name: str, check: HealthCheck) -> tuple[str, CheckResult, float]:
        started = time.perf_counter()
        result = await check(services)
        return name, result, (time.perf_counter() - started) * 1000

    results = await asyncio.gather(*(run(n, c) for n, c in CHECKS.items()))
    failing = any(r.critical_failure for _, r, _ in results)
    body = {
        "status": "unavailable" if failing else "ok",
        "checks": {
            name: {"status": r.status, "latency_ms": round(ms, 2),
                   **({"detail": r.detail} if r.detail else {})}
            for name, r, ms in results
        },
    }
    return Response(orjson.dumps(body), status_code=503 if failing else 200,
                    media_type="application/json")
