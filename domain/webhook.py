"""The webhook aggregate: the tenant's one outbound endpoint (a URL, the event types it
wants, ``*`` for all, whether it is on, and a secret that signs every delivery).

Its events are on the tenant stream (``WebhookConfigured``, once per configuration,
the same one again included, so the audit trail shows who pointed deliveries where
and when); its state is its row (docs/architecture.md). The secret is write-only: it
reaches the row and never an event. ``decide_webhook`` is pure; which hosts a
deployment may deliver to is the caller's (a setting, not a rule of the endpoint).
"""

from __future__ import annotations

from domain.aggregate import BaseCommand
from domain.errors import CorruptStream, ValidationFailed
from domain.events import Event, WebhookConfigured
from domain.evolution import fold_onto
from domain.frozen import Frozen


class SecretRequired(ValidationFailed):
    """A first configuration gives no secret to sign deliveries with."""

    def __init__(self) -> None:
        super().__init__("a secret is required when configuring a webhook first",
                         field="secret")


class Webhook(Frozen):
    """The endpoint as configured (its secret is held by the row alone)."""

    url: str
    event_types: tuple[str, ...]
    enabled: bool


class ConfigureWebhook(BaseCommand):
    url: str
    event_types: tuple[str, ...]
    enabled: bool
    secret: str | None = None
    """None keeps the current secret."""


def decide_webhook(command: ConfigureWebhook, state: Webhook | None) -> list[Event]:
    """The event of a configuration (None: none yet, and then a secret is required)."""
    if command.secret is None and state is None:
        raise SecretRequired()
    return [WebhookConfigured(url=command.url, event_types=command.event_types,
                              enabled=command.enabled, at=command.at)]


def evolve_webhook(state: Webhook | None, event: Event) -> Webhook:
    """Apply one event to the endpoint (None before its first configuration)."""
    if not isinstance(event, WebhookConfigured):
        raise CorruptStream(f"{event.TYPE} does not configure a webhook")
    return Webhook(url=event.url, event_types=event.event_types, enabled=event.enabled)


fold_webhook = fold_onto(evolve_webhook)


__all__ = ["ConfigureWebhook", "SecretRequired", "Webhook", "decide_webhook",
           "evolve_webhook", "fold_webhook"]
