"""E-mail in and out over HTTP, against the session's real SMTP server (aiosmtpd):
a mail becomes a ticket, an agent's reply is mailed once by the scheduler with its
thread headers, the customer's replies thread back (In-Reply-To, token address, subject
reference), noise is recorded and never answered, and a down SMTP server loses nothing."""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg
import httpx

from domain.clock import ManualClock
from tests.e2e.conftest import auth
from tests.support.mail import (
    corpus,
    inbound,
    make_mailbox,
    owner_fetch,
    run_mail_jobs,
    smtp_at,
    soon,
)
from tests.support.smtp import SmtpServer, free_port


async def _agent(owner: Any, tenant_id: Any) -> dict[str, str]:
    agent_id = await owner.agent(tenant_id)
    return auth(await owner.key(tenant_id, "agent", agent_id))


async def _mail(http: httpx.AsyncClient, h: dict[str, str], ticket: str) -> list[dict]:
    r = await http.get(f"/v1/tickets/{ticket}/mail", headers=h)
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


async def test_mail_to_ticket_reply_by_smtp_and_threading_back(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    assert box["inbound_secret"].startswith("hdmail_") and box["smtp"]["username"] is None
    got = (await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)).json()
    assert "inbound_secret" not in got and "password" not in got["smtp"]
    assert got["status"] == "ok"

    first = await inbound(http, box, corpus("gmail.eml"))
    assert first["outcome"] == "ticket"
    ticket = first["ticket_id"]
    again = await inbound(http, box, corpus("gmail.eml"))  # a retried delivery
    assert again["outcome"] == "duplicate" and again["ticket_id"] == ticket
    t = (await http.get(f"/v1/tickets/{ticket}", headers=admin)).json()
    assert t["source"] == "email" and t["subject"] == "Printer on fire"
    assert t["requester"]["email"] == "ann@example.com" and t["requester"]["contact_id"]
    [opening] = (await http.get(f"/v1/tickets/{ticket}/messages", headers=admin)).json()["data"]
    assert opening["body"] == ("Hi,\n\nThe printer on floor 3 is on fire. Photo attached."
                               "\n\nThanks,\nAnn")
    assert [(a["name"], a["type"]) for a in opening["attachments"]] == [
        ("fire.png", "image/png"), ("invite.ics", "text/calendar"),
        ("original.eml", "message/rfc822")]
    [received] = await _mail(http, admin, ticket)
    assert received["cc"] == ["bob@example.com", "carol@example.com"]

    agent = await _agent(owner, tenant.tenant_id)
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "We are sending someone.\n\nAcme"})
    assert r.status_code == 201, r.text
    note = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                           json={"body": "internal", "visibility": "internal"})
    assert note.status_code == 201

    async def sent() -> bool:
        return any(m["status"] == "sent" for m in await _mail(http, admin, ticket))

    await run_mail_jobs(services, ManualClock(soon()), sent)
    out = [m for m in await _mail(http, admin, ticket) if m["direction"] == "out"]
    assert len(out) == 1  # the note is not mailed
    [delivered] = [d for d in smtp_server.to("ann@example.com")
                   if d.message()["Message-ID"] == f"<{out[0]['rfc_message_id']}>"]
    mail = delivered.message()
    [thread] = await owner_fetch(db, "SELECT token FROM mail_threads WHERE ticket_id = $1",
                                  uuid.UUID(ticket))
    token = thread["token"]
    assert mail["In-Reply-To"] == "<CAF=gmail-0001@mail.gmail.com>"
    assert mail["References"] == "<CAF=gmail-0001@mail.gmail.com>"
    assert mail["Reply-To"] == f"support+{token}@acme.test"
    assert mail["Subject"] == f"Re: Printer on fire [#{token}]"
    assert mail["Auto-Submitted"] is None
    plain = mail.get_body(("plain",)).get_content().replace("\r\n", "\n")
    assert plain.strip() == "We are sending someone.\n\nAcme"
    assert "<p>We are sending someone.</p>" in mail.get_body(("html",)).get_content()

    # Threading back: by In-Reply-To under another subject, by the token address alone,
    # and by the subject's reference alone.
    changed = await inbound(http, box, corpus("reply_changed_subject.eml",
                                                OUTBOUND_ID=out[0]["rfc_message_id"]))
    assert (changed["outcome"], changed["ticket_id"]) == ("reply", ticket)
    by_token = await inbound(http, box, corpus("token_only.eml", TOKEN=token))
    assert (by_token["outcome"], by_token["ticket_id"]) == ("reply", ticket)
    by_subject = await inbound(http, box, (
        f"From: ann@example.com\nTo: support@acme.test\nSubject: Re: fire [#{token}]\n"
        "Message-ID: <subject-ref-1@example.com>\n\nAnd the fire brigade came.\n").encode())
    assert (by_subject["outcome"], by_subject["ticket_id"]) == ("reply", ticket)
    bodies = [m["body"] for m in (await http.get(
        f"/v1/tickets/{ticket}/messages", headers=admin)).json()["data"]]
    assert bodies[-3:] == ["It is out now, thanks.", "The smoke alarm also went off.",
                           "And the fire brigade came."]

    # Exactly one delivery: the scheduler run again sends nothing more.
    jobs = await owner_fetch(db, "SELECT status FROM jobs WHERE kind = 'mail.send'")
    assert [j["status"] for j in jobs] == ["done"]
    assert len([d for d in smtp_server.to("ann@example.com")
                if d.message()["Message-ID"] == f"<{out[0]['rfc_message_id']}>"]) == 1


