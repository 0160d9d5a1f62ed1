"""Erasing a contact over HTTP: admins only, a reason required; afterwards the
ticket, its history and the feed of events show the personal fields as erased, the
chain verifies, and commands that would write about the contact answer 410."""

from __future__ import annotations

import asyncio
import os

import asyncpg

from api.cli.keys import rotate_tenant
from eventstore.keys import Keyring
from eventstore.store import EventStore
from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.dump import dump

EMAIL = "erase.me@example.com"


async def test_an_admin_erases_a_contact_and_its_data_reads_as_erased(http, tenant, owner):
    admin = tenant.admin_key
    agent = await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id))
    opened = await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "subject": "Please forget me", "requester": {"email": EMAIL, "name": "Erin"}})
    assert opened.status_code == 201, opened.text
    ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=auth(admin),
                        json={"body": "our reply", "visibility": "public"})
    assert r.status_code == 201, r.text

    held = await http.get(f"/v1/contacts/{contact}/export", headers=auth(admin))
    assert held.status_code == 200, held.text
    doc = held.json()
    assert doc["contact"]["email"] == EMAIL and [t["id"] for t in doc["tickets"]] == [ticket]
    assert [m["body"] for m in doc["messages"]] == [NEW_TICKET["body"], "our reply"]
    assert [e["type"] for e in doc["events"]] == ["ContactCreated", "TicketOpened",
                                                  "MessageAdded"]
    assert doc["events"][1]["data"]["subject"] == "Please forget me"
    assert (await http.get(f"/v1/contacts/{contact}/export",
                           headers=auth(agent))).status_code == 403

    url = f"/v1/contacts/{contact}/erase"
    assert (await http.post(url, headers=auth(agent), json={"reason": "x"})).status_code == 403
    missing = await http.post(url, headers=auth(admin), json={})
    assert missing.status_code in (400, 422) and missing.headers["content-type"].startswith(
        "application/problem+json")
    erased = await http.post(url, headers=auth(admin), json={"reason": "GDPR request 17"})
    assert erased.status_code == 200, erased.text
    assert erased.json() == {"contact_id": contact, "events": 3, "fields": 7, "tickets": 1,
                             "unsealed_events": 0, "files": 0}

    view = (await http.get(f"/v1/tickets/{ticket}", headers=auth(admin))).json()
    assert view["subject"] == "" and EMAIL not in str(view)
    history = (await http.get(f"/v1/tickets/{ticket}/history", headers=auth(admin))).json()
    text = str(history)
    assert EMAIL not in text and "Please forget me" not in text and "our reply" not in text
    assert "'erased': True" in text
    verify = await http.get("/v1/audit/verify", headers=auth(admin))
    assert verify.status_code == 200 and verify.json()["ok"] is True, verify.text

    after = (await http.get(f"/v1/contacts/{contact}/export", headers=auth(admin))).json()
    assert EMAIL not in str(after) and "our reply" not in str(after)
    by_type = {e["type"]: e["data"] for e in after["events"]}
    assert by_type["TicketOpened"]["body"] == {"erased": True}
    assert by_type["ContactCreated"]["email"] == {"erased": True}
    assert by_type["ContactErased"]["reason"] == "GDPR request 17"

    again = await http.post(url, headers=auth(admin), json={"reason": "again"})
    assert again.status_code == 410 and again.json()["code"] == "contact_erased"
    reply = await http.post(f"/v1/tickets/{ticket}/messages", headers=auth(admin),
                            json={"body": "still there?", "visibility": "public"})
    assert reply.status_code == 410 and reply.json()["code"] == "subject_erased"
    by_id = await http.post("/v1/tickets", headers=auth(admin),
                            json=NEW_TICKET | {"requester": {"contact_id": contact}})
    assert by_id.status_code == 410


async def test_data_keys_this_server_cannot_unwrap_answer_503_naming_the_key(http, tenant,
                                                                             services):
    """Another process re-wrapped the data keys with a key-encryption key this server
    was not given (a rotation half rolled out): reading sealed data is a 503 naming
    the problem, never a 500 or data shown; the read models, in the clear, still serve."""
    admin = tenant.admin_key
    opened = await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET)
    assert opened.status_code == 201, opened.text
    ticket = opened.json()["id"]
    ready = (await http.get("/health/ready")).json()["checks"]["data_keys"]
    assert ready["status"] == "ok"
    store = services.store
    secret = await store.pool.fetchval(
        "SELECT value FROM instance_secrets WHERE name = 'data_key'")
    elsewhere = EventStore(store.pool, keyring=Keyring(os.urandom(32), bytes(secret)))
    assert await rotate_tenant(elsewhere, tenant.tenant_id) == 1

    history = await http.get(f"/v1/tickets/{ticket}/history", headers=auth(admin))
    assert history.status_code == 503, history.text
    assert history.headers["content-type"].startswith("application/problem+json")
    assert history.json()["code"] == "data_key_mismatch"
    assert "DATA_KEY" in history.json()["detail"]
    assert (await http.get(f"/v1/tickets/{ticket}", headers=auth(admin))).status_code == 200
    # Readiness says so, without taking the process out: what is not sealed still serves.
    ready = await http.get("/health/ready")
    assert ready.status_code == 200
    check = ready.json()["checks"]["data_keys"]
    assert check["status"] == "degraded" and "DATA_KEY" in check["detail"]


