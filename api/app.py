"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import (
    agents,
    api_keys,
    audit,
    health,
    messages,
    ops,
    problems,
    scheduling,
    tenant_settings,
    tickets,
    webhooks,
    ws_route,
)
from api.bootstrap import Services, build_services
from api.settings import Settings
from domain.clock import Clock

Hook = Callable[[Services], Awaitable[Callable[[], Awaitable[None]] | None]]


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before reading them whole."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await problems.problem_response(
                413, "body_too_large", f"request bodies are limited to {self.limit} bytes"
            )(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise problems.Problem(413, "body_too_large",
                                           f"request bodies are limited to {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


def create_app(
    settings: Settings,
    *,
    services: Services | None = None,
    clock: Clock | None = None,
    startup_hooks: list[Hook] | None = None,
) -> FastAPI:
    """Build the app. With ``services`` given (tests), the app uses them and does not
    close them; otherwise the lifespan builds and closes its own."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        owned = services is None
        svc = services or await build_services(settings, clock=clock)
        stops = []
        try:
            stops.append(await ops.attach(svc))
            hooks = [ws_route.start_hub, scheduling.scheduler_hook, *(startup_hooks or [])]
            for hook in hooks:
                stop = await hook(svc)
                if stop is not None:
                    stops.append(stop)
            yield {"services": svc}
        finally:
            for stop in reversed(stops):
                await stop()
            if owned:
                await svc.close()

    app = FastAPI(
        title="Helpdesk",
        version="1.0.0",
        description="Event-sourced, multitenant helpdesk API.",
        lifespan=lifespan,
    )
    problems.install(app)
    app.include_router(health.router)
    app.include_router(tickets.router)
    app.include_router(messages.router)
    app.include_router(agents.router)
    app.include_router(api_keys.router)
    app.include_router(tenant_settings.router)
    app.include_router(webhooks.router)
    app.include_router(audit.router)
    app.include_router(ws_route.router)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    ops.install(app)
    return app
