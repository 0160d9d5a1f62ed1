"""Outbound webhooks: which events become deliveries, and how one is delivered.

Matching happens in the appending statement itself: a trigger on ``events``
(migration 0111) turns each event the tenant's webhook subscribes to into a
``webhook.deliver`` job naming the event's seq, so a delivery exists exactly when
its event committed, and the request never waits for a receiver: delivery runs
later, from the job queue.

``deliver`` is the job handler. It reads the event from the store and re-reads the
webhook (a disabled or re-pointed webhook applies to pending deliveries), signs
``timestamp + "." + body`` with HMAC-SHA256 and POSTs with a short timeout. Any
non-2xx answer or transport error raises, so the queue retries with backoff and
finally (after ``WEBHOOK_MAX_ATTEMPTS``) marks the job dead.

Headers sent: ``Webhook-Id`` (stable across retries, so receivers can drop
duplicates), ``Webhook-Timestamp`` (unix seconds) and ``Webhook-Signature:
v1=<hex>``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import ipaddress
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork, arm
from eventstore.types import RecordedEvent
from scheduler.registry import Registry

Q = load_queries(Path(__file__).with_name("queries.sql"))

KIND = "webhook.deliver"
ALL_EVENTS = "*"


class WebhookDeliveryFailed(Exception):
    """The receiver could not be reached or did not answer 2xx."""


def wants(event_types: Sequence[str], event_type: str) -> bool:
    """Does a webhook subscribed to ``event_types`` want an event of this type?"""
    return ALL_EVENTS in event_types or event_type in event_types


def event_body(event: RecordedEvent) -> dict[str, Any]:
    """The JSON document a receiver gets for one event."""
    return {
        "id": f"{event.tenant_id}.{event.seq}",
        "type": event.type,
        "schema_version": event.schema_version,
        "tenant_id": str(event.tenant_id),
        "seq": event.seq,
        "stream_id": str(event.stream_id),
        "version": event.version,
        "recorded_at": event.recorded_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "actor": {"kind": event.actor_kind, "id": event.actor_id},
        "data": event.data,
    }


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Webhook-Signature`` value: ``v1=`` + hex HMAC-SHA256 of ``ts.body``."""
    mac = hmac.new(secret.encode("utf-8"), str(timestamp).encode() + b"." + body,
                   hashlib.sha256)
    return "v1=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Receiver side check (used by tests and documented for integrators)."""
    if not timestamp.isdigit():
        return False
    return hmac.compare_digest(sign(secret, int(timestamp), body), signature)


def _field(job: Any, name: str) -> Any:
    if isinstance(job, Mapping):
        return job[name]
    return getattr(job, name)


async def deliver(
    services_or_pool: Any,
    job: Any,
    *,
    client: httpx.AsyncClient | None = None,
    timeout: float = 5.0,
    clock: Callable[[], float] = time.time,
    allow_private: bool = False,
) -> None:
    """Job handler for ``webhook.deliver``: POST one signed event to the receiver.

    ``services_or_pool`` is the process's services (anything with ``.pool``) or an
    asyncpg pool; ``job`` has ``tenant_id`` and ``payload`` (attribute or key).
    Returns when delivered or no longer wanted; raises ``WebhookDeliveryFailed``
    to have the queue retry.
    """
    pool = getattr(services_or_pool, "pool", services_or_pool)
    tenant_id = _field(job, "tenant_id")
    payload = _field(job, "payload")
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await arm(conn, tenant_id, None)
        hook = await conn.fetchrow(Q["webhook_for_delivery"], tenant_id)
        if "event" in payload:  # queued before deliveries named their event by seq
            body_doc: dict[str, Any] = payload["event"]
        else:
            row = await conn.fetchrow(Q["webhook_event"], tenant_id, int(payload["seq"]))
            if row is None:
                return  # nothing to send (cannot happen while events are immutable)
            # Opened at delivery time: while the contact's key exists the receiver
            # gets the personal fields, and a retry after an erasure gets them erased.
            keyring = getattr(getattr(services_or_pool, "store", None), "keyring", None)
            [event] = await UnitOfWork(conn, tenant_id, keyring).opened([row])
            body_doc = event_body(event)
    # A rule's call_webhook action sends its event whatever the subscription says.
    by_rule = payload.get("rule_id")
    if hook is None or not hook["enabled"] or (
            by_rule is None and not wants(hook["event_types"], body_doc["type"])):
        return  # removed, disabled or unsubscribed since: nothing to deliver
    if by_rule is not None:
        body_doc = body_doc | {"id": f"{body_doc['id']}.rule.{by_rule}", "rule_id": by_rule}
    if not allow_private:
        await refuse_private_destination(hook["url"])
    body = orjson.dumps(body_doc)
    timestamp = int(clock())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "helpdesk-webhooks/1",
        "Webhook-Id": str(body_doc["id"]),
        "Webhook-Timestamp": str(timestamp),
        "Webhook-Signature": sign(hook["secret"], timestamp, body),
    }
    own = client is None
    http = client or httpx.AsyncClient(timeout=timeout, follow_redirects=False)
    try:
        response = await http.post(hook["url"], content=body, headers=headers,
                                   timeout=timeout)
    except httpx.HTTPError as exc:
        raise WebhookDeliveryFailed(f"{type(exc).__name__}: {exc}"[:300]) from exc
    finally:
        if own:
            await http.aclose()
    if not 200 <= response.status_code < 300:
        raise WebhookDeliveryFailed(f"receiver answered {response.status_code}")


def register(registry: Registry, *, timeout: float = 5.0, allow_private: bool = False,
             max_attempts: int | None = None) -> None:
    """Handle ``webhook.deliver`` jobs in this process's scheduler, giving each
    delivery ``max_attempts`` tries (None: the job row's own budget)."""
    registry.register(KIND, functools.partial(deliver, timeout=timeout,
                                              allow_private=allow_private),
                      max_attempts=max_attempts)


def private_address(address: str) -> bool:
    """Whether ``address`` (an IP literal) is one a webhook must not reach by default:
    loopback, private, link-local (cloud metadata), multicast, reserved, unspecified."""
    ip = ipaddress.ip_address(address)
    return (ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_multicast
            or ip.is_reserved or ip.is_unspecified)


async def refuse_private_destination(url: str) -> None:
    """Raise ``WebhookDeliveryFailed`` if ``url``'s host resolves to a private address.

    A tenant's webhook must not become a way to reach the service's own network
    (databases, metadata endpoints). The name is resolved here, just before sending;
    ``WEBHOOK_ALLOW_PRIVATE_ADDRESSES`` turns the check off for receivers that really
    live on a private network.
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port)
    except OSError as exc:
        raise WebhookDeliveryFailed(f"cannot resolve {host}: {exc}") from exc
    for info in infos:
        address = str(info[4][0])
        if private_address(address):
            raise WebhookDeliveryFailed(
                f"refusing to deliver to {host} ({address}): a private address")
