"""Notification mail over HTTP, against the session's real SMTP server (aiosmtpd):
invitations, portal password links, acknowledgements, assignment and breach notices,
each sent once by the scheduler after its commit with the tenant's sandboxed
templates; dormant without a mailbox; an SMTP server that is down loses nothing; and
templates checked on save and previewed without changing anything."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta
from typing import Any

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from api.cli.keys import rotate_sealed
from domain.clock import ManualClock
from domain.values import Role
from eventstore.keys import Keyring
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import mail_in
from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.mail import (
    PUBLIC_URL,
    corpus,
    inbound,
    make_mailbox,
    owner_fetch,
    run_mail_jobs,
    smtp_at,
    soon,
)
from tests.support.smtp import SmtpServer, free_port


async def _put_settings(http: httpx.AsyncClient, admin: dict[str, str], **keys: Any
                        ) -> httpx.Response:
    doc = (await http.get("/v1/settings", headers=admin)).json()
    return await http.put("/v1/settings", headers=admin, json={**doc, **keys})


async def _notices(db: Any) -> list[Any]:
    return await owner_fetch(db, "SELECT kind, to_address, status, reason, attempts, data, "
                                 "rfc_message_id FROM mail_notifications ORDER BY created_at")


def _text(delivered: Any) -> str:
    return str(delivered.message().get_body(("plain",)).get_content()).replace("\r\n", "\n")


async def test_notifications_are_mailed_once_with_the_tenants_templates(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    # Dormant without a mailbox: an invitation is only the token shown to the admin.
    quiet = await http.post("/v1/agents/invitations", headers=admin,
                            json={"email": "quiet@example.com", "name": "Quiet"})
    assert quiet.status_code == 201 and quiet.json()["token"]
    assert await _notices(db) == []

    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    # Templates are checked on save: one that does not compile, one naming a
    # placeholder its kind lacks, one the sandbox refuses; each a 422 naming the part.
    for template, field, said in (
            ({"subject": "{% if %}", "body": "x"}, "subject", "does not compile"),
            ({"subject": "Hi", "body": "{{ password }}"}, "body", "names password"),
            ({"subject": "Hi", "body": "{{ name.__class__.__mro__ }}"}, "body", "unsafe")):
        bad = await _put_settings(http, admin, mail_templates={"acknowledgement": template})
        assert bad.status_code == 422, bad.text
        problem = bad.json()
        assert said in problem["detail"], problem
        assert problem["errors"][0]["loc"] == ["body", "mail_templates", "acknowledgement",
                                               field]
    ok = await _put_settings(http, admin, mail_notifications={
        "invitation": True, "portal_link": True, "acknowledgement": True,
        "assignment": True, "breach": True}, mail_templates={"acknowledgement": {
            "subject": "Got it: {{ subject }} {{ reference }}",
            "body": "Dear {{ name }},\n{% if reference %}Keep {{ reference }} in the "
                    "subject.{% endif %}\n-- {{ desk }}\n"}})
    assert ok.status_code == 200, ok.text

    invited = (await http.post("/v1/agents/invitations", headers=admin, json={
        "email": "sam@example.com", "name": "Sam"})).json()
    contact = (await http.post("/v1/contacts", headers=admin, json={
        "email": "pat@example.com", "name": "Pat"})).json()
    link = await http.post(f"/v1/contacts/{contact['id']}/portal-link", headers=admin)
    assert link.status_code == 201, link.text
    ticket = (await inbound(http, box, corpus("gmail.eml")))["ticket_id"]
    agent_id = await owner.agent(tenant.tenant_id)
    assigned = await http.post(f"/v1/tickets/{ticket}/assignee", headers=admin,
                               json={"agent_id": str(agent_id)})
    assert assigned.status_code == 200, assigned.text
    # Made in the request's transaction, the token sealed with the mail.
    made = {n["kind"]: n for n in await _notices(db)}
    assert set(made) == {"invitation", "portal_link"}
    assert invited["token"].encode() not in bytes(made["invitation"]["data"])

    async def breached_and_sent() -> bool:
        rows = await _notices(db)
        return (any(n["kind"] == "breach" for n in rows)
                and all(n["status"] == "sent" for n in rows))

    # Days later: the first-response and resolution clocks have breached, and their
    # notices go out too, to the assignee.
    await run_mail_jobs(services, ManualClock(soon() + timedelta(days=10)), breached_and_sent,
                        sla=True)
    rows = await _notices(db)
    assert sorted((n["kind"], n["to_address"]) for n in rows) == [
        ("acknowledgement", "ann@example.com"), ("assignment", f"{agent_id}@example.com"),
        ("breach", f"{agent_id}@example.com"), ("breach", f"{agent_id}@example.com"),
        ("invitation", "sam@example.com"),
        ("portal_link", "pat@example.com")]
    assert all(n["data"] is None and n["attempts"] == 1 for n in rows)  # tokens forgotten

    [mail] = smtp_server.to("sam@example.com")
    message = mail.message()
    assert message["From"] == "Acme support <support@acme.test>"
    assert message["Subject"] == "You are invited to Acme support"
    assert message["Auto-Submitted"] == "auto-generated"
    assert invited["token"] in _text(mail) and f"{PUBLIC_URL}/console/" in _text(mail)
    [mail] = smtp_server.to("pat@example.com")
    slug = (await owner_fetch(db, "SELECT slug FROM tenants WHERE id = $1",
                              tenant.tenant_id))[0]["slug"]
    assert (f"{PUBLIC_URL}/portal/{slug}/#/password/{link.json()['token']}"
            in _text(mail))
    # The acknowledgement threads back to its ticket: its Reply-To token, its answer to
    # the opening mail, the tenant's own template.
    [token] = [r["token"] for r in await owner_fetch(
        db, "SELECT token FROM mail_threads WHERE ticket_id = $1", uuid.UUID(ticket))]
    [ack] = [d for d in smtp_server.to("ann@example.com")
             if d.message()["Auto-Submitted"] == "auto-replied"]
    message = ack.message()
    assert message["Subject"] == f"Got it: Printer on fire #{token}"
    assert message["Reply-To"] == f"support+{token}@acme.test"
    assert message["In-Reply-To"] == "<CAF=gmail-0001@mail.gmail.com>"
    assert _text(ack) == f"Dear Ann Example,\nKeep #{token} in the subject.\n-- Acme support\n"
    ack_row = next(n for n in rows if n["kind"] == "acknowledgement")
    assert message["Message-ID"] == f"<{ack_row['rfc_message_id']}>"
    to_agent = smtp_server.to(f"{agent_id}@example.com")
    assert sorted(d.message()["Subject"] for d in to_agent) == [
        "Assigned to you: Printer on fire", "SLA breached (first_response): Printer on fire",
        "SLA breached (resolution): Printer on fire"]
    # A customer's answer to the acknowledgement lands on the ticket, never a new one.
    answer = await inbound(http, box, (
        f"From: ann@example.com\nTo: support+{token}@acme.test\nSubject: Re: Got it\n"
        f"In-Reply-To: {message['Message-ID']}\nMessage-ID: <ack-answer-1@example.com>\n\n"
        "Thanks.\n").encode())
    assert (answer["outcome"], answer["ticket_id"]) == ("reply", ticket)

    # Exactly once: every job done, one mail per notification.
    jobs = await owner_fetch(db, "SELECT status FROM jobs WHERE kind = 'mail.notify'")
    assert len(jobs) == 6 and {j["status"] for j in jobs} == {"done"}
    assert len(smtp_server.to(f"{agent_id}@example.com")) == 3


async def test_smtp_down_loses_no_notification_and_a_preview_changes_nothing(
        http, db, services, tenant, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(free_port()))  # nothing listens
    invited = await http.post("/v1/agents/invitations", headers=admin,
                              json={"email": "lee@example.com", "name": "Lee"})
    assert invited.status_code == 201  # the request never waits on SMTP
    clock = ManualClock(soon())

    async def tried() -> bool:
        return any(n["reason"] for n in await _notices(db))

    await run_mail_jobs(services, clock, tried)
    [row] = await _notices(db)
    assert row["status"] == "queued" and "Connection refused" in row["reason"]
    assert row["data"] is not None  # kept until it is sent
    fixed = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={
        "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "security": "none"}})
    assert fixed.status_code == 200, fixed.text
    clock.advance(seconds=120)

    async def sent() -> bool:
        return all(n["status"] == "sent" for n in await _notices(db))

    await run_mail_jobs(services, clock, sent)
    [row] = await _notices(db)
    assert row["attempts"] == 2 and row["reason"] is None and row["data"] is None
    [mail] = smtp_server.to("lee@example.com")
    assert invited.json()["token"] in _text(mail)

    # The preview: the default, given values, a template not yet saved; and what it
    # refuses. It saves and sends nothing.
    before = (await http.get("/v1/settings", headers=admin)).headers["ETag"]
    jobs_before = await owner_fetch(db, "SELECT count(*) AS n FROM jobs")
    default = await http.post("/v1/mail-templates/preview", headers=admin,
                              json={"kind": "breach", "data": {"metric": "resolution"}})
    assert default.status_code == 200, default.text
    shown = default.json()
    assert shown["subject"] == "SLA breached (resolution): Printer on fire"
    assert shown["own"] is False and "due_at" in shown["placeholders"]
    assert "<p>Hello Sam Agent,</p>" in shown["html"]
    draft = await http.post("/v1/mail-templates/preview", headers=admin, json={
        "kind": "portal_link", "body": "{{ name | upper }}: {{ link }}",
        "data": {"name": "Zoë <b>"}})
    assert draft.status_code == 200, draft.text
    assert draft.json()["body"] == ("ZOË <B>: https://desk.example.com/portal/acme/#/password/"
                                    "hdp_sample-token")
    assert "ZOË &lt;B&gt;" in draft.json()["html"]
    for body, said in (({"kind": "breach", "body": "{{ token }}"}, "names token"),
                       ({"kind": "breach", "subject": "{{ x"}, "does not compile"),
                       ({"kind": "breach", "data": {"token": "t"}}, "no placeholder token"),
                       ({"kind": "nope"}, "")):
        refused = await http.post("/v1/mail-templates/preview", headers=admin, json=body)
        assert refused.status_code == 422, refused.text
        assert said in refused.text
    assert (await http.get("/v1/settings", headers=admin)).headers["ETag"] == before
    assert await owner_fetch(db, "SELECT count(*) AS n FROM jobs") == jobs_before


async def test_a_rule_mails_the_requester_once_threaded_and_auto_submitted(
        http, db, services, tenant, smtp_server: SmtpServer) -> None:
    from handlers.rule_engine import RuleEngine
    from projections.projector import Projector

    admin = auth(tenant.admin_key)
    rule = {"name": "Say hello", "conditions": [
        {"field": "event", "op": "is", "value": "TicketOpened"}],
        "actions": [{"type": "send_mail", "value": {"to": "requester", "template": {
            "subject": "Hello {{ requester_name }}: {{ subject }}",
            "body": "We have ticket {{ ticket_id }} ({{ priority }}) for {{ email }}.\n"
                    "-- {{ desk }}\n"}}}]}
    # Refused while the tenant has no mailbox to send from.
    refused = await http.post("/v1/rules", headers=admin, json=rule)
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"] == ["body", "actions", "0", "value"]
    await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    made = await http.post("/v1/rules", headers=admin, json=rule)
    assert made.status_code == 201, made.text
    engine = Projector(services.pool, [RuleEngine(services.store.keyring)])
    await engine.ensure_checkpoints()
    to = f"rule-{uuid.uuid4().hex[:8]}@example.com"
    ticket = (await http.post("/v1/tickets", headers=admin, json={
        "subject": "Printer on fire", "body": "It is.", "priority": "high",
        "requester": {"email": to, "name": "Rita"}})).json()
    await engine.drain()
    await engine.drain()  # nothing more: the firing is done
    rows = await owner_fetch(db, "SELECT kind, to_address, status FROM mail_notifications "
                                 "WHERE kind = 'rule'")
    assert [tuple(r) for r in rows] == [("rule", to, "queued")]

    async def sent() -> bool:
        return all(r["status"] == "sent" for r in await owner_fetch(
            db, "SELECT status FROM mail_notifications WHERE kind = 'rule'"))

    await run_mail_jobs(services, ManualClock(soon()), sent)
    [mail] = smtp_server.to(to)
    message = mail.message()
    assert message["Subject"] == "Hello Rita: Printer on fire"
    assert message["From"] == "Acme support <support@acme.test>"
    assert message["Auto-Submitted"] == "auto-generated"
    assert _text(mail) == f"We have ticket {ticket['id']} (high) for {to}.\n-- Acme support\n"


async def test_followers_are_mailed_of_what_others_do_once_and_not_without_a_mailbox(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    ann, bob = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    ann_key = auth(await owner.key(tenant.tenant_id, "agent", ann))
    bob_key = auth(await owner.key(tenant.tenant_id, "agent", bob))

    async def ok(r: Any) -> dict[str, Any]:
        response = await r
        assert response.status_code in (200, 201), response.text
        answer: dict[str, Any] = response.json()
        return answer

    ticket = (await ok(http.post("/v1/tickets", headers=admin, json=NEW_TICKET)))["id"]
    await ok(http.post(f"/v1/tickets/{ticket}/followers", headers=ann_key,
                       json={"add": [str(ann), str(bob)]}))
    # Dormant without a mailbox: a reply to a followed ticket makes no mail.
    await ok(http.post(f"/v1/tickets/{ticket}/messages", headers=bob_key,
                       json={"body": "Before the mailbox"}))
    assert await _notices(db) == []

    await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    # Bob replies (Ann is told), Ann moves it to pending (Bob is told), and a key of
    # no agent assigns it to Bob (both are told).
    await ok(http.post(f"/v1/tickets/{ticket}/messages", headers=bob_key,
                       json={"body": "On it"}))
    await ok(http.post(f"/v1/tickets/{ticket}/state", headers=ann_key,
                       json={"state": "pending"}))
    await ok(http.post(f"/v1/tickets/{ticket}/assignee", headers=admin,
                       json={"agent_id": str(bob)}))
    made = await _notices(db)
    assert sorted(n["to_address"] for n in made) == sorted(
        [f"{ann}@example.com", f"{bob}@example.com", f"{ann}@example.com",
         f"{bob}@example.com"])
    assert {n["kind"] for n in made} == {"follow"}

    async def sent() -> bool:
        rows = await _notices(db)
        return bool(rows) and all(n["status"] == "sent" for n in rows)

    await run_mail_jobs(services, ManualClock(soon()), sent)
    to_ann = sorted(_text(d) for d in smtp_server.to(f"{ann}@example.com"))
    to_bob = sorted(_text(d) for d in smtp_server.to(f"{bob}@example.com"))
    about = 'the ticket "Printer on fire" (high) that you follow has'
    assert to_ann == sorted([
        f"Hello Agent,\n\n{about} a new public reply.\n\nTicket {ticket}\n",
        f"Hello Agent,\n\n{about} been assigned to Agent.\n\nTicket {ticket}\n"])
    assert to_bob == sorted([
        f"Hello Agent,\n\n{about} moved to pending.\n\nTicket {ticket}\n",
        f"Hello Agent,\n\n{about} been assigned to Agent.\n\nTicket {ticket}\n"])
    for delivered in [*smtp_server.to(f"{ann}@example.com"),
                      *smtp_server.to(f"{bob}@example.com")]:
        message = delivered.message()
        assert message["Subject"] == "Update on a ticket you follow: Printer on fire"
        assert message["Auto-Submitted"] == "auto-generated"
    jobs = await owner_fetch(db, "SELECT status FROM jobs WHERE kind = 'mail.notify'")
    assert len(jobs) == 4 and {j["status"] for j in jobs} == {"done"}


async def test_breach_notices_fall_back_to_the_admins_and_are_listed_for_admins(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    ok = await _put_settings(http, admin, mail_notifications={"breach": True})
    assert ok.status_code == 200, ok.text
    admins = [await owner.agent(tenant.tenant_id, role=Role.ADMIN) for _ in range(2)]
    assert sorted(r["id"] for r in await owner_fetch(
        db, "SELECT id FROM agents WHERE role = 'admin' AND active AND tenant_id = $1",
        tenant.tenant_id)) == sorted(admins)
    gone, kept = [await owner.agent(tenant.tenant_id) for _ in range(2)]
    # The second admin's address bounces: its notices are made dead, with the reason.
    bounce = await inbound(http, box, corpus("dsn_bounce.eml").replace(
        b"gone@example.com", f"{admins[1]}@example.com".encode()))
    assert bounce["outcome"] == "bounce"

    async def opened(subject: str, assignee: uuid.UUID | None) -> str:
        ticket = (await inbound(http, box, (
            f"From: c.{subject}@example.com\nTo: support@acme.test\nSubject: {subject}\n"
            f"Message-ID: <{subject}-{uuid.uuid4()}@example.com>\n\nHelp.\n").encode())
                  )["ticket_id"]
        if assignee is not None:
            r = await http.post(f"/v1/tickets/{ticket}/assignee", headers=admin,
                                json={"agent_id": str(assignee)})
            assert r.status_code == 200, r.text
        return str(ticket)

    unassigned = await opened("unassigned", None)
    deactivated = await opened("deactivated", gone)
    assigned = await opened("assigned", kept)
    await owner.set_active(tenant.tenant_id, gone, False)

    async def settled() -> bool:
        rows = [n for n in await _notices(db) if n["kind"] == "breach"]
        return len(rows) == 10 and all(n["status"] != "queued" for n in rows)

    # Days later every first-response and resolution clock has breached: the assignee
    # is told, and where there is none (or it was deactivated) the active admins are.
    await run_mail_jobs(services, ManualClock(soon() + timedelta(days=10)), settled,
                        sla=True)

    async def listed(query: str = "", **params: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await http.get("/v1/mail-notifications" + query, headers=admin, params={
                **params, "limit": 3, **({"cursor": cursor} if cursor else {})})
            assert page.status_code == 200, page.text
            out += page.json()["data"]
            cursor = page.json()["next_cursor"]
            if cursor is None:
                return out

    def told(ticket: str, rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
        return sorted((n["to"], n["status"]) for n in rows if n["ticket_id"] == ticket)

    everything = await listed()
    assert {n["kind"] for n in everything} == {"breach"} and len(everything) == 10
    to_admins = sorted([(f"{admins[0]}@example.com", "sent")] * 2
                       + [(f"{admins[1]}@example.com", "dead")] * 2)
    assert told(unassigned, everything) == told(deactivated, everything) == to_admins
    assert told(assigned, everything) == [(f"{kept}@example.com", "sent")] * 2
    dead = await listed(status="dead")
    assert len(dead) == 4 and {n["last_error"] for n in dead} == {
        f"{admins[1]}@example.com bounces"}
    assert {n["attempts"] for n in everything if n["status"] == "sent"} == {1}
    assert "data" not in everything[0] and set(everything[0]) == {
        "id", "kind", "mailbox_id", "to", "ticket_id", "rfc_message_id", "status",
        "attempts", "last_error", "created_at", "sent_at"}
    mine = await listed(to=f"{kept}@example.com".upper(), ticket_id=assigned)
    assert [n["id"] for n in mine] == [n["id"] for n in everything
                                       if n["ticket_id"] == assigned]
    assert await listed(kind="invitation") == []
    assert [d.message()["Subject"] for d in smtp_server.to(f"{kept}@example.com")] == [
        "SLA breached (first_response): assigned", "SLA breached (resolution): assigned"]
    assert smtp_server.to(f"{admins[1]}@example.com") == []
    assert smtp_server.to(f"{gone}@example.com") == []

    # Bad input is a clear 4xx; a cursor serves only the list it came from.
    first = (await http.get("/v1/mail-notifications", headers=admin,
                            params={"limit": 1, "status": "sent"})).json()
    for params, status in (({"kind": "postcard"}, 400), ({"colour": "red"}, 400),
                           ({"cursor": "garbage"}, 400),
                           ({"cursor": first["next_cursor"], "status": "dead"}, 400)):
        r = await http.get("/v1/mail-notifications", headers=admin, params=params)
        assert r.status_code == status, (params, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
    agent = auth(await owner.key(tenant.tenant_id, "agent", kept))
    assert (await http.get("/v1/mail-notifications", headers=agent)).status_code == 403


async def test_a_key_rotation_rewraps_queued_notifications_and_mailbox_secrets(
        http, db, services, tenant, smtp_server: SmtpServer) -> None:
    """Notifications queued under the old key-encryption key, and the mailbox's SMTP
    password and DKIM key, are re-wrapped by ``helpdesk keys rotate``'s steps and still
    go out from a process that has the new key only; a quarantined mail's sender and
    subject still open there."""
    admin = auth(tenant.admin_key)
    pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port), dkim={
        "selector": "desk", "domain": "acme.test", "private_key": pem})
    kept = await inbound(http, box, b"From: Zed <zed@example.com>\r\nSubject: No id\r\n"
                                    b"\r\nno Message-ID\r\n")
    assert kept["outcome"] == "quarantined"
    ok = await _put_settings(http, admin, mail_notifications={"invitation": True})
    assert ok.status_code == 200, ok.text
    run = uuid.uuid4().hex[:8]
    invited = [(await http.post("/v1/agents/invitations", headers=admin, json={
        "email": f"new{i}.{run}@example.com", "name": f"New {i}"})).json() for i in range(3)]
    assert all(i.get("token") for i in invited)

    old = await services.store.pool.fetchval(
        "SELECT value FROM instance_secrets WHERE name = 'data_key'")
    new = os.urandom(32)
    only_new = EventStore(services.store.pool, keyring=Keyring(new))
    sealed = """SELECT (SELECT array_agg(DISTINCT kek) FROM mail_notifications
                         WHERE status = 'queued') AS notices,
                       (SELECT array_agg(DISTINCT k) FROM mailboxes,
                               unnest(ARRAY[kek, dkim_kek]) AS k) AS mailbox"""
    [before] = await owner_fetch(db, sealed)
    assert only_new.keyring is not None
    assert only_new.keyring.fingerprint not in before["notices"] + before["mailbox"]
    rotating = EventStore(services.store.pool, keyring=Keyring(new, bytes(old)))
    # Twice over, one row a batch, as a rotation run again after a stop would be.
    # The notices, the SMTP password and DKIM key, the quarantined mail and its headline.
    assert await rotate_sealed(rotating, tenant.tenant_id, batch=1) == 3 + 2 + 2
    assert await rotate_sealed(rotating, tenant.tenant_id) == 0
    [after] = await owner_fetch(db, sealed)
    assert after["notices"] == after["mailbox"] == [only_new.keyring.fingerprint]
    async with only_new.unit_of_work(tenant.tenant_id, StoreActor("operator", "test"),
                                     readonly=True) as s:
        [listed] = await mail_in.list_quarantine(s, uuid.UUID(box["id"]), None, 10)
    assert (listed["from"], listed["subject"]) == ("Zed <zed@example.com>", "No id")

    async def sent() -> bool:
        rows = await _notices(db)
        return len(rows) == 3 and all(n["status"] == "sent" for n in rows)

    await run_mail_jobs(services, ManualClock(soon()), sent, store=only_new)
    for i, invitation in enumerate(invited):
        [mail] = smtp_server.to(f"new{i}.{run}@example.com")
        assert invitation["token"] in _text(mail)
        assert "s=desk" in mail.message()["DKIM-Signature"]