async def test_noise_is_recorded_and_never_answered(http, db, tenant, smtp_server) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    auto = await inbound(http, box, corpus("auto_reply.eml"))
    assert auto["outcome"] == "ignored" and "Auto-Submitted" in auto["reason"]
    listed = await inbound(http, box, corpus("mailing_list.eml"))
    assert listed["outcome"] == "ignored" and "Precedence: list" in listed["reason"]
    own = await inbound(http, box, b"From: Acme <support+x1y2z3a4@acme.test>\n"
                         b"To: support@acme.test\nMessage-ID: <own-1@acme.test>\n\nloop\n")
    assert own["outcome"] == "ignored" and "own addresses" in own["reason"]
    bounce = await inbound(http, box, corpus("dsn_bounce.eml"))
    assert bounce["outcome"] == "bounce" and "gone@example.com 5.1.1" in bounce["reason"]
    bounced = await owner_fetch(db, "SELECT address, status FROM mail_bounces")
    assert [(b["address"], b["status"]) for b in bounced] == [("gone@example.com", "5.1.1")]
    tickets = (await http.get("/v1/tickets", headers=admin)).json()["data"]
    assert tickets == []  # nothing to answer: no ticket, no message, no job

    # The hourly cap per sender: the sender's 30 mails of the hour (automatic ones
    # included) leave the 31st unanswered.
    for n in range(29):
        r = await inbound(http, box, (
            f"From: ann@example.com\nTo: support@acme.test\nMessage-ID: <cap-{n}@x>\n"
            "Auto-Submitted: auto-replied\n\nout of office\n").encode())
        assert r["outcome"] == "ignored"
    over = await inbound(http, box, corpus("gmail.eml"))
    assert over["outcome"] == "ignored" and "within an hour" in over["reason"]


async def test_smtp_down_queues_the_reply_and_delivers_after_recovery(
        http, services, tenant, owner, smtp_server) -> None:
    admin = auth(tenant.admin_key)
    closed = free_port()  # nothing listens there
    box = await make_mailbox(http, admin, smtp=smtp_at(closed))
    ready = (await http.get("/health/ready")).json()["checks"]["mail"]
    assert ready["status"] == "ok"
    ticket = (await inbound(http, box, corpus("apple_mail.eml")))["ticket_id"]
    agent = await _agent(owner, tenant.tenant_id)
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "Try clearing the cache."})
    assert r.status_code == 201  # the request never waits on SMTP

    clock = ManualClock(soon())

    async def tried() -> bool:
        return any(m["reason"] for m in await _mail(http, admin, ticket))

    await run_mail_jobs(services, clock, tried)
    [out] = [m for m in await _mail(http, admin, ticket) if m["direction"] == "out"]
    assert out["status"] == "queued" and "Connection refused" in out["reason"]
    health = await http.get("/health/ready")
    assert health.status_code == 200
    assert health.json()["checks"]["mail"]["status"] == "degraded"
    assert (await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)).json()[
        "status"] == "degraded"

    fixed = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={
        "smtp": {"host": "127.0.0.1", "port": smtp_server.port, "security": "none"}})
    assert fixed.status_code == 200, fixed.text
    clock.advance(seconds=120)

    async def sent() -> bool:
        return any(m["status"] == "sent" for m in await _mail(http, admin, ticket))

    await run_mail_jobs(services, clock, sent)
    [out] = [m for m in await _mail(http, admin, ticket) if m["direction"] == "out"]
    assert out["attempts"] == 2 and out["reason"] is None
    arrived = [d for d in smtp_server.to("erin@example.com")
               if d.message()["Message-ID"] == f"<{out['rfc_message_id']}>"]
    assert len(arrived) == 1
    assert (await http.get("/health/ready")).json()["checks"]["mail"]["status"] == "ok"


