"""The tenant's outbound webhook endpoint: one per tenant.

The endpoint is an aggregate (``domain.webhook``) on the tenant stream, its
``webhooks`` row its state. The secret is write-only: never returned; configuring
without one keeps the current secret. Here is what the deployment decides: whether the
URL may name a private address. Delivery itself is ``scheduler.webhooks``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from domain.webhook import ConfigureWebhook, SecretRequired, Webhook, decide_webhook
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Invalid
from handlers.tenant_events import record_all
from scheduler.webhooks import private_address

Q = load_queries(Path(__file__).with_name("queries.sql"))


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


async def configure_webhook(uow: UnitOfWork, command: ConfigureWebhook, *,
                            allow_private: bool = False) -> dict[str, Any]:
    """Set the endpoint; returns its row (without the secret)."""
    if not allow_private and names_private_host(command.url):
        raise Invalid("validation_failed",
                      "the webhook URL points at a loopback, private or link-local address",
                      field="url", reason="private address")
    current = await get_webhook(uow)
    state = None if current is None else Webhook(url=current["url"],
                                                 event_types=tuple(current["event_types"]),
                                                 enabled=current["enabled"])
    try:
        events = decide_webhook(command, state)
    except SecretRequired as exc:
        raise Invalid("validation_failed", exc.message, field=exc.field, reason="required",
                      kind="missing") from exc
    row = await uow.conn.fetchrow(Q["webhook_put"], uow.tenant_id, command.url, command.secret,
                                  list(command.event_types), command.enabled, command.at)
    assert row is not None
    # Last: the append takes the tenant head lock, held until commit.
    await record_all(uow, events)
    return dict(row)


async def get_webhook(uow: UnitOfWork) -> dict[str, Any] | None:
    row = await uow.conn.fetchrow(Q["webhook_get"], uow.tenant_id)
    return None if row is None else dict(row)


__all__ = ["ConfigureWebhook", "configure_webhook", "get_webhook", "names_private_host"]
