"""The tenant's outbound webhook endpoint: one per tenant.

A URL, the event types it wants (``*`` for all) and a secret that signs every
delivery. The secret is write-only: never returned; configuring without one keeps
the current secret. Each change records ``WebhookConfigured`` on the tenant stream in
the same transaction, so the audit trail shows who pointed deliveries where, and
when. Delivery itself is ``scheduler.webhooks``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from domain.events import WebhookConfigured
from eventstore.sqlfile import load_queries
from eventstore.store import Session
from handlers.errors import Invalid
from handlers.tenant_events import record
from scheduler.webhooks import private_address

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class ConfigureWebhook:
    url: str
    event_types: tuple[str, ...]
    enabled: bool
    at: datetime
    secret: str | None = None  # None keeps the current secret


def names_private_host(url: str) -> bool:
    """An IP literal in a private range, or localhost. Names that resolve to private
    addresses are refused when delivering (scheduler.webhooks), after resolution."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return private_address(host)
    except ValueError:  # a name, not an address
        return False


async def configure_webhook(uow: Session, command: ConfigureWebhook, *,
                            allow_private: bool = False) -> dict[str, Any]:
    """Set the endpoint; returns its row (without the secret)."""
    if not allow_private and names_private_host(command.url):
        raise Invalid("validation_failed",
                      "the webhook URL points at a loopback, private or link-local address",
                      field="url", reason="private address")
    if command.secret is None and await get_webhook(uow) is None:
        raise Invalid("validation_failed",
                      "a secret is required when configuring a webhook first",
                      field="secret", reason="required", kind="missing")
    row = await uow.conn.fetchrow(Q["webhook_put"], uow.tenant_id, command.url, command.secret,
                                  list(command.event_types), command.enabled, command.at)
    assert row is not None
    # Last: the append takes the tenant head lock, held until commit.
    await record(uow, WebhookConfigured(at=command.at, url=command.url,
                                        event_types=command.event_types,
                                        enabled=command.enabled))
    return dict(row)


async def get_webhook(uow: Session) -> dict[str, Any] | None:
    row = await uow.conn.fetchrow(Q["webhook_get"], uow.tenant_id)
    return None if row is None else dict(row)


__all__ = ["ConfigureWebhook", "configure_webhook", "get_webhook", "names_private_host"]
