"""Slack's request signatures against Slack's own worked example, the replay window, and
which message events are a person's words in the connected channel."""

from __future__ import annotations

import pytest

from domain.slack import (
    SignatureRefused,
    SlackMessage,
    read_message,
    signature,
    subject_of,
    verify,
)
from handlers.slack_out import escape

# The example of Slack's "Verifying requests from Slack".
DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
DOC_TIMESTAMP = "1531420618"
DOC_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow"
    b"&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner"
    b"&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2F"
    b"commands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
DOC_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
SENT = float(DOC_TIMESTAMP)


def test_slacks_worked_example_signs_and_verifies() -> None:
    assert signature(DOC_SECRET, DOC_TIMESTAMP, DOC_BODY) == DOC_SIGNATURE
    verify(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, SENT + 299)
    verify(DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, SENT - 299)


@pytest.mark.parametrize(("secret", "timestamp", "given", "body", "now", "why"), [
    (DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, SENT + 301, "older than"),
    (DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, SENT - 301, "future"),
    ("another-secret", DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY, SENT, "does not match"),
    (DOC_SECRET, DOC_TIMESTAMP, DOC_SIGNATURE, DOC_BODY + b"&x=1", SENT, "does not match"),
    (DOC_SECRET, "1531420619", DOC_SIGNATURE, DOC_BODY, SENT, "does not match"),
    (DOC_SECRET, DOC_TIMESTAMP, "v0=" + "0" * 64, DOC_BODY, SENT, "does not match"),
    (DOC_SECRET, DOC_TIMESTAMP, "v0=é", DOC_BODY, SENT, "does not match"),
    (DOC_SECRET, None, DOC_SIGNATURE, DOC_BODY, SENT, "required"),
    (DOC_SECRET, DOC_TIMESTAMP, None, DOC_BODY, SENT, "required"),
    (DOC_SECRET, "soon", DOC_SIGNATURE, DOC_BODY, SENT, "Unix time"),
])
def test_a_wrong_or_stale_signature_is_refused(secret: str, timestamp: str | None,
                                               given: str | None, body: bytes, now: float,
                                               why: str) -> None:
    with pytest.raises(SignatureRefused, match=why):
        verify(secret, timestamp, given, body, now)


def callback(**event: object) -> dict[str, object]:
    return {"type": "event_callback", "event_id": "Ev1",
            "authorizations": [{"user_id": "UBOT", "is_bot": True}],
            "event": {"type": "message", "channel": "C1", "user": "U1", "ts": "10.1",
                      "text": "Printer on fire", **event}}


def test_a_top_level_message_and_a_thread_reply() -> None:
    assert read_message(callback(), "C1", None) == SlackMessage(
        user="U1", ts="10.1", text="Printer on fire", thread_ts=None, name=None)
    reply = read_message(callback(ts="11.2", thread_ts="10.1",
                                  user_profile={"real_name": "Ann"}), "C1", None)
    assert reply == SlackMessage(user="U1", ts="11.2", text="Printer on fire",
                                 thread_ts="10.1", name="Ann")
    # A thread's parent carries its own ts as thread_ts: still top-level.
    parent = read_message(callback(thread_ts="10.1"), "C1", None)
    assert isinstance(parent, SlackMessage) and parent.thread_ts is None


@pytest.mark.parametrize(("event", "own", "why"), [
    ({"channel": "C2"}, None, "not the connected channel"),
    ({"subtype": "message_changed"}, None, "message_changed"),
    ({"subtype": "bot_message", "bot_id": "B1"}, None, "message"),
    ({"bot_id": "B1"}, None, "a bot's message"),
    ({"user": "UBOT"}, None, "own bot"),
    ({"user": "UOWN"}, "UOWN", "own bot"),
    ({"type": "app_mention"}, None, "not a message event"),
])
def test_noise_is_never_a_customer_message(event: dict[str, object], own: str | None,
                                           why: str) -> None:
    read = read_message(callback(**event), "C1", own)
    assert isinstance(read, str) and why in read


def test_odd_shapes_are_noise_or_read_never_an_error() -> None:
    assert isinstance(read_message(callback(subtype=["x"]), "C1", None), str)
    assert isinstance(read_message(callback(user=7), "C1", None), str)
    assert isinstance(read_message(callback(ts=None), "C1", None), str)
    assert isinstance(read_message({"event": "message"}, "C1", None), str)
    odd = {**callback(text=None, thread_ts=5, user_profile="Ann"), "authorizations": 3}
    assert read_message(odd, "C1", None) == SlackMessage(
        user="U1", ts="10.1", text="", thread_ts=None, name=None)


def test_subjects_and_escaping() -> None:
    assert subject_of("\n  Printer on fire \nreally") == "Printer on fire"
    assert subject_of("") == "Slack message"
    assert len(subject_of("x" * 500)) == 200
    assert escape("a < b & c > d") == "a &lt; b &amp; c &gt; d"
