"""The FastAPI application factory.

Middleware order, outermost first: request context (request id, access log) ->
request metrics -> CORS -> rate limit -> body limit -> the app. So a 429 is logged and
counted too, and a front end's 429 carries its CORS headers.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from api import console, pages, reference
from api.config import ProcessSettings
from api.feed import customer as customer_feed
from api.feed import route as feed_route
from api.http import openapi, problems
from api.http.cors import Cors
from api.http.limits import UPLOAD_PATH, BodyLimit
from api.ops.logging import RequestContext
from api.ops.metrics import RequestMetrics
from api.ops.ratelimit import RateLimitMiddleware
from api.root import ProcessRole, Registrar, Services, configure_logging, running
from api.routes import (
    agents,
    analytics,
    api_keys,
    attachments,
    audit,
    auth,
    changes,
    contacts,
    groups,
    health,
    macros,
    mail,
    messages,
    meta,
    metrics,
    oidc,
    organizations,
    portal,
    rules,
    satisfaction,
    search,
    sla_policies,
    slack,
    tenant_settings,
    ticket_fields,
    ticket_teamwork,
    tickets,
    views,
    webhooks,
    widget,
)
from domain.clock import Clock

ROUTERS = (health.router, metrics.router, tickets.router, messages.router, agents.router,
           api_keys.router, tenant_settings.router, webhooks.router, audit.router,
           analytics.router, auth.router, contacts.router, organizations.router,
           feed_route.router, customer_feed.router, groups.router, ticket_fields.router,
           changes.router,
           search.router, portal.router, widget.router, meta.router,
           attachments.router, rules.router, macros.router, views.router, mail.router,
           sla_policies.router, ticket_teamwork.router, oidc.router, slack.router,
           satisfaction.router)


def serve_app() -> FastAPI:
    """The app of one ``helpdesk serve`` process, from the environment: uvicorn calls
    this in each worker process (``--workers``)."""
    settings = ProcessSettings()
    configure_logging(settings)
    return create_app(settings)


def create_app(
    settings: ProcessSettings,
    *,
    services: Services | None = None,
    clock: Clock | None = None,
    extra_jobs: list[Registrar] | None = None,
    breaker_clock: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """Build the app. Its lifespan builds the process's parts through the composition
    root (``api.root.running``) and tears them down at shutdown. With ``services``
    given, the app uses those instead and leaves closing them to their owner."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        if services is not None:
            app.state.services = services
            yield {"services": services}
            return
        async with running(settings, ProcessRole.SERVE, clock=clock, extra_jobs=extra_jobs,
                           breaker_clock=breaker_clock) as built:
            # Also on app.state, for whoever holds the app but not a request (tests).
            app.state.services = built
            yield {"services": built}

    app = FastAPI(
        title="Helpdesk",
        version="1.0.0",
        description="Event-sourced, multitenant helpdesk API.",
        lifespan=lifespan,
        # The reference is served from the package (api/reference), not from a CDN.
        docs_url=None,
        redoc_url=None,
    )
    problems.install(app)
    openapi.install(app)
    for router in ROUTERS:
        app.include_router(router)
    console.mount(app)  # static files, not an API route: in neither ROUTERS nor ACCESS
    reference.mount(app)  # the same, for /docs
    pages.mount(app)  # the same, for the portal and the widget's script
    # add_middleware puts each new one outside the previous ones.
    # Uploads stream their bodies and hold them to the tenant's own limit.
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, unbounded=UPLOAD_PATH)
    app.add_middleware(RateLimitMiddleware)
    app.add_middleware(Cors, front_ends=settings.cors_origin_set)
    app.add_middleware(RequestMetrics)
    app.add_middleware(RequestContext)
    return app
