"""Given events, when a command, then events: the tenant's webhook endpoint."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import CorruptStream
from domain.events import AgentUpdated, Event, WebhookConfigured
from domain.ids import AgentId
from domain.webhook import (
    ConfigureWebhook,
    SecretRequired,
    Webhook,
    decide_webhook,
    evolve_webhook,
    fold_webhook,
)
from tests.unit.domain.support import at

URL = "https://hooks.example.com/in"


def configure(secret: str | None = "s3cret", **kw: object) -> ConfigureWebhook:
    data: dict[str, object] = {"url": URL, "event_types": ("*",), "enabled": True,
                               "at": at(), "secret": secret}
    data.update(kw)
    return ConfigureWebhook.model_validate(data)


def when_webhook(history: list[Event], command: ConfigureWebhook) -> list[Event]:
    return decide_webhook(command, fold_webhook(None, history))


def test_a_first_configuration_needs_a_secret_which_no_event_holds():
    with pytest.raises(SecretRequired) as info:
        when_webhook([], configure(secret=None))
    assert info.value.field == "secret"
    then = when_webhook([], configure())
    assert then == [WebhookConfigured(url=URL, event_types=("*",), enabled=True, at=at())]
    assert "s3cret" not in repr(then)


def test_later_configurations_keep_the_secret_and_are_all_recorded():
    history = when_webhook([], configure())
    off = when_webhook(history, configure(secret=None, enabled=False, at=at(1),
                                          event_types=("TicketOpened",)))
    assert off == [WebhookConfigured(url=URL, event_types=("TicketOpened",), enabled=False,
                                     at=at(1))]
    # The same configuration again is recorded too: the trail shows who set it, when.
    assert len(when_webhook(history + off, configure(secret=None, enabled=False, at=at(2),
                                                     event_types=("TicketOpened",)))) == 1
    assert fold_webhook(None, history + off) == Webhook(url=URL, event_types=("TicketOpened",),
                                                        enabled=False)


def test_only_configurations_evolve_the_endpoint():
    with pytest.raises(CorruptStream):
        evolve_webhook(None, AgentUpdated(agent_id=AgentId(uuid.UUID(int=1)), at=at()))