async def test_a_personal_field_reads_erased_after_the_contacts_erasure(http, tenant):
    admin = tenant.admin_key
    r = await http.post("/v1/ticket-fields", headers=auth(admin), json={
        "key": "passport", "title": "Passport number", "type": "text", "personal": True})
    assert r.status_code == 201, r.text
    opened = await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "requester": {"email": EMAIL}, "fields": {"passport": "P-7781234"}})
    assert opened.status_code == 201, opened.text
    ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
    assert opened.json()["fields"] == {"passport": "P-7781234"}
    history = (await http.get(f"/v1/tickets/{ticket}/history", headers=auth(admin))).json()
    assert history["data"][0]["data"]["fields"] == {"passport": "P-7781234"}

    erased = await http.post(f"/v1/contacts/{contact}/erase", headers=auth(admin),
                             json={"reason": "request"})
    assert erased.status_code == 200, erased.text
    view = (await http.get(f"/v1/tickets/{ticket}", headers=auth(admin))).json()
    assert view["fields"] == {"passport": ""}
    history = (await http.get(f"/v1/tickets/{ticket}/history", headers=auth(admin))).json()
    assert history["data"][0]["data"]["fields"] == {"passport": {"erased": True}}
    assert "P-7781234" not in str(history)
SECRETS = {"email": "kept.in.replays@example.com", "name": "Replay Rosalind",
           "subject": "Idempotent subject 9137", "body": "Idempotent opening text 5521",
           "reply": "Idempotent reply text 7702"}


async def test_answers_kept_for_replays_are_withheld_by_an_erasure(http, tenant, db):
    """Commands sent with an Idempotency-Key before an erasure: their recorded answers
    (the ticket's document, requester and all) go with the contact, and a replay
    answers 410 rather than running the command again."""
    admin = auth(tenant.admin_key)
    opening = NEW_TICKET | {"subject": SECRETS["subject"], "body": SECRETS["body"],
                            "requester": {"email": SECRETS["email"], "name": SECRETS["name"]}}
    opened = await http.post("/v1/tickets", headers=admin | {"Idempotency-Key": "open-1"},
                             json=opening)
    assert opened.status_code == 201, opened.text
    ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
    reply = {"body": SECRETS["reply"], "visibility": "public"}
    replied = await http.post(f"/v1/tickets/{ticket}/messages",
                              headers=admin | {"Idempotency-Key": "reply-1"}, json=reply)
    assert replied.status_code == 201, replied.text
    assert SECRETS["email"].encode() in dump(db.admin_url)

    erased = await http.post(f"/v1/contacts/{contact}/erase", headers=admin,
                             json={"reason": "GDPR request"})
    assert erased.status_code == 200, erased.text

    held = dump(db.admin_url)
    for secret in SECRETS.values():
        assert secret.encode() not in held, secret
    again = await http.post("/v1/tickets", headers=admin | {"Idempotency-Key": "open-1"},
                            json=opening)
    assert again.status_code == 410 and again.json()["code"] == "subject_erased", again.text
    assert again.headers["content-type"].startswith("application/problem+json")
    again = await http.post(f"/v1/tickets/{ticket}/messages",
                            headers=admin | {"Idempotency-Key": "reply-1"}, json=reply)
    assert again.status_code == 410 and again.json()["code"] == "subject_erased", again.text
    conn = await asyncpg.connect(db.admin_url)
    try:  # the replay opened no second ticket
        assert await conn.fetchval("SELECT count(*) FROM tickets WHERE tenant_id = $1",
                                   tenant.tenant_id) == 1
    finally:
        await conn.close()


async def test_commands_racing_an_erasure_over_http_answer_or_are_refused(http, tenant):
    """Replies, state changes and a second erasure sent together with an erasure, round
    after round: each answers as committed before it, or 410; never a 500 (a deadlock
    or otherwise)."""
    admin = auth(tenant.admin_key)
    seen: set[int] = set()
    for round_ in range(15):
        opened = await http.post("/v1/tickets", headers=admin, json=NEW_TICKET | {
            "requester": {"email": f"racer{round_}@example.com"}})
        assert opened.status_code == 201, opened.text
        ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
        requests = [
            http.post(f"/v1/tickets/{ticket}/messages", headers=admin,
                      json={"body": "racing", "visibility": "public"}),
            http.post(f"/v1/tickets/{ticket}/state", headers=admin, json={"state": "pending"}),
            http.post(f"/v1/contacts/{contact}/erase", headers=admin, json={"reason": "r"}),
            http.post(f"/v1/tickets/{ticket}/messages", headers=admin,
                      json={"body": "racing too", "visibility": "internal"}),
            http.post(f"/v1/contacts/{contact}/erase", headers=admin, json={"reason": "r"}),
        ]
        answers = await asyncio.gather(*requests[round_ % 5:], *requests[:round_ % 5])
        for r in answers:
            assert r.status_code in (200, 201, 409, 410), r.text
            seen.add(r.status_code)
    assert 410 in seen
