"""Liveness and readiness.

``/health/live`` answers as long as the process serves requests. ``/health/ready``
asks each registered check; only a check that says it is critical and failing
makes the answer 503 (Postgres down; an enabled scheduler that stalled). Optional
parts (Redis) report ``degraded`` or ``dormant`` and never fail readiness.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from fastapi import APIRouter
from starlette.responses import Response

from api.bootstrap import Services
from api.deps import ServicesDep
from api.routing import StrictRoute


@dataclass(frozen=True, slots=True)
class CheckResult:
    status: str  # ok | degraded | dormant | disabled | stalled | unavailable
    critical_failure: bool = False
    detail: str | None = None


HealthCheck = Callable[[Services], Awaitable[CheckResult]]


async def check_database(services: Services) -> CheckResult:
    try:
        async with asyncio.timeout(2.0):
            async with services.pool.acquire() as conn:
                await conn.fetchval("SELECT 1")
    except Exception as exc:  # any failure here means "not ready", whatever its type
        return CheckResult("unavailable", True, f"{type(exc).__name__}: {exc}"[:200])
    return CheckResult("ok")


def health_checks(services: Services) -> dict[str, HealthCheck]:
    """The process's checks; other parts register theirs in ``services.extras``."""
    checks: dict[str, HealthCheck] = {"database": check_database}
    checks.update(services.extras.get("health_checks", {}))
    return checks


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
    checks = health_checks(services)

    async def run(name: str, check: HealthCheck) -> tuple[str, CheckResult, float]:
        started = time.perf_counter()
        result = await check(services)
        return name, result, (time.perf_counter() - started) * 1000

    results = await asyncio.gather(*(run(n, c) for n, c in checks.items()))
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
