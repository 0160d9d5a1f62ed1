"""Slack's side of the channel, as pure functions: request signatures, what an Events API
event asks of the desk, and the text the desk posts.

Slack signs every request it sends with the app's signing secret: ``X-Slack-Signature``
is ``v0=`` and the hex HMAC-SHA256 of ``v0:{X-Slack-Request-Timestamp}:{raw body}``.
A request whose timestamp is more than five minutes from now is refused whatever its
signature, so a captured request cannot be replayed later.

A message event is read as one of three things (``read_message``): a top-level message
in the connected channel (a new ticket), a reply in a thread (``thread_ts`` other than
its own ``ts``: a message on that thread's ticket), or noise: another channel, an edit
or deletion or join (any ``subtype`` but the ones that carry a person's words), a bot's
message, and the desk's own bot's above all, so that its posts never come back in as
customer messages.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from domain.validation import SUBJECT_MAX

REPLAY_WINDOW_SECONDS = 300
PEOPLE_SUBTYPES = frozenset({None, "thread_broadcast", "file_share"})
"""Message subtypes that carry what a person wrote; every other is noise."""
EXTERNAL_PREFIX = "slack:"
NOTICES = ("ticket_opened", "sla_breached")


class SignatureRefused(Exception):
    """The request is not Slack's, or not Slack's now: ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``v0=`` and the hex HMAC-SHA256 of ``v0:{timestamp}:{body}`` under ``secret``."""
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str | None, given: str | None, body: bytes,
           now: float) -> None:
    """Refuse (``SignatureRefused``) a request without both headers, with a timestamp
    outside the replay window of ``now`` (Unix seconds), or whose signature is wrong."""
    if not timestamp or not given:
        raise SignatureRefused("X-Slack-Request-Timestamp and X-Slack-Signature are required")
    try:
        sent = int(timestamp)
    except ValueError as exc:
        raise SignatureRefused("X-Slack-Request-Timestamp is not a Unix time") from exc
    if abs(now - sent) > REPLAY_WINDOW_SECONDS:
        raise SignatureRefused("the request is older than five minutes, or from the future")
    if not hmac.compare_digest(signature(secret, timestamp, body).encode("ascii"),
                               given.encode("ascii", "replace")):
        raise SignatureRefused("the signature does not match the signing secret")


@dataclass(frozen=True, slots=True)
class SlackMessage:
    """A person's message in the connected channel: ``thread_ts`` None for a top-level
    one (a new ticket), else the ts of the thread it replies in."""

    user: str
    ts: str
    text: str
    thread_ts: str | None
    name: str | None


def read_message(payload: dict[str, Any], channel_id: str, bot_user_id: str | None
                 ) -> SlackMessage | str:
    """What an ``event_callback`` payload asks of the desk: a ``SlackMessage``, or the
    reason it is noise (module docstring)."""
    event = payload.get("event")
    if not isinstance(event, dict) or event.get("type") != "message":
        return "not a message event"
    if event.get("channel") != channel_id:
        return "not the connected channel"
    subtype = event.get("subtype")
    if not (subtype is None or isinstance(subtype, str)) or subtype not in PEOPLE_SUBTYPES:
        return f"a {subtype} message"
    user, ts = event.get("user"), event.get("ts")
    if event.get("bot_id") or event.get("bot_profile") or not isinstance(user, str):
        return "a bot's message"
    authorizations = payload.get("authorizations")
    own = {a.get("user_id") for a in (authorizations if isinstance(authorizations, list) else [])
           if isinstance(a, dict) and a.get("is_bot")}
    if user == bot_user_id or user in own:
        return "the desk's own bot"
    if not isinstance(ts, str) or not ts:
        return "a message without a ts"
    thread = event.get("thread_ts")
    thread_ts = thread if isinstance(thread, str) and thread and thread != ts else None
    text = event.get("text") if isinstance(event.get("text"), str) else ""
    profile = event.get("user_profile")
    name = (profile.get("real_name") or profile.get("display_name")
            if isinstance(profile, dict) else None)
    return SlackMessage(user=user, ts=ts, text=text or "", thread_ts=thread_ts,
                        name=name if isinstance(name, str) else None)


def external_id(user: str) -> str:
    """A Slack user's external id on its contact."""
    return EXTERNAL_PREFIX + user


def contact_email(user: str) -> str:
    """The address a Slack user's contact is made with: Slack does not tell the desk a
    person's e-mail (that needs another scope), and a contact has one; ``.invalid``
    (RFC 2606) is no one's and never delivered."""
    return f"slack-{user.lower()}@slack.invalid"


def subject_of(text: str) -> str:
    """A new ticket's subject: the message's first non-blank line, cut to fit."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not line:
        return "Slack message"
    return line if len(line) <= SUBJECT_MAX else line[:SUBJECT_MAX - 1] + "…"


def notice_text(kind: str, subject: str, detail: str | None = None) -> str:
    """What a notice posted to a ticket's thread says (``ticket_split``: a ticket split
    off the thread's, told in that thread, which stays the other ticket's)."""
    if kind == "ticket_opened":
        return f"Thanks, we have opened a ticket for this: {subject}. We reply in this thread."
    if kind == "ticket_split":
        return f"Part of this request is now a ticket of its own: {subject}."
    target = (detail or "service").replace("_", " ")
    return (f"This request has gone past its {target} target; "
            "we are on it and will reply in this thread.")


__all__ = ["NOTICES", "REPLAY_WINDOW_SECONDS", "SignatureRefused", "SlackMessage",
           "contact_email", "external_id", "notice_text", "read_message", "signature",
           "subject_of", "verify"]
