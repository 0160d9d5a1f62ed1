"""A ticket split off another is a new ticket to rules and to Slack, and no new request
to its requester (docs/teamwork.md, "Splitting a ticket"): rules on ``TicketOpened``
fire on it (``TicketSplitFrom`` and ``is_not`` tell the two apart), the connection's
``ticket_opened`` notice is posted in the source's Slack thread, and no acknowledgement
is mailed, against the session's real SMTP server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from domain.clock import ManualClock
from handlers.rule_engine import RuleEngine
from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.mail import make_mailbox, owner_fetch, run_mail_jobs, smtp_at, soon
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
from tests.support.smtp import SmtpServer


async def _ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def _mail_rule(name: str, conditions: list[dict[str, Any]], subject: str) -> dict[str, Any]:
    return {"name": name, "conditions": conditions, "actions": [
        {"type": "send_mail", "value": {"to": "requester", "template": {
            "subject": subject, "body": "Ticket {{ ticket_id }}.\n-- {{ desk }}\n"}}}]}


OPENED = {"field": "event", "op": "is", "value": "TicketOpened"}
SPLIT_OFF = {"field": "event", "op": "is", "value": "TicketSplitFrom"}
NOT_SPLIT_OFF = {"field": "event", "op": "is_not", "value": "TicketSplitFrom"}


async def test_a_split_off_ticket_fires_opening_rules_and_is_not_acknowledged(
        http, db, services, tenant, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    doc = await _ok(await http.get("/v1/settings", headers=admin))
    await _ok(await http.put("/v1/settings", headers=admin, json=doc | {
        "mail_notifications": {**doc["mail_notifications"], "acknowledgement": True}}))
    # Every opening, a split-off's too, on the requester's channel (the source's).
    routed = await _ok(await http.post("/v1/rules", headers=admin, json={
        "name": "Tag new mail tickets",
        "conditions": [OPENED, {"field": "channel", "op": "is", "value": "email"}],
        "actions": [{"type": "add_tags", "value": ["triaged"]}]}), 201)
    welcome = await _ok(await http.post("/v1/rules", headers=admin, json=_mail_rule(
        "Welcome", [OPENED, NOT_SPLIT_OFF], "Welcome: {{ subject }}")), 201)
    told = await _ok(await http.post("/v1/rules", headers=admin, json=_mail_rule(
        "Split told", [SPLIT_OFF], "Now a ticket of its own: {{ subject }}")), 201)
    bad = await http.post("/v1/rules", headers=admin, json={
        "name": "x", "conditions": [{"field": "event", "op": "is_not", "value": "Nope"}],
        "actions": [{"type": "add_tags", "value": ["x"]}]})
    assert bad.status_code == 422, bad.text
    engine = Projector(services.pool, [RuleEngine(services.store.keyring)])
    await engine.ensure_checkpoints()

    to = f"split-{uuid.uuid4().hex[:8]}@example.com"
    source = await _ok(await http.post("/v1/tickets", headers=admin, json=NEW_TICKET | {
        "subject": "Printer and fax", "requester": {"email": to, "name": "Rita"}}), 201)
    sid = source["id"]
    fax = (await _ok(await http.post(f"/v1/tickets/{sid}/messages", headers=admin,
                                     json={"body": "And the fax?"}), 201))["message"]["id"]
    await engine.drain()

    async def sent(kinds: set[str]) -> bool:
        rows = await owner_fetch(db, "SELECT kind, status FROM mail_notifications "
                                     "WHERE to_address = $1", to)
        return {r["kind"] for r in rows} == kinds and all(r["status"] == "sent" for r in rows)

    await run_mail_jobs(services, ManualClock(soon()),
                        lambda: sent({"acknowledgement", "rule"}))
    assert len(smtp_server.to(to)) == 2  # the acknowledgement and the welcome

    split = await _ok(await http.post(f"/v1/tickets/{sid}/split", headers=admin,
                                      json={"message_ids": [fax], "subject": "Fax"}))
    nid = split["new_ticket"]["id"]
    await engine.drain()
    await engine.drain()  # nothing more: each rule fired once
    new = await _ok(await http.get(f"/v1/tickets/{nid}", headers=admin))
    assert "triaged" in new["tags"] and new["source"] == "email"
    dry = await _ok(await http.get(f"/v1/tickets/{nid}/rules", headers=admin))
    fired = sorted((f["rule_id"], f["outcome"]) for f in dry["fired"])
    assert fired == sorted([(routed["id"], "fired"), (told["id"], "fired")])
    assert welcome["id"] not in {f["rule_id"] for f in dry["fired"]}

    async def three_sent() -> bool:
        rows = await owner_fetch(db, "SELECT status FROM mail_notifications "
                                     "WHERE to_address = $1", to)
        return len(rows) == 3 and all(r["status"] == "sent" for r in rows)

    await run_mail_jobs(services, ManualClock(soon()), three_sent)
    rows = await owner_fetch(db, "SELECT kind, ticket_id FROM mail_notifications "
                                 "WHERE to_address = $1", to)
    # No acknowledgement of the split-off ticket: its requester asked nothing new; the
    # rule that tells of the split is the only mail it makes.
    assert sorted((r["kind"], str(r["ticket_id"]) == nid) for r in rows) == [
        ("acknowledgement", False), ("rule", False), ("rule", True)]
    subjects = [str(m.message()["Subject"]) for m in smtp_server.to(to)]
    assert len(subjects) == 3 and subjects[2] == "Now a ticket of its own: Fax", subjects
    assert "Welcome: Printer and fax" in subjects[:2]
    jobs = await owner_fetch(db, "SELECT count(*) AS n FROM jobs WHERE kind = 'mail.notify' "
                                 "AND payload ->> 'stream_id' = $1", nid)
    assert jobs[0]["n"] == 0


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack().start()
    try:
        yield fake
    finally:
        fake.stop()


CONNECT = {"channel_id": CHANNEL, "bot_token": BOT_TOKEN, "signing_secret": SIGNING_SECRET,
           "bot_user_id": BOT_USER}


async def _event(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    raw, headers = signed_event(body)
    return dict(await _ok(await http.post(url, content=raw, headers=headers)))


async def test_a_split_off_slack_ticket_is_told_in_its_sources_thread_when_chosen(
        http, db, services, tenant, slack: FakeSlack) -> None:
    admin = auth(tenant.admin_key)
    url = (await _ok(await http.put("/v1/integrations/slack", headers=admin, json=CONNECT | {
        "notices": {"ticket_opened": True}})))["events_url"]
    top = slack.message()
    sid = (await _event(http, url, message_event("Ev801", top, "VPN down")))["ticket_id"]
    reply = await _event(http, url, message_event("Ev802", slack.message(),
                                                  "Also my badge is broken", thread_ts=top))
    thread = await _ok(await http.get(f"/v1/tickets/{sid}/messages", headers=admin))
    badge = next(m["id"] for m in thread["data"] if m["body"].startswith("Also"))
    assert reply["ticket_id"] == sid
    split = await _ok(await http.post(f"/v1/tickets/{sid}/split", headers=admin,
                                      json={"message_ids": [badge], "subject": "Badge"}))
    nid = split["new_ticket"]["id"]
    assert split["new_ticket"]["source"] == "slack"

    async def posts(ticket: str) -> list[dict[str, Any]]:
        return list((await _ok(await http.get(f"/v1/tickets/{ticket}/slack",
                                              headers=admin)))["data"])

    async def both_sent() -> bool:
        found = await posts(sid) + await posts(nid)
        return len(found) == 2 and all(p["status"] == "sent" for p in found)

    await run_slack_jobs(services.store, ManualClock(soon()), slack.url, both_sent)
    assert slack.refusals == []
    [opened], [told] = await posts(sid), await posts(nid)
    assert (opened["kind"], told["kind"]) == ("ticket_opened", "ticket_opened")
    # The split-off ticket has no thread of its own: it is told in its source's.
    assert told["thread_ts"] == top
    texts = {p.ts: p.text for p in slack.posted(top)}
    assert texts[told["ts"]] == "Part of this request is now a ticket of its own: Badge."
    assert "VPN down" in texts[opened["ts"]]

    # Not chosen: a split posts nothing.
    await _ok(await http.put("/v1/integrations/slack", headers=admin,
                             json=CONNECT | {"notices": {"ticket_opened": False}}))
    fax = await _event(http, url, message_event("Ev803", slack.message(), "And the fax",
                                                thread_ts=top))
    again = await _ok(await http.post(f"/v1/tickets/{sid}/split", headers=admin,
                                      json={"message_ids": [fax["message_id"]]}))
    jobs = await owner_fetch(db, "SELECT count(*) AS n FROM jobs WHERE kind = 'slack.post' "
                                 "AND payload ->> 'ticket_id' = $1",
                             again["new_ticket"]["id"])
    assert jobs[0]["n"] == 0