async def test_quarantine_and_tenant_isolation(http, db, tenant, make_tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(free_port()))
    other = await make_tenant("Other")
    other_admin = auth(other.admin_key)
    # The same address, in another tenant: its own.
    other_box = await make_mailbox(http, other_admin, smtp=smtp_at(free_port()))

    garbage = b"this is not a mail at all\n"
    q = await inbound(http, box, garbage)
    assert q["outcome"] == "quarantined" and q["reason"] == "the message has no headers"
    page = (await http.get(f"/v1/mailboxes/{box['id']}/quarantine", headers=admin)).json()
    [kept] = page["data"]
    assert kept["size"] == len(garbage) and kept["attempts"] == 1
    assert (kept["from"], kept["subject"]) == (None, None)  # no headers to read them from
    [stored] = await owner_fetch(db, "SELECT raw FROM mail_quarantine")
    assert garbage not in bytes(stored["raw"])  # sealed

    # Another tenant's admin sees none of it, and the other mailbox's secret opens
    # only its own mailbox.
    assert (await http.get(f"/v1/mailboxes/{box['id']}", headers=other_admin)).status_code == 404
    assert (await http.get(f"/v1/mailboxes/{box['id']}/quarantine",
                           headers=other_admin)).status_code == 404
    assert (await http.post(f"/v1/mailboxes/{box['id']}/quarantine/{kept['id']}/retry",
                            headers=other_admin)).status_code == 404
    assert (await http.delete(f"/v1/mailboxes/{box['id']}", headers=other_admin)
            ).status_code == 404
    in_use = await http.delete(f"/v1/mailboxes/{box['id']}", headers=admin)
    assert in_use.status_code == 409 and in_use.json()["code"] == "mailbox_in_use"
    listed = (await http.get("/v1/mailboxes", headers=other_admin)).json()["data"]
    assert [m["id"] for m in listed] == [other_box["id"]]
    wrong = await http.post(box["inbound_url"], content=corpus("gmail.eml"), headers={
        "Authorization": f"Bearer {other_box['inbound_secret']}",
        "Content-Type": "message/rfc822"})
    assert wrong.status_code == 401
    runtime = await asyncpg.connect(db.runtime_url)
    try:
        async with runtime.transaction():
            await runtime.execute("SELECT set_config('app.tenant_id', $1, true)",
                                  str(other.tenant_id))
            seen = await runtime.fetch("SELECT id FROM mailboxes")
            assert [str(r["id"]) for r in seen] == [other_box["id"]]
            assert await runtime.fetchval("SELECT count(*) FROM mail_quarantine") == 0
        assert await runtime.fetchval("SELECT count(*) FROM mailboxes") == 0  # no tenant
    finally:
        await runtime.close()

    retried = await http.post(f"/v1/mailboxes/{box['id']}/quarantine/{kept['id']}/retry",
                              headers=admin)
    assert retried.json()["outcome"] == "quarantined"
    [again] = (await http.get(f"/v1/mailboxes/{box['id']}/quarantine",
                              headers=admin)).json()["data"]
    assert again["attempts"] == 2 and again["retried_at"] is not None
    gone = await http.delete(f"/v1/mailboxes/{box['id']}/quarantine/{kept['id']}",
                             headers=admin)
    assert gone.status_code == 200 and gone.json()["id"] == kept["id"]
    assert (await http.get(f"/v1/mailboxes/{box['id']}/quarantine",
                           headers=admin)).json()["data"] == []
    # A mail the desk's own rules refuse (an address no ticket takes) is kept too, once;
    # an over-long subject is cut to what a ticket takes.
    refused = await inbound(http, box, b"From: <a b@c d>\nMessage-ID: <r-1@x>\n\nhi\n")
    assert refused["outcome"] == "quarantined"
    assert refused["reason"] == "refused: requester.email is not an e-mail address"
    long = await inbound(http, box, b"From: z@example.com\nMessage-ID: <long-1@x>\nSubject: "
                         + b"x" * 300 + b"\n\nhi\n")
    subject = (await http.get(f"/v1/tickets/{long['ticket_id']}", headers=admin)).json()[
        "subject"]
    assert len(subject) == 200 and subject.endswith("…")
    dup = await http.post("/v1/mailboxes", headers=admin, json={"address": "SUPPORT@acme.test"})
    assert dup.status_code == 409 and dup.json()["code"] == "mailbox_exists"


