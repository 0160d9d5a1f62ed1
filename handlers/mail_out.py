"""Replies by mail: the ``mail.send`` job that mails a public staff reply on a mail ticket.

The job is enqueued by the appending statement of the reply (migration 0580), so it
exists exactly when the reply committed and the request never waits for an SMTP
server. The job, claimed like every job (SKIP LOCKED, lease, backoff):

1. reads the reply's event and the ticket, and makes, once, the reply's outbound mail
   row with its Message-ID (``<uuid@mailbox domain>``), committed before any attempt:
   every retry sends the same Message-ID, and a row already ``sent`` is never sent
   again (one delivery per message);
2. builds the mail: From the mailbox, To the requester, Cc the ticket's CCs (its own
   and the addresses its mail was sent or copied to; never the desk's own addresses,
   nor one that bounces: fixed on the row with its Message-ID), ``Reply-To`` the ticket's
   token address, ``Subject: Re: ... [#token]``, ``In-Reply-To`` the last mail the
   ticket took in, ``References`` every Message-ID of the thread, a text part and an
   HTML part, and the reply's files;
3. signs it with the mailbox's DKIM key, if it has one (domain/mail_dkim.py), and hands
   it to the mailbox's SMTP server (TLS, STARTTLS or plain, with credentials).
   Accepted: the row is ``sent``. Refused or unreachable: the row keeps the reason and
   the job raises, to be retried with backoff; after the last attempt the row is
   ``dead`` with the reason, shown by ``GET /v1/tickets/{id}/mail`` (the attempt and
   its settling are ``handlers.delivery.attempt``, shared with Slack's posts).

A mailbox without SMTP, or a requester whose address bounces, ends the job at once
with the row ``dead`` and the reason.
"""

from __future__ import annotations

import asyncio
import email.policy
import functools
import html
import smtplib
import ssl
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses, parseaddr
from pathlib import Path
from typing import Any
from uuid import UUID

from domain import mail_dkim
from domain.ids import TenantId
from domain.mail import display_address, reply_copies, reply_subject, tokened_address
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers import attachments, delivery, mailboxes
from handlers.ticket_state import load_ticket
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

Q = load_queries(Path(__file__).with_name("mail.sql"))

KIND = "mail.send"
SMTP_TIMEOUT = 10.0


class MailNotSent(Exception):
    """The SMTP server could not be reached, or refused the mail."""


@contextmanager
def smtp_session(access: mailboxes.SmtpAccess, timeout: float) -> Iterator[smtplib.SMTP]:
    """A connection to the mailbox's SMTP server, greeted (EHLO), secured (STARTTLS when
    asked) and logged in when there is a username, closed on leaving (blocking). The
    trial of a mailbox (``handlers.mail_check``) and every send open it the same way, so
    a server the trial accepts is one a send gets as far."""
    context = ssl.create_default_context()
    client: smtplib.SMTP
    if access.security == "tls":
        client = smtplib.SMTP_SSL(access.host, access.port, timeout=timeout, context=context)
    else:
        client = smtplib.SMTP(access.host, access.port, timeout=timeout)
    with client:
        code, said = client.ehlo()
        if code != 250:
            raise smtplib.SMTPResponseException(code, said)
        if access.security == "starttls":
            client.starttls(context=context)
            client.ehlo()
        if access.username:
            client.login(access.username, access.password or "")
        yield client


def _send(access: mailboxes.SmtpAccess, message: EmailMessage, timeout: float) -> None:
    """One SMTP transaction (blocking: run in a thread)."""
    with smtp_session(access, timeout) as client:
        if access.dkim is None:
            refused = client.send_message(message)
        else:
            # Signed over the very bytes sent: smtplib is handed them as they are.
            data = message.as_bytes(policy=email.policy.SMTP)
            data = mail_dkim.sign(access.dkim, data) + data
            recipients = [a for _, a in getaddresses([*message.get_all("To", []),
                                                      *message.get_all("Cc", [])])]
            refused = client.sendmail(parseaddr(str(message["From"]))[1], recipients, data)
        if refused:
            raise MailNotSent(f"recipients refused: {refused}")


async def send_mail(access: mailboxes.SmtpAccess, message: EmailMessage,
                    timeout: float = SMTP_TIMEOUT) -> None:
    """Hand ``message`` to the server; ``MailNotSent`` with the reason when it does not
    take it."""
    try:
        await asyncio.to_thread(_send, access, message, timeout)
    except MailNotSent:
        raise
    except (OSError, smtplib.SMTPException, ssl.SSLError) as exc:
        raise MailNotSent(f"{type(exc).__name__}: {exc}"[:400]) from exc


def html_part(text: str) -> str:
    """The HTML alternative of a plain-text reply: escaped, paragraphs kept."""
    paragraphs = [html.escape(p).replace("\n", "<br>\n") for p in text.split("\n\n")]
    return "<!doctype html><html><body>" + "".join(
        f"<p>{p}</p>" for p in paragraphs) + "</body></html>"


def build_reply(*, address: str, sender_name: str | None, to: str, token: str,
                subject: str, body: str, rfc_id: str, thread: list[tuple[str, str]],
                at: datetime, files: list[tuple[str, str, bytes]],
                cc: list[str] | None = None) -> EmailMessage:
    """The mail of one reply (module docstring, step 2)."""
    msg = EmailMessage()
    msg["From"] = display_address(address, sender_name)
    msg["To"] = to
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Reply-To"] = tokened_address(address, token)
    msg["Subject"] = reply_subject(subject, token)
    msg["Date"] = format_datetime(at)
    msg["Message-ID"] = f"<{rfc_id}>"
    inbound = [rfc for rfc, direction in thread if direction == "in"]
    if inbound:
        msg["In-Reply-To"] = f"<{inbound[-1]}>"
    if thread:
        msg["References"] = " ".join(f"<{rfc}>" for rfc, _ in thread[-20:])
    msg.set_content(body)
    msg.add_alternative(html_part(body), subtype="html")
    for name, content_type, data in files:
        maintype, _, subtype = content_type.partition("/")
        msg.add_attachment(data, maintype=maintype or "application",
                           subtype=subtype or "octet-stream", filename=name)
    return msg


