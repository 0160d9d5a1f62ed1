"""Bodies of the Slack routes: the connection, the Events API answer, a ticket's posts."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

_IN = ConfigDict(extra="forbid")


class SlackNotices(BaseModel):
    """Notices posted to a Slack ticket's thread besides agents' public replies."""

    model_config = _IN

    ticket_opened: bool = Field(default=False, description="Say that the ticket is open.")
    sla_breached: bool = Field(default=False,
                               description="Say that the ticket went past an SLA target.")


class SlackIn(BaseModel):
    """Connect Slack, or change the connection. ``bot_token`` and ``signing_secret`` are
    write-only: required to connect, kept when left out of a change."""

    model_config = _IN

    channel_id: str = Field(pattern=r"^[CG][A-Z0-9]{2,30}$", examples=["C0123ABCDEF"],
                            description="The channel tickets come in from.")
    bot_token: str | None = Field(default=None, pattern=r"^xoxb-[A-Za-z0-9-]{1,300}$",
                                  description="The app's bot token (`xoxb-...`).")
    signing_secret: str | None = Field(default=None, min_length=8, max_length=200,
                                       pattern=r"^[A-Za-z0-9]+$",
                                       description="The app's signing secret.")
    bot_user_id: str | None = Field(default=None, pattern=r"^[UW][A-Z0-9]{2,30}$",
                                    description="The bot's own user id, whose messages "
                                                "are never taken in (the events name it "
                                                "too).")
    notices: SlackNotices | None = Field(default=None,
                                         description="Left out: kept as they are.")


class SlackOut(BaseModel):
    id: UUID
    channel_id: str
    bot_user_id: str | None
    notices: SlackNotices
    events_url: str = Field(description="The Request URL of the app's Event Subscriptions "
                                        "(after the service's address).")
    status: Literal["ok", "degraded"] = Field(description="`degraded` while the last post "
                                                          "failed.")
    last_error: str | None
    last_error_at: datetime | None
    version: int
    created_at: datetime
    updated_at: datetime


class SlackEventOut(BaseModel):
    """What became of an event (or, for Slack's ``url_verification``, the challenge)."""

    outcome: Literal["ticket", "reply", "follow_up", "ignored", "duplicate"] | None = None
    reason: str | None = None
    ticket_id: UUID | None = None
    message_id: UUID | None = None
    challenge: str | None = None


class SlackPostOut(BaseModel):
    id: UUID
    kind: Literal["reply", "ticket_opened", "sla_breached"]
    message_id: UUID | None = Field(description="The ticket message it posts (replies).")
    channel_id: str
    thread_ts: str
    status: Literal["queued", "sent", "dead"]
    ts: str | None = Field(description="The ts Slack gave the post.")
    reason: str | None
    attempts: int
    created_at: datetime
    sent_at: datetime | None


class TicketSlack(BaseModel):
    data: list[SlackPostOut]
