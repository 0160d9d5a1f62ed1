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
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from api.auth import Principal, require
from api.deps import ServicesDep
from api.idempotency import JsonReply, idempotent
from api.problem_docs import errors
from api.problems import Problem
from api.routing import StrictRoute
from api.tenant_stream import record
from domain.events import EVENT_TYPES, WebhookConfigured
from eventstore.sqlfile import load_queries
from scheduler.webhooks import ALL_EVENTS, private_address

Q = load_queries(Path(__file__).with_name("queries.sql"))

AdminDep = Annotated[Principal, Depends(require("admin"))]


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


def _names_private_host(url: str) -> bool:
    """An IP literal in a private range, or localhost. Names that resolve to private
    addresses are refused when delivering (scheduler.webhooks), after resolution."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return private_address(host)
    except ValueError:  # a name, not an address
        return False


def _out(row: Any) -> WebhookOut:
    return WebhookOut(url=row["url"], event_types=list(row["event_types"]),
                      enabled=row["enabled"], version=row["version"],
                      updated_at=row["updated_at"])


@router.get("", summary="The tenant's webhook endpoint", response_model=WebhookOut,
            responses=errors(404))
async def get_webhook(services: ServicesDep, principal: AdminDep) -> WebhookOut:
    async with services.store.session(principal.tenant_id, readonly=True) as session:
        row = await session.conn.fetchrow(Q["webhook_get"], principal.tenant_id)
    if row is None:
        raise Problem(404, "webhook_not_configured", "no webhook is configured")
    return _out(row)


@router.put("", summary="Set the tenant's webhook endpoint", response_model=WebhookOut,
            responses=errors(409, 413, 415))
async def put_webhook(body: WebhookIn, request: Request, services: ServicesDep,
                      principal: AdminDep) -> Response:
    if not services.settings.webhook_allow_private_addresses and _names_private_host(body.url):
        raise Problem(422, "validation_failed",
                      "the webhook URL points at a loopback, private or link-local address",
                      errors=[{"loc": ["body", "url"], "msg": "private address",
                               "type": "value_error"}])
    now = services.clock.now()
    async with services.store.session(principal.tenant_id, principal.actor) as session:

        async def work() -> JsonReply:
            if body.secret is None:
                exists = await session.conn.fetchval(Q["webhook_get"], principal.tenant_id)
                if exists is None:
                    raise Problem(422, "validation_failed",
                                  "a secret is required when configuring a webhook first",
                                  errors=[{"loc": ["body", "secret"], "msg": "required",
                                           "type": "missing"}])
            row = await session.conn.fetchrow(Q["webhook_put"], principal.tenant_id,
                                              body.url, body.secret, body.event_types,
                                              body.enabled, now)
            # Last: the append takes the tenant head lock, held until commit.
            await record(session, WebhookConfigured(
                at=now, url=body.url, event_types=tuple(body.event_types),
                enabled=body.enabled))
            return JsonReply(200, _out(row).model_dump(mode="json"))

        # The secret is left out of the stored fingerprint and reply: it is never
        # written anywhere but the webhook row.
        return await idempotent(request, principal, session,
                                body.model_dump(mode="json", exclude={"secret"}), work)
