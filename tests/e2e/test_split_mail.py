"""A ticket split off a mail ticket has a mail thread of its own, against the session's
real SMTP server (aiosmtpd): its agents' public replies are mailed to its requester
with its own token and reference, answering the moved mail (or starting a thread of
their own when nothing moved came by mail), and the requester's answers thread onto
it, not onto the source (docs/email.md, "A split-off of a mail ticket")."""

from __future__ import annotations

import uuid
from email.message import EmailMessage
from typing import Any

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
from tests.support.smtp import SmtpServer


async def _mail(http: httpx.AsyncClient, h: dict[str, str], ticket: str) -> list[dict]:
    r = await http.get(f"/v1/tickets/{ticket}/mail", headers=h)
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


async def _token(db: Any, ticket: str) -> str:
    [row] = await owner_fetch(db, "SELECT token FROM mail_threads WHERE ticket_id = $1",
                              uuid.UUID(ticket))
    return str(row["token"])


async def _reply_and_deliver(http: httpx.AsyncClient, services: Any, admin: dict[str, str],
                             agent: dict[str, str], smtp_server: SmtpServer, ticket: str,
                             body: str) -> EmailMessage:
    """An agent's public reply on ``ticket``, mailed; the mail the requester got."""
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent, json={"body": body})
    assert r.status_code == 201, r.text
    message_id = r.json()["message"]["id"]

    async def sent() -> bool:
        return any(m["message_id"] == message_id and m["status"] == "sent"
                   for m in await _mail(http, admin, ticket))

    await run_mail_jobs(services, ManualClock(soon()), sent)
    [out] = [m for m in await _mail(http, admin, ticket) if m["message_id"] == message_id]
    [delivered] = [d for d in smtp_server.to("ann@example.com")
                   if d.message()["Message-ID"] == f"<{out['rfc_message_id']}>"]
    return delivered.message()


