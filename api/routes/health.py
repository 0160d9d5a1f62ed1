"""Liveness and readiness.

``/health/live`` answers as long as the process serves requests. ``/health/ready``
runs every check of ``api.ops.health`` and answers 503 only when one of them says
it is critical and failing.
"""

from __future__ import annotations

import asyncio
import time

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from api.http.deps import ServicesDep
from api.http.routing import StrictRoute
from api.ops.health import CHECKS, HealthCheck
from api.ops.readiness import CheckResult

router = APIRouter(route_class=StrictRoute, tags=["health"])


@router.get("/health/live", summary="The process is up")
async def live() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/health/ready",
    summary="Ready to serve: Postgres reachable and enabled loops alive",
    responses={503: {"description": "Not ready: a critical part is down"}},
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