async def test_erasing_the_contact_blanks_its_addresses_on_the_mail(http, db, tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(free_port()))
    taken = await inbound(http, box, corpus("latin1.eml"))
    contact = (await http.get(f"/v1/tickets/{taken['ticket_id']}", headers=admin)).json()[
        "requester"]["contact_id"]
    link = await http.post(f"/v1/contacts/{contact}/portal-link", headers=admin)
    assert link.status_code == 201  # mailed: a notification row holds its address
    bounce = corpus("dsn_bounce.eml").replace(b"gone@example.com", b"francois@example.fr")
    await inbound(http, box, bounce)
    r = await http.post(f"/v1/contacts/{contact}/erase", headers=admin,
                        json={"reason": "asked to be forgotten"})
    assert r.status_code == 200, r.text
    rows = await owner_fetch(db, "SELECT from_address, to_addresses FROM mail_messages "
                                  "WHERE ticket_id = $1", uuid.UUID(taken["ticket_id"]))
    assert [(r["from_address"], r["to_addresses"]) for r in rows] == [("", [])]
    assert await owner_fetch(db, "SELECT * FROM mail_bounces") == []
    notices = await owner_fetch(db, "SELECT to_address, data, status, reason "
                                    "FROM mail_notifications")
    assert [tuple(n.values()) for n in notices] == [
        ("", None, "dead", "the recipient was erased")]  # never sent after the erasure

async def test_a_reply_from_a_stranger_follows_the_tenant_setting(http, db, tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(free_port()))
    ticket = (await inbound(http, box, corpus("gmail.eml")))["ticket_id"]  # Cc bob, carol
    [thread] = await owner_fetch(db, "SELECT token FROM mail_threads WHERE ticket_id = $1",
                                  uuid.UUID(ticket))

    def reply(sender: str, n: int) -> bytes:
        return (f"From: {sender}\nTo: support+{thread['token']}@acme.test\nSubject: Re: fire\n"
                f"Message-ID: <stranger-{n}@example.com>\n\nFrom {sender}.\n").encode()

    # The default: a stranger's mail is a message on the ticket.
    first = await inbound(http, box, reply("dave@example.com", 1))
    assert (first["outcome"], first["ticket_id"]) == ("reply", ticket)
    doc = (await http.get("/v1/settings", headers=admin)).json()
    put = await http.put("/v1/settings", headers=admin,
                         json={**doc, "stranger_replies": "ticket"})
    assert put.status_code == 200 and put.json()["stranger_replies"] == "ticket"
    # A CC and the requester still reply on the ticket; a stranger opens a ticket of
    # their own, and the reason says why.
    by_cc = await inbound(http, box, reply("Bob Example <bob@example.com>", 2))
    assert (by_cc["outcome"], by_cc["ticket_id"]) == ("reply", ticket)
    by_requester = await inbound(http, box, reply("ann@example.com", 3))
    assert (by_requester["outcome"], by_requester["ticket_id"]) == ("reply", ticket)
    stranger = await inbound(http, box, reply("erin@example.com", 4))
    assert stranger["outcome"] == "ticket" and stranger["ticket_id"] != ticket
    assert stranger["reason"] == (f"erin@example.com is neither the requester nor a CC of "
                                  f"ticket {ticket}: a ticket of its own")
    own = (await http.get(f"/v1/tickets/{stranger['ticket_id']}", headers=admin)).json()
    assert own["requester"]["email"] == "erin@example.com" and own["source"] == "email"
    authors = [m["body"] for m in (await http.get(
        f"/v1/tickets/{ticket}/messages", headers=admin)).json()["data"]]
    assert authors[1:] == ["From dave@example.com.", "From Bob Example <bob@example.com>.",
                           "From ann@example.com."]


