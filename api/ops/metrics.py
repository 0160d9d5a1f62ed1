"""Prometheus metrics: one registry per app, every metric object defined here.

The ``Metrics`` object is ``services.metrics``; code that counts
something calls its attributes, e.g. ``metrics.appends.inc(len(events))``. Names
(all prefixed ``helpdesk_``):

| attribute | metric | labels |
|---|---|---|
| ``requests`` | ``helpdesk_http_requests_total`` | method, route (template), status |
| ``latency`` | ``helpdesk_http_request_duration_seconds`` | method, route |
| ``appends`` | ``helpdesk_events_appended_total`` | |
| ``job_claims`` | ``helpdesk_job_claims_total`` | kind |
| ``job_outcomes`` | ``helpdesk_job_outcomes_total`` | kind, outcome (done, retry, dead, released) |
| ``projection_lag`` | ``helpdesk_projection_lag_events`` | projection |
| ``websocket_connections`` | ``helpdesk_websocket_connections`` | |
| ``redis_circuit`` | ``helpdesk_redis_circuit_state`` | (0 closed, 1 half open, 2 open) |
| ``rate_limited`` | ``helpdesk_rate_limited_total`` | |
| ``cache`` | ``helpdesk_cache_requests_total`` | result (hit, miss, bypass) |
| ``key_lookups`` | ``helpdesk_key_lookups_total`` | result (hit: from the key cache, miss) |

Routes are labelled by their template (``/v1/tickets/{ticket_id}``), never the raw
path, so the label set stays bounded; unmatched paths, and answers given before
routing (429 from the rate limiter, 413), are labelled ``unmatched``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.ops import logging as logs
from api.ops.redis_guard import STATE_VALUES, RedisGuard
from projections.admin import lag_totals
from projections.projector import default_projections
from scheduler.queue import Job
from scheduler.registry import Handler, JobContext, Registry

log = logging.getLogger("helpdesk.metrics")

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """The metric objects of one app, registered in their own registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("helpdesk_http_requests", "HTTP requests served",
                                ["method", "route", "status"], registry=r)
        self.latency = Histogram("helpdesk_http_request_duration_seconds",
                                 "HTTP request latency", ["method", "route"],
                                 buckets=_BUCKETS, registry=r)
        self.appends = Counter("helpdesk_events_appended", "Events appended", registry=r)
        self.job_claims = Counter("helpdesk_job_claims", "Jobs claimed", ["kind"], registry=r)
        self.job_outcomes = Counter("helpdesk_job_outcomes", "Job runs by outcome",
                                    ["kind", "outcome"], registry=r)
        self.projection_lag = Gauge("helpdesk_projection_lag_events",
                                    "Events between the tenant heads and a projection",
                                    ["projection"], registry=r)
        self.websocket_connections = Gauge("helpdesk_websocket_connections",
                                           "Open WebSocket connections", registry=r)
        self.redis_circuit = Gauge("helpdesk_redis_circuit_state",
                                   "Redis circuit breaker: 0 closed, 1 half open, 2 open",
                                   registry=r)
        self.rate_limited = Counter("helpdesk_rate_limited", "Requests refused with 429",
                                    registry=r)
        self.cache = Counter("helpdesk_cache_requests", "Analytics cache lookups",
                             ["result"], registry=r)
        self.key_lookups = Counter("helpdesk_key_lookups", "API key lookups by where they "
                                   "were answered", ["result"], registry=r)

    def watch_redis(self, guard: RedisGuard) -> None:
        """Report ``guard``'s breaker state whenever metrics are scraped."""
        self.redis_circuit.set_function(lambda: STATE_VALUES[guard.breaker.state])

    def render(self) -> bytes:
        return generate_latest(self.registry)

    async def refresh(self, services: Any) -> None:
        """Gauges that are read from their source at scrape time.

        Projection lag is measured against the tenant heads in the database, so every
        process reports the same, current figure, whichever process ran the batches.
        A database that does not answer leaves the last figure in place.
        """
        hub = services.hub
        self.websocket_connections.set(hub.stats()["connections"] if hub is not None else 0)
        names = [p.name for p in default_projections()]
        try:
            async with asyncio.timeout(2.0):
                lag = await lag_totals(services.pool, names)
        except Exception:  # any failure: the scrape still answers with what it has
            log.warning("projection lag not refreshed", exc_info=True)
            return
        for projection, events in lag.items():
            self.projection_lag.labels(projection).set(events)


def _route_label(scope: Scope) -> str:
    # Answers given before routing (a 429 from the limiter, a 413) have no template;
    # they are labelled "unmatched" (429s also have their own counter).
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else "unmatched"


class RequestMetrics:
    """ASGI middleware counting every HTTP request by route template and status."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        services = (scope.get("state") or {}).get("services")
        metrics = services.metrics if services is not None else None
        if scope["type"] != "http" or metrics is None:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_label(scope)
            method = scope.get("method", "GET")
            metrics.requests.labels(method, route, str(status)).inc()
            metrics.latency.labels(method, route).observe(time.perf_counter() - started)


def instrument_jobs(registry: Registry, metrics: Metrics) -> None:
    """Wrap every registered job handler to count claims and outcomes, and to run it
    with a log context naming the job and its tenant."""
    for kind, handler in list(registry.handlers.items()):
        registry.handlers[kind] = _observed(kind, handler, metrics)


def _observed(kind: str, handler: Handler, metrics: Metrics) -> Handler:
    async def run(ctx: JobContext, job: Job) -> None:
        metrics.job_claims.labels(kind).inc()
        with logs.context(job_id=job.id, job_kind=kind, attempt=job.attempts,
                          tenant_id=str(job.tenant_id) if job.tenant_id else None):
            try:
                await handler(ctx, job)
            except asyncio.CancelledError:
                metrics.job_outcomes.labels(kind, "released").inc()
                raise
            except Exception:
                outcome = "dead" if job.attempts >= job.max_attempts else "retry"
                metrics.job_outcomes.labels(kind, outcome).inc()
                raise
        metrics.job_outcomes.labels(kind, "done").inc()

    return run