async def _files(store: EventStore, storages: attachments.Storages, tenant_id: TenantId,
                 refs: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    actor = StoreActor("system", "mail")
    out = []
    for ref in refs:
        file = await attachments.open_file(store, storages, tenant_id, actor, UUID(ref["id"]))
        data = b"".join([piece async for piece in attachments.read_range(
            file, tenant_id, actor, 0, file.size - 1)])
        out.append((file.name, file.content_type, data))
    return out


async def deliver(ctx: JobContext, job: Job, *,
                  storages_for: Callable[[EventStore], attachments.Storages],
                  timeout: float = SMTP_TIMEOUT) -> None:
    """Job handler for ``mail.send`` (module docstring)."""
    assert job.tenant_id is not None
    tenant, store = job.tenant_id, ctx.store
    ticket_id, seq = UUID(job.payload["ticket_id"]), int(job.payload["seq"])
    at = ctx.clock.now()
    async with store.unit_of_work(tenant, StoreActor("system", "mail")) as uow:
        # The one event, not the ticket's whole stream (every event of which is opened).
        event = next(iter(await uow.read_tenant(seq - 1, 1)), None)
        if event is None or event.seq != seq or event.stream_id != ticket_id:
            return
        message_id = UUID(event.data["message_id"])
        # A reply split off before its mail went out is mailed as the split-off's (its
        # thread, token and subject), where its mail row is or will be.
        ticket_id = await uow.conn.fetchval(Q["message_ticket"], tenant,
                                            message_id) or ticket_id
        thread = await uow.conn.fetchrow(Q["mail_thread_get"], tenant, ticket_id)
        ticket = await load_ticket(uow.conn, tenant, ticket_id)
        if thread is None or ticket is None:
            return
        address, access = await mailboxes.smtp_access(uow, thread["mailbox_id"])
        row = await uow.conn.fetchrow(Q["outbound_take"], tenant, message_id)
        if row is None:
            rfc_id = f"{uuid.uuid4()}@{address.partition('@')[2]}"
            outcome, reason = ("queued", None) if access is not None else (
                "dead", "the mailbox has no outbound SMTP")
            requester = ticket.requester.email
            candidates = [*(c.email for c in ticket.ccs), *(
                r["address"] for r in await uow.conn.fetch(Q["mail_ticket_copies"], tenant,
                                                           ticket_id))]
            own = {r["address"] for r in await uow.conn.fetch(Q["mailbox_addresses"], tenant)}
            bouncing = {r["address"] for r in await uow.conn.fetch(
                Q["mail_bouncing"], tenant, [requester.lower(),
                                             *(c.lower() for c in candidates)])}
            if requester.lower() in bouncing and access is not None:
                outcome, reason = "dead", f"{requester} bounces"
            copies = list(reply_copies(requester, candidates, own, bouncing))
            await uow.conn.execute(
                Q["mail_insert"], tenant, uuid.uuid4(), thread["mailbox_id"], "out", rfc_id,
                ticket_id, message_id, address, [requester], copies, outcome, reason, at)
            row = await uow.conn.fetchrow(Q["outbound_take"], tenant, message_id)
            assert row is not None
        if row["outcome"] in ("sent", "dead"):
            return  # delivered already, or never deliverable
        history = [(r["rfc_message_id"], r["direction"])
                   for r in await uow.conn.fetch(Q["outbound_thread_ids"], tenant, ticket_id)
                   if r["rfc_message_id"] != row["rfc_message_id"]]
        # As the row has them: every attempt mails the same people.
        subject, token = ticket.subject, thread["token"]
        to, cc = row["to_addresses"][0], list(row["cc_addresses"])
        rfc_id, mail_row = row["rfc_message_id"], row["id"]
        body, refs = event.data["body"], list(event.data.get("attachments", []))
    assert access is not None
    files = await _files(store, storages_for(store), tenant, refs)
    message = build_reply(address=address, sender_name=None, to=to, cc=cc, token=token,
                          subject=subject, body=body, rfc_id=rfc_id, thread=history,
                          at=at, files=files)
    mailbox_id = thread["mailbox_id"]

    async def settle(uow: UnitOfWork, status: str, reason: str | None, _: None) -> None:
        await uow.conn.execute(Q["outbound_done"], tenant, mail_row, status, reason,
                               at if status == "sent" else None)
        await mailboxes.record_use(uow.conn, tenant, mailbox_id, at, reason)

    await delivery.attempt(store, tenant, StoreActor("system", "mail"), job,
                           lambda: send_mail(access, message, timeout), settle,
                           (MailNotSent,))


def register(registry: Registry, storages_for: Callable[[EventStore], attachments.Storages],
             *, timeout: float = SMTP_TIMEOUT, max_attempts: int | None = None) -> None:
    """Handle ``mail.send`` jobs in this process's scheduler."""
    registry.register(KIND, functools.partial(deliver, storages_for=storages_for,
                                              timeout=timeout), max_attempts=max_attempts)


__all__ = ["KIND", "MailNotSent", "build_reply", "deliver", "html_part", "register",
           "send_mail"]