async def test_a_reply_is_mailed_to_the_requester_and_copied_to_the_ticket_ccs(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    run = uuid.uuid4().hex[:8]
    requester, gone = f"ann.{run}@example.com", f"gone.{run}@example.com"
    # The bounce comes first: that address is marked, and left out of every copy.
    bounced = await inbound(http, box, corpus("dsn_bounce.eml").replace(
        b"gone@example.com", gone.encode()))
    assert bounced["outcome"] == "bounce"
    opened = await inbound(http, box, (
        f"From: Ann <{requester}>\r\nTo: support@acme.test, Dave <dave.{run}@example.com>\r\n"
        f"Cc: Bob <BOB.{run}@example.com>, {gone}, support+abcdefgh@acme.test, "
        f"{requester}\r\nSubject: Copies\r\nMessage-ID: <copies-{run}@example.com>\r\n\r\n"
        "Please keep everyone posted.\r\n").encode())
    assert opened["outcome"] == "ticket"
    ticket = opened["ticket_id"]
    agent = await _agent(owner, tenant.tenant_id)
    # A CC the ticket got by the API, and one who is on the mail already (once only).
    r = await http.post(f"/v1/tickets/{ticket}/ccs", headers=agent, json={"add": [
        {"email": f"frank.{run}@example.com"}, {"email": f"bob.{run}@example.com"}]})
    assert r.status_code == 200, r.text
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "Everyone is posted."})
    assert r.status_code == 201, r.text

    async def sent() -> bool:
        return any(m["status"] == "sent" for m in await _mail(http, admin, ticket))

    await run_mail_jobs(services, ManualClock(soon()), sent)
    [out] = [m for m in await _mail(http, admin, ticket) if m["direction"] == "out"]
    copies = [f"frank.{run}@example.com", f"bob.{run}@example.com", f"dave.{run}@example.com"]
    assert out["to"] == [requester] and out["cc"] == copies
    [delivered] = [d for d in smtp_server.delivered
                   if d.message()["Message-ID"] == f"<{out['rfc_message_id']}>"]
    assert sorted(delivered.rcpt_tos) == sorted([requester, *copies])
    mail = delivered.message()
    assert mail["To"] == requester and mail["Cc"] == ", ".join(copies)
    assert mail["From"] == "support@acme.test"
    assert mail["In-Reply-To"] == f"<copies-{run}@example.com>"
    assert "support" not in mail["Cc"] and gone not in str(delivered.rcpt_tos)


async def test_a_contacts_erasure_deletes_the_quarantined_mail_naming_it(
        http, db, tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin)
    # Mail the desk could not take in (no Message-ID), from the contact, to it, and
    # from someone else.
    kept = {}
    for sender, to in (("Erin <ERIN@example.com>", "support@acme.test"),
                       ("support@acme.test", "erin@example.com"),
                       ("other@example.com", "support@acme.test")):
        q = await inbound(http, box, f"From: {sender}\r\nTo: {to}\r\nSubject: x\r\n\r\n"
                                     "no id\r\n".encode())
        assert q["outcome"] == "quarantined" and "Message-ID" in q["reason"]
        kept[sender] = q["mail_id"]
    opened = await http.post("/v1/tickets", headers=admin, json={
        "subject": "Forget me", "body": "Please.", "requester": {"email": "erin@example.com"}})
    assert opened.status_code == 201, opened.text
    contact = opened.json()["requester"]["contact_id"]
    erased = await http.post(f"/v1/contacts/{contact}/erase", headers=admin,
                             json={"reason": "GDPR request 18"})
    assert erased.status_code == 200, erased.text
    page = (await http.get(f"/v1/mailboxes/{box['id']}/quarantine", headers=admin)).json()
    assert [q["id"] for q in page["data"]] == [kept["other@example.com"]]
    [left] = page["data"]
    assert (left["from"], left["subject"]) == ("other@example.com", "x")
    [row] = await owner_fetch(db, "SELECT headline FROM mail_quarantine")
    assert b"other@example.com" not in bytes(row["headline"])  # sealed, as the mail is
    rows = await owner_fetch(db, "SELECT id FROM mail_quarantine")
    assert [str(r["id"]) for r in rows] == [kept["other@example.com"]]


