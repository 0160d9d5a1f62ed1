"""Slack both ways over HTTP, against a local Slack (tests/support/slack.py) that checks
requests as Slack does: a signed message opens a ticket for the Slack user's contact and
a replayed event does nothing, thread replies land on the ticket, bots are never taken
in, a bad or stale signature is a 401, an agent's reply and the chosen notice are
posted to the thread once, and a Slack that is down leaves the reply queued, then
delivered."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from domain.clock import ManualClock
from domain.slack import signature
from tests.e2e.conftest import auth
from tests.support.mail import owner_fetch, soon
from tests.support.slack import (
    BOT_TOKEN,
    BOT_USER,
    CHANNEL,
    SIGNING_SECRET,
    FakeSlack,
    message_event,
    run_slack_jobs,
    signed_event,
)

CONNECT = {"channel_id": CHANNEL, "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET,
           "bot_user_id": BOT_USER}


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.stop()


async def connect(http: httpx.AsyncClient, admin: dict[str, str], **extra: Any
                  ) -> dict[str, Any]:
    r = await http.put("/v1/integrations/slack", headers=admin, json={**CONNECT, **extra})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def deliver(http: httpx.AsyncClient, url: str, body: dict[str, Any], **sign: Any
                  ) -> httpx.Response:
    raw, headers = signed_event(body, **sign)
    return await http.post(url, content=raw, headers=headers)


async def event(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = await deliver(http, url, body)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def posts(http: httpx.AsyncClient, h: dict[str, str], ticket: str) -> list[dict]:
    r = await http.get(f"/v1/tickets/{ticket}/slack", headers=h)
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


async def test_a_slack_message_becomes_a_ticket_and_replies_go_to_its_thread_once(
        http, db, services, tenant, owner, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    assert (await http.get("/v1/integrations/slack", headers=admin)).status_code == 404
    ready = (await http.get("/health/ready")).json()["checks"]["slack"]
    assert ready["status"] == "dormant"
    conn = await connect(http, admin, notices={"ticket_opened": True})
    assert conn["notices"] == {"ticket_opened": True, "sla_breached": False}
    url = conn["events_url"]
    got = await http.get("/v1/integrations/slack", headers=admin)
    for shown in (conn, got.json()):
        assert BOT_TOKEN not in str(shown) and SIGNING_SECRET not in str(shown)
    assert (await http.get("/health/ready")).json()["checks"]["slack"]["status"] == "ok"

    challenge = await event(http, url, {"type": "url_verification", "challenge": "c-123",
                                        "token": "unused"})
    assert challenge == {"challenge": "c-123"}

    top = slack.message()
    opened = message_event("Ev001", top, "Printer on fire\nThe one on floor 3.",
                           user_profile={"real_name": "Ann Lee"})
    first = await event(http, url, opened)
    assert first["outcome"] == "ticket"
    ticket = first["ticket_id"]
    again = await event(http, url, opened)  # Slack's retry of the same event
    assert again["outcome"] == "duplicate" and again["ticket_id"] == ticket
    listed = (await http.get("/v1/tickets", headers=admin)).json()["data"]
    assert [t["id"] for t in listed] == [ticket]
    t = (await http.get(f"/v1/tickets/{ticket}", headers=admin)).json()
    assert (t["source"], t["subject"]) == ("slack", "Printer on fire")
    contact = (await http.get(f"/v1/contacts/{t['requester']['contact_id']}",
                              headers=admin)).json()
    assert contact["external_id"] == "slack:UANN" and contact["name"] == "Ann Lee"

    reply = await event(http, url, message_event("Ev002", slack.message(), "Still burning",
                                                 thread_ts=top))
    assert (reply["outcome"], reply["ticket_id"]) == ("reply", ticket)
    noise = [message_event("Ev003", slack.message(), "bot", thread_ts=top, bot_id="B9"),
             message_event("Ev004", slack.message(), "ours", thread_ts=top, user=BOT_USER),
             message_event("Ev005", slack.message(), "edit", subtype="message_changed"),
             message_event("Ev006", slack.message(), "elsewhere", channel="C0OTHER")]
    assert [(await event(http, url, n))["outcome"] for n in noise] == ["ignored"] * 4
    thread = (await http.get(f"/v1/tickets/{ticket}/messages", headers=admin)).json()["data"]
    assert [(m["body"], m["author"]["kind"]) for m in thread] == [
        ("Printer on fire\nThe one on floor 3.", "customer"), ("Still burning", "customer")]

    agent_id = await owner.agent(tenant.tenant_id)
    agent = auth(await owner.key(tenant.tenant_id, "agent", agent_id))
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "On our way <with> an extinguisher & a hose"})
    assert r.status_code == 201
    note = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                           json={"body": "internal", "visibility": "internal"})
    assert note.status_code == 201

    async def all_sent() -> bool:
        found = await posts(http, admin, ticket)
        return len(found) == 2 and all(p["status"] == "sent" for p in found)

    await run_slack_jobs(services.store, ManualClock(soon()), slack.url, all_sent)
    assert slack.refusals == []
    # Both jobs were due at once, so either may have gone first.
    sent = {p["kind"]: p for p in await posts(http, admin, ticket)}
    assert set(sent) == {"ticket_opened", "reply"}
    in_thread = {p.ts: p for p in slack.posted(top)}
    assert set(in_thread) == {p["ts"] for p in sent.values()}
    answer, notice = in_thread[sent["reply"]["ts"]], in_thread[sent["ticket_opened"]["ts"]]
    assert answer.text == "On our way &lt;with&gt; an extinguisher &amp; a hose"
    assert "Printer on fire" in notice.text
    assert answer.metadata["event_payload"]["post_id"] == sent["reply"]["id"]
    jobs = await owner_fetch(db, "SELECT status FROM jobs WHERE kind = 'slack.post'")
    assert [j["status"] for j in jobs] == ["done", "done"]  # the note posts nothing
    # The desk's own post coming back as an event is not a customer message.
    echo = message_event("Ev007", answer.ts, answer.text, thread_ts=top,
                         user=BOT_USER, bot_id="BDESK")
    assert (await event(http, url, echo))["outcome"] == "ignored"


async def test_a_bad_or_stale_signature_is_a_401(http, tenant, make_tenant) -> None:
    admin = auth(tenant.admin_key)
    url = (await connect(http, admin))["events_url"]
    body = message_event("Ev100", "1700000001.000001", "hello")
    for sign in ({"secret": "0" * 32}, {"at": time.time() - 301},
                 {"at": time.time() + 301}):
        r = await deliver(http, url, body, **sign)
        assert r.status_code == 401, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "invalid_slack_signature"
    raw, headers = signed_event(body)
    unsigned = {k: v for k, v in headers.items() if k != "X-Slack-Signature"}
    assert (await http.post(url, content=raw, headers=unsigned)).status_code == 401
    tampered = raw.replace(b"hello", b"HELLO")
    assert (await http.post(url, content=tampered, headers=headers)).status_code == 401
    nowhere = await http.post(f"/v1/inbound/slack/{uuid.uuid4()}", content=raw,
                              headers=headers)
    assert nowhere.status_code == 401 and nowhere.json()["code"] == "invalid_slack_signature"
    # Another tenant's connection, with another secret, does not take this one's events.
    other = auth((await make_tenant("Globex")).admin_key)
    theirs = (await connect(http, other, signing_secret="b" * 32))["events_url"]
    assert (await http.post(theirs, content=raw, headers=headers)).status_code == 401
    assert (await http.get("/v1/tickets", headers=admin)).json()["data"] == []
    # Signed, but not JSON: a 400, never a 500.
    stamp = str(int(time.time()))
    bad = await http.post(url, content=b"{not json", headers={
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature(SIGNING_SECRET, stamp, b"{not json")})
    assert bad.status_code == 400 and bad.json()["code"] == "malformed_json"
    # Nothing was taken in by any of them.
    ok = await event(http, url, body)
    assert ok["outcome"] == "ticket"


async def test_slack_down_leaves_the_reply_queued_then_delivers_it(
        http, services, tenant, owner, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    url = (await connect(http, admin))["events_url"]
    top = slack.message()
    ticket = (await event(http, url, message_event("Ev200", top, "VPN down")))["ticket_id"]
    agent_id = await owner.agent(tenant.tenant_id)
    agent = auth(await owner.key(tenant.tenant_id, "agent", agent_id))
    slack.mode = "down"
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "Restart the client, please."})
    assert r.status_code == 201  # the request never waits on Slack

    clock = ManualClock(soon())

    async def tried() -> bool:
        return any(p["reason"] for p in await posts(http, admin, ticket))

    await run_slack_jobs(services.store, clock, slack.url, tried)
    [queued] = await posts(http, admin, ticket)
    assert queued["status"] == "queued" and "503" in queued["reason"]
    health = await http.get("/health/ready")
    assert health.status_code == 200
    assert health.json()["checks"]["slack"]["status"] == "degraded"
    assert (await http.get("/v1/integrations/slack", headers=admin)).json()[
        "status"] == "degraded"
    assert slack.posts == []

    slack.mode = "ok"
    clock.advance(seconds=120)

    async def sent() -> bool:
        return any(p["status"] == "sent" for p in await posts(http, admin, ticket))

    await run_slack_jobs(services.store, clock, slack.url, sent)
    [post] = await posts(http, admin, ticket)
    assert post["attempts"] == 2 and post["reason"] is None
    assert [p.ts for p in slack.posted(top)] == [post["ts"]]
    assert slack.refusals == []
    assert (await http.get("/health/ready")).json()["checks"]["slack"]["status"] == "ok"


async def test_a_permanent_refusal_is_dead_at_once_and_disconnecting_is_recorded(
        http, services, tenant, owner, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    url = (await connect(http, admin))["events_url"]
    top = slack.message()
    ticket = (await event(http, url, message_event("Ev300", top, "Hi")))["ticket_id"]
    agent_id = await owner.agent(tenant.tenant_id)
    agent = auth(await owner.key(tenant.tenant_id, "agent", agent_id))
    slack.mode = "error:not_in_channel"
    await http.post(f"/v1/tickets/{ticket}/messages", headers=agent, json={"body": "Hello"})

    async def dead() -> bool:
        return any(p["status"] == "dead" for p in await posts(http, admin, ticket))

    await run_slack_jobs(services.store, ManualClock(soon()), slack.url, dead)
    [post] = await posts(http, admin, ticket)
    assert post["attempts"] == 1 and "not_in_channel" in post["reason"]

    changed = await http.put("/v1/integrations/slack", headers=admin,
                             json={"channel_id": "C0NEWCHAN"})
    assert changed.status_code == 200 and changed.json()["channel_id"] == "C0NEWCHAN"
    gone = await http.delete("/v1/integrations/slack", headers=admin)
    assert gone.status_code == 200
    assert (await http.delete("/v1/integrations/slack", headers=admin)).status_code == 404
    assert (await deliver(http, url, message_event("Ev301", "1.2", "x"))).status_code == 401
    r = await http.get("/v1/events", params={"stream_id": str(tenant.tenant_id),
                                             "limit": 100}, headers=admin)
    recorded = [(e["type"], {k: v for k, v in e["data"].items() if k != "at"})
                for e in r.json()["data"] if e["type"].startswith("Slack")]
    conn_id = gone.json()["id"]
    notices = {"ticket_opened": False, "sla_breached": False}
    assert recorded == [
        ("SlackConnected", {"integration_id": conn_id, "channel_id": CHANNEL,
                            "bot_user_id": BOT_USER, "notices": notices}),
        ("SlackChanged", {"integration_id": conn_id, "channel_id": "C0NEWCHAN",
                          "bot_user_id": None, "notices": notices,
                          "bot_token_changed": False, "signing_secret_changed": False}),
        ("SlackDisconnected", {"integration_id": conn_id, "channel_id": "C0NEWCHAN"}),
    ]
    assert BOT_TOKEN not in r.text and SIGNING_SECRET not in r.text
    # Connecting needs both secrets.
    half = await http.put("/v1/integrations/slack", headers=admin,
                          json={"channel_id": CHANNEL, "bot_token": BOT_TOKEN})
    assert half.status_code == 422 and half.json()["code"] == "validation_failed"


async def test_breaches_of_a_slack_ticket_are_posted_to_its_thread_when_chosen(
        http, services, tenant, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    url = (await connect(http, admin, notices={"sla_breached": True}))["events_url"]
    top = slack.message()
    ticket = (await event(http, url, message_event("Ev400", top, "Laptop dead")))["ticket_id"]

    async def both_breaches_posted() -> bool:
        found = await posts(http, admin, ticket)
        return len(found) == 2 and all(p["status"] == "sent" for p in found)

    # Days later the first-response and resolution clocks have breached.
    await run_slack_jobs(services.store, ManualClock(soon() + timedelta(days=10)), slack.url,
                         both_breaches_posted, sla=True)
    assert {p["kind"] for p in await posts(http, admin, ticket)} == {"sla_breached"}
    texts = sorted(p.text for p in slack.posted(top))
    assert ["first response" in texts[0], "resolution" in texts[1]] == [True, True]
    assert slack.refusals == []  # no ticket_opened notice: it was not chosen


async def test_a_post_slack_never_takes_is_dead_after_its_last_attempt(
        http, services, tenant, owner, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    url = (await connect(http, admin))["events_url"]
    ticket = (await event(http, url, message_event("Ev500", slack.message(), "Hi")))[
        "ticket_id"]
    agent_id = await owner.agent(tenant.tenant_id)
    agent = auth(await owner.key(tenant.tenant_id, "agent", agent_id))
    slack.mode = "down"
    await http.post(f"/v1/tickets/{ticket}/messages", headers=agent, json={"body": "Hello"})
    clock = ManualClock(soon())
    for attempts in (1, 2, 3):  # run_slack_jobs gives a post three attempts

        async def tried(n: int = attempts) -> bool:
            return any(p["attempts"] == n for p in await posts(http, admin, ticket))

        await run_slack_jobs(services.store, clock, slack.url, tried)
        clock.advance(seconds=120)
    [post] = await posts(http, admin, ticket)
    assert (post["status"], post["attempts"]) == ("dead", 3) and "503" in post["reason"]
    assert slack.posts == []
