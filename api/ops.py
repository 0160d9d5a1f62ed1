"""Wiring of the operational parts: Redis guard, rate limiter, cache, metrics, logs.

``install(app)`` adds the middlewares and the ``/metrics`` route when the app is
built; ``attach(services)`` puts the per-process objects into ``services.extras``
when the lifespan starts (keeping any a test put there first) and returns the
function that releases them.

Middleware order, outermost first: request context (request id, access log) ->
request metrics -> rate limit -> the app. So a 429 is logged and counted too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI

from api import metrics as metrics_module
from api.bootstrap import Services
from api.cache import AnalyticsCache
from api.health import CheckResult
from api.logging import RequestContext
from api.metrics import Metrics, RequestMetrics
from api.ratelimit import Policy, RateLimiter, RateLimitMiddleware
from api.redis_guard import RedisGuard


def install(app: FastAPI) -> None:
    """Add the operational middlewares and routes to ``app``."""
    app.include_router(metrics_module.router)
    # add_middleware puts each new one outside the previous ones.
    app.add_middleware(RateLimitMiddleware)
    app.add_middleware(RequestMetrics)
    app.add_middleware(RequestContext)


async def attach(services: Services) -> Callable[[], Awaitable[None]]:
    """Create the process's Redis guard, limiter, cache and metrics (unless present)."""
    s = services.settings
    extras = services.extras
    created: list[str] = []
    if not isinstance(extras.get("metrics"), Metrics):
        extras["metrics"] = Metrics()
        created.append("metrics")
    metrics: Metrics = extras["metrics"]
    if "redis" not in extras:
        extras["redis"] = RedisGuard(
            s.redis_url,
            socket_timeout=s.redis_socket_timeout,
            connect_timeout=s.redis_connect_timeout,
            failure_threshold=s.redis_breaker_failures,
            cooldown=s.redis_breaker_cooldown,
        )
        created.append("redis")
    guard: RedisGuard = extras["redis"]
    metrics.watch_redis(guard)
    if "rate_limiter" not in extras:
        extras["rate_limiter"] = RateLimiter(
            guard,
            per_key=Policy("key", s.rate_limit_per_key, s.rate_limit_window),
            per_address=Policy("address", s.rate_limit_per_address, s.rate_limit_window),
        )
        created.append("rate_limiter")
    if "cache" not in extras:
        extras["cache"] = AnalyticsCache(guard, ttl=s.cache_ttl, metrics=metrics)
        created.append("cache")
    checks = extras.setdefault("health_checks", {})

    async def redis_check(services: Services) -> CheckResult:
        current = services.extras.get("redis")
        return await current.check() if isinstance(current, RedisGuard) else CheckResult(
            "dormant")

    checks.setdefault("redis", redis_check)

    async def stop() -> None:
        if "redis" in created:
            await guard.close()
        for name in created:
            extras.pop(name, None)

    return stop