async def test_a_split_off_mail_ticket_is_mailed_on_its_own_thread(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    opened = await inbound(http, box, corpus("gmail.eml"))
    sid = opened["ticket_id"]
    source_token = await _token(db, sid)
    second = await inbound(http, box, (
        f"From: Ann Example <ann@example.com>\nTo: support+{source_token}@acme.test\n"
        "Subject: and the fax\nMessage-ID: <fax-0001@example.com>\n"
        "In-Reply-To: <CAF=gmail-0001@mail.gmail.com>\n\n"
        "Also the fax on floor 2 is jammed.\n").encode())
    assert (second["outcome"], second["ticket_id"]) == ("reply", sid)

    r = await http.post(f"/v1/tickets/{sid}/split", headers=agent,
                        json={"message_ids": [second["message_id"]], "subject": "Fax jam"})
    assert r.status_code == 200, r.text
    nid = r.json()["new_ticket"]["id"]
    token = await _token(db, nid)
    assert token != source_token
    [thread] = await owner_fetch(db, "SELECT mailbox_id FROM mail_threads WHERE ticket_id = $1",
                                 uuid.UUID(nid))
    assert str(thread["mailbox_id"]) == box["id"]
    # The moved mail's row went with its message.
    assert [m["rfc_message_id"] for m in await _mail(http, admin, nid)] == [
        "fax-0001@example.com"]
    assert [m["rfc_message_id"] for m in await _mail(http, admin, sid)] == [
        "CAF=gmail-0001@mail.gmail.com"]

    mail = await _reply_and_deliver(http, services, admin, agent, smtp_server, nid,
                                    "A technician is on the way to the fax.")
    assert mail["To"] == "ann@example.com"
    assert mail["Reply-To"] == f"support+{token}@acme.test"
    assert mail["Subject"] == f"Re: Fax jam [#{token}]"
    assert mail["In-Reply-To"] == "<fax-0001@example.com>"
    assert mail["References"] == "<fax-0001@example.com>"
    out_id = mail["Message-ID"].strip("<>")

    # Ann's answers thread onto the split-off: by In-Reply-To (her client's References
    # still name the source's opening mail, further away), by the token address alone,
    # and by the subject's reference alone.
    answered = await inbound(http, box, (
        "From: ann@example.com\nTo: support@acme.test\nSubject: Re: Fax jam\n"
        "Message-ID: <fax-0002@example.com>\n"
        f"In-Reply-To: <{out_id}>\n"
        f"References: <CAF=gmail-0001@mail.gmail.com> <fax-0001@example.com> <{out_id}>\n\n"
        "Thanks, the fax works again.\n").encode())
    assert (answered["outcome"], answered["ticket_id"]) == ("reply", nid)
    by_token = await inbound(http, box, (
        f"From: ann@example.com\nTo: support+{token}@acme.test\nSubject: fax\n"
        "Message-ID: <fax-0003@example.com>\n\nIt jammed once more.\n").encode())
    assert (by_token["outcome"], by_token["ticket_id"]) == ("reply", nid)
    by_subject = await inbound(http, box, (
        f"From: ann@example.com\nTo: support@acme.test\nSubject: Re: fax [#{token}]\n"
        "Message-ID: <fax-0004@example.com>\n\nAnd is fine now.\n").encode())
    assert (by_subject["outcome"], by_subject["ticket_id"]) == ("reply", nid)
    bodies = [m["body"] for m in (await http.get(
        f"/v1/tickets/{nid}/messages", headers=admin)).json()["data"]]
    assert bodies == ["Also the fax on floor 2 is jammed.",
                      "A technician is on the way to the fax.",
                      "Thanks, the fax works again.", "It jammed once more.",
                      "And is fine now."]

    # The source keeps its own thread: its reply answers its opening mail, its token.
    mail = await _reply_and_deliver(http, services, admin, agent, smtp_server, sid,
                                    "Someone is coming for the printer.")
    assert mail["Reply-To"] == f"support+{source_token}@acme.test"
    assert mail["Subject"] == f"Re: Printer on fire [#{source_token}]"
    assert mail["In-Reply-To"] == "<CAF=gmail-0001@mail.gmail.com>"
    assert "fax-0001" not in mail["References"]
    assert len((await http.get(f"/v1/tickets/{sid}/messages",
                               headers=admin)).json()["data"]) == 2


async def test_a_split_off_of_messages_that_came_by_no_mail_starts_a_thread(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    intake = auth(await owner.key(tenant.tenant_id, "intake"))
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    sid = (await inbound(http, box, corpus("gmail.eml")))["ticket_id"]
    said = await http.post(f"/v1/tickets/{sid}/messages", headers=intake,
                           json={"body": "By phone: the scanner too."})
    assert said.status_code == 201, said.text
    r = await http.post(f"/v1/tickets/{sid}/split", headers=agent,
                        json={"message_ids": [said.json()["message"]["id"]]})
    assert r.status_code == 200, r.text
    nid = r.json()["new_ticket"]["id"]
    token = await _token(db, nid)

    mail = await _reply_and_deliver(http, services, admin, agent, smtp_server, nid,
                                    "We will look at the scanner.")
    assert mail["Reply-To"] == f"support+{token}@acme.test"
    assert mail["Subject"] == f"Re: Printer on fire [#{token}]"
    assert mail["In-Reply-To"] is None and mail["References"] is None
    answered = await inbound(http, box, (
        "From: ann@example.com\nTo: support@acme.test\nSubject: Re: Printer on fire\n"
        "Message-ID: <scan-0002@example.com>\n"
        f"In-Reply-To: {mail['Message-ID']}\nReferences: {mail['Message-ID']}\n\n"
        "Thanks.\n").encode())
    assert (answered["outcome"], answered["ticket_id"]) == ("reply", nid)


async def test_a_reply_split_off_before_its_mail_went_out_is_mailed_as_the_split_offs(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    sid = (await inbound(http, box, corpus("gmail.eml")))["ticket_id"]
    r = await http.post(f"/v1/tickets/{sid}/messages", headers=agent,
                        json={"body": "About your toner: it is on its way."})
    assert r.status_code == 201, r.text
    reply = r.json()["message"]["id"]
    # Split before any mail job ran: the reply's job was enqueued on the source.
    r = await http.post(f"/v1/tickets/{sid}/split", headers=agent,
                        json={"message_ids": [reply], "subject": "Toner"})
    assert r.status_code == 200, r.text
    nid = r.json()["new_ticket"]["id"]
    token = await _token(db, nid)

    async def sent() -> bool:
        return any(m["status"] == "sent" for m in await _mail(http, admin, nid))

    await run_mail_jobs(services, ManualClock(soon()), sent)
    [out] = await _mail(http, admin, nid)
    assert out["message_id"] == reply
    assert [m["direction"] for m in await _mail(http, admin, sid)] == ["in"]
    [delivered] = [d for d in smtp_server.to("ann@example.com")
                   if d.message()["Message-ID"] == f"<{out['rfc_message_id']}>"]
    mail = delivered.message()
    assert mail["Reply-To"] == f"support+{token}@acme.test"
    assert mail["Subject"] == f"Re: Toner [#{token}]"
    assert mail["In-Reply-To"] is None and mail["References"] is None