async def test_the_answer_says_which_secrets_are_stored(http, db, tenant) -> None:
    """Never a password, but whether one is: a change leaving it out keeps it, null
    forgets it, a new one replaces it."""
    admin = auth(tenant.admin_key)
    smtp = {"host": "127.0.0.1", "port": free_port(), "security": "none", "username": "desk"}
    imap = {"host": "127.0.0.1", "port": free_port(), "security": "none",
            "username": "desk"}
    box = await make_mailbox(http, admin, smtp={**smtp, "password": "s3cret"}, imap=imap)
    assert box["smtp"]["password_set"] is True and box["imap"]["password_set"] is False
    assert box["dkim"] is None

    async def sealed() -> Any:
        [row] = await owner_fetch(db, "SELECT smtp_password, imap_password FROM mailboxes "
                                      "WHERE id = $1", uuid.UUID(box["id"]))
        return row

    before = await sealed()

    async def change(body: dict[str, Any]) -> dict[str, Any]:
        r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json=body)
        assert r.status_code == 200, r.text
        assert "s3cret" not in r.text and "n3w" not in r.text
        return dict(r.json())

    kept = await change({"smtp": {**smtp, "port": 2525}, "imap": {**imap, "password": "n3w"}})
    assert kept["smtp"]["password_set"] is True and kept["smtp"]["port"] == 2525
    assert kept["imap"]["password_set"] is True
    assert (await sealed())["smtp_password"] == before["smtp_password"]
    listed = (await http.get("/v1/mailboxes", headers=admin)).json()["data"]
    assert [(m["smtp"]["password_set"], m["imap"]["password_set"]) for m in listed] == [
        (True, True)]
    forgot = await change({"smtp": {**smtp, "password": None}})
    assert forgot["smtp"]["password_set"] is False and forgot["imap"]["password_set"] is True
    after = await sealed()
    assert after["smtp_password"] is None and after["imap_password"] is not None
    got = (await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)).json()
    assert got["smtp"]["password_set"] is False and got["imap"]["password_set"] is True
    changed = await owner_fetch(
        db, "SELECT (data ->> 'smtp_password_changed')::bool AS smtp, "
            "(data ->> 'imap_password_changed')::bool AS imap FROM events "
            "WHERE type = 'MailboxChanged' ORDER BY seq")
    assert [(e["smtp"], e["imap"]) for e in changed] == [(False, True), (True, False)]


async def test_trying_a_mailbox_answers_per_server(http, tenant, make_tenant,
                                                    smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    r = await http.post(f"/v1/mailboxes/{box['id']}/test", headers=admin)
    assert r.status_code == 200, r.text
    assert r.json() == {"smtp": {"status": "ok", "reason": None},
                        "imap": {"status": "not_configured", "reason": None}}

    # Nothing listens on the IMAP port and the SMTP login is refused (aiosmtpd offers
    # no AUTH without TLS): each failure is said, with its reason, still a 200.
    dead = free_port()
    r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={
        "smtp": {**smtp_at(smtp_server.port), "username": "u", "password": "p"},
        "imap": {"host": "127.0.0.1", "port": dead, "security": "none",
                 "username": "u", "password": "p"}})
    assert r.status_code == 200, r.text
    said = (await http.post(f"/v1/mailboxes/{box['id']}/test", headers=admin)).json()
    assert said["smtp"]["status"] == said["imap"]["status"] == "failed", said
    assert "SMTP" in said["smtp"]["reason"]
    assert "ConnectionRefused" in said["imap"]["reason"]
    got = (await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)).json()
    assert got["status"] == "ok"  # a trial is no use of the servers

    other = await make_tenant("Other")
    r = await http.post(f"/v1/mailboxes/{box['id']}/test", headers=auth(other.admin_key))
    assert r.status_code == 404 and r.json()["code"] == "mailbox_not_found"


async def test_a_mailbox_changed_since_it_was_shown_is_a_412(http, tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin)
    changed = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin | {
        "If-Match": f'"{box["version"]}"'}, json={"name": "Renamed"})
    assert changed.status_code == 200, changed.text
    for method, body in (("PATCH", {"name": "Again"}), ("DELETE", None)):
        stale = await http.request(method, f"/v1/mailboxes/{box['id']}", json=body,
                                   headers=admin | {"If-Match": f'"{box["version"]}"'})
        assert stale.status_code == 412, stale.text
        assert stale.json()["current_version"] == changed.json()["version"]
    gone = await http.delete(f"/v1/mailboxes/{box['id']}", headers=admin | {
        "If-Match": f'"{changed.json()["version"]}"'})
    assert gone.status_code == 200, gone.text
