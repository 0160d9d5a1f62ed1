"""``GET/PUT /v1/webhooks``: the tenant's outbound webhook endpoint (admin only).

One endpoint per tenant: a URL, the event types it wants (``*`` for all) and a
secret that signs every delivery. The secret is write-only: it is never returned;
a PUT without one keeps the current secret. Each change appends
``WebhookConfigured`` to the tenant stream (stream id = tenant id) in the same
transaction, so the audit trail shows who pointed deliveries where, and when.
Delivery itself is ``scheduler.webhooks``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.http import commands
from api.http.deps import Authorized, ServicesDep
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from domain.event_types import EVENT_TYPES
from eventstore.store import UnitOfWork
from handlers import webhooks as webhook_handlers
from scheduler.webhooks import ALL_EVENTS


class WebhookIn(BaseModel):
    """The endpoint to deliver to. ``secret`` may be omitted to keep the current one."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(max_length=2000, examples=["https://example.com/hooks/helpdesk"])
    secret: str | None = Field(default=None, min_length=16, max_length=200)
    event_types: list[str] = Field(min_length=1, max_length=50, examples=[["TicketOpened"]])
    enabled: bool = Field(default=True, strict=True)  # true or false, not 0 or "yes"

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an absolute http(s) URL")
        return value

    @field_validator("event_types")
    @classmethod
    def _known_types(cls, value: list[str]) -> list[str]:
        unknown = sorted({t for t in value if t != ALL_EVENTS and t not in EVENT_TYPES})
        if unknown:
            # Quoted, so that an empty or blank name is visible in the message.
            raise ValueError("unknown event types: " + ", ".join(map(repr, unknown)))
        return sorted(set(value))


class WebhookOut(BaseModel):
    """The configured endpoint; the secret is never shown."""

    url: str
    event_types: list[str]
    enabled: bool
    version: int
    updated_at: datetime


router = APIRouter(prefix="/v1/webhooks", route_class=StrictRoute, tags=["webhooks"])


def _out(row: Any) -> WebhookOut:
    return WebhookOut(url=row["url"], event_types=list(row["event_types"]),
                      enabled=row["enabled"], version=row["version"],
                      updated_at=row["updated_at"])


@router.get("", summary="The tenant's webhook endpoint", response_model=WebhookOut,
            responses=errors(404))
async def get_webhook(services: ServicesDep, principal: Authorized) -> WebhookOut:
    async with commands.reading(services, principal) as session:
        row = await webhook_handlers.get_webhook(session)
    if row is None:
        raise Problem(404, "webhook_not_configured", "no webhook is configured")
    return _out(row)


@router.put("", summary="Set the tenant's webhook endpoint", response_model=WebhookOut,
            responses=errors(409, 413, 415))
async def put_webhook(body: WebhookIn, request: Request, services: ServicesDep,
                      principal: Authorized) -> Response:
    command = webhook_handlers.ConfigureWebhook(
        url=body.url, secret=body.secret, event_types=tuple(body.event_types),
        enabled=body.enabled, at=services.clock.now())
    allow_private = services.settings.webhook_allow_private_addresses

    async def work(uow: UnitOfWork) -> JsonReply:
        row = await webhook_handlers.configure_webhook(uow, command,
                                                       allow_private=allow_private)
        return JsonReply(200, _out(row).model_dump(mode="json"))

    # The secret is left out of the stored fingerprint and reply: it is never written
    # anywhere but the webhook row.
    return await commands.run(request, services, principal,
                              body.model_dump(mode="json", exclude={"secret"}), work)
