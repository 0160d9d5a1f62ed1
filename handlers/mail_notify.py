"""Notification mail: invitations, portal password links, a new ticket's acknowledgement
to its requester, and assignment, breach and follow notices to agents.

Each is a ``mail_notifications`` row, made once and sent by a ``mail.notify`` job
after the commit that called for it, the way replies are (handlers/mail_out.py):

- an invitation or a password link makes its row, with the token among its sealed
  values, and its job in the command's own transaction (``queue_notice``): the
  admin's answer still shows the token once, and the mail exists exactly when the
  invitation or the link does;
- an opened, assigned or breached ticket's event enqueues its job from the appending
  statement (migration 0670), when the tenant's ``mail_notifications`` setting asks
  for it; the job's first attempt makes the rows (one per recipient, each keyed by
  what it tells of and to whom, so a retry makes none twice);
- a followed ticket's message, state change or assignment makes its rows (one per
  follower but the agent who did it) and jobs in the command's own transaction
  (``queue_follower_notices``, from ``handlers.tickets``);
- a rule's ``send_mail`` action makes its rows and jobs in the rule's own transaction
  (``queue_notices``, from ``handlers.rule_mail``), with the rule's template among the
  sealed values.

A row's Message-ID is fixed when it is made; a row ``sent`` is never sent again, and
one that fails keeps the reason and is retried with backoff until the last attempt
makes it ``dead``. Sent or dead, its values (an invitation's token) are blanked. The
mail is rendered when it is sent, with the tenant's template of the kind (its own,
else the default) in Jinja2's sandbox (``domain.mail_templates``).

With no mailbox that has SMTP, nothing is made: notification mail is dormant. Every
notification carries ``Auto-Submitted: auto-generated`` (an acknowledgement
``auto-replied``, RFC 3834), so well-behaved systems never answer it.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from domain.mail import display_address, tokened_address
from domain.mail_templates import (
    PLACEHOLDERS,
    RULE_KIND,
    SAMPLES,
    MailTemplate,
    RenderFailed,
    TemplateInvalid,
    check_template,
    render,
    template_of,
)
from domain.tenant_settings import TenantSettings
from domain.ticket import Ticket
from domain.values import Actor, ActorKind
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import RecordedEvent, StoreActor
from handlers import delivery, mailboxes
from handlers.errors import Invalid
from handlers.mail_out import SMTP_TIMEOUT, MailNotSent, html_part, send_mail
from handlers.ticket_state import load_ticket
from projections.inline import PendingEvent
from projections.tenant_settings import load_settings
from scheduler import jobs
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

Q = load_queries(Path(__file__).with_name("mail.sql"))

KIND = "mail.notify"
MAX_ATTEMPTS = 8
ACTOR = StoreActor("system", "mail")


@dataclass(frozen=True, slots=True)
class Notice:
    """One notification to make: its kind, recipient, values and what keys it once."""

    kind: str
    to: str
    data: dict[str, str]
    dedupe_key: str
    ticket_id: UUID | None = None


def _desk(mailbox: Any) -> str:
    return str(mailbox["name"] or mailbox["address"])


def _seal(uow: UnitOfWork, row_id: UUID, data: dict[str, str]) -> tuple[bytes, str]:
    assert uow.keyring is not None
    return uow.keyring.wrap(uow.tenant_id, row_id, orjson.dumps(data)), uow.keyring.fingerprint


async def _insert(uow: UnitOfWork, mailbox: Any, notice: Notice, at: datetime) -> None:
    row_id = uuid.uuid4()
    rfc_id = f"{uuid.uuid4()}@{mailbox['address'].partition('@')[2]}"
    bouncing = await uow.conn.fetch(Q["mail_bouncing"], uow.tenant_id, [notice.to.lower()])
    status, reason = ("dead", f"{notice.to} bounces") if bouncing else ("queued", None)
    data, kek = _seal(uow, row_id, {**notice.data, "desk": _desk(mailbox)})
    await uow.conn.execute(Q["notice_insert"], uow.tenant_id, row_id, notice.kind,
                           notice.dedupe_key, mailbox["id"], notice.to, notice.ticket_id,
                           rfc_id, data, kek, status, reason, at)


async def queue_notice(uow: UnitOfWork, notice: Notice, at: datetime) -> bool:
    """Make ``notice`` and its job in the caller's transaction, if the tenant sends its
    kind and has a mailbox with SMTP (and a keyring to seal its values with); whether it
    did."""
    settings = await load_settings(uow.conn, uow.tenant_id)
    if not getattr(settings.mail_notifications, notice.kind):
        return False
    return await queue_notices(uow, [notice], at) is not None


async def sending_mailbox(conn: asyncpg.Connection, tenant: TenantId,
                          ticket_id: UUID | None = None) -> Any:
    """The mailbox notification mail goes out from (a mail ticket's own when it has SMTP,
    else the tenant's first with SMTP), or None: notification mail is dormant."""
    thread = None if ticket_id is None else await conn.fetchrow(
        Q["mail_thread_get"], tenant, ticket_id)
    return await conn.fetchrow(Q["sending_mailbox"], tenant,
                               None if thread is None else thread["mailbox_id"])


async def queue_notices(uow: UnitOfWork, notices: list[Notice], at: datetime,
                        ticket_id: UUID | None = None) -> list[UUID] | None:
    """Make ``notices`` and one job each in the caller's transaction, whatever the
    tenant's ``mail_notifications`` setting says (the caller chose to send them); the
    rows' ids, or None with no mailbox that has SMTP (or no keyring to seal with)."""
    mailbox = await sending_mailbox(uow.conn, uow.tenant_id, ticket_id)
    if mailbox is None or uow.keyring is None:
        return None
    for notice in notices:
        await _insert(uow, mailbox, notice, at)
    rows = [] if not notices else await uow.conn.fetch(
        Q["notices_by_keys"], uow.tenant_id, [n.dedupe_key for n in notices])
    for row in rows:
        await jobs.schedule(uow.conn, uow.tenant_id, KIND, at,
                            dedupe_key=f"notice:{row['id']}",
                            payload={"notification": str(row["id"])},
                            max_attempts=MAX_ATTEMPTS)
    return [r["id"] for r in rows]


async def tenant_slug(conn: asyncpg.Connection, tenant_id: TenantId) -> str:
    return str(await conn.fetchval(Q["tenant_slug"], tenant_id))


# --- what an event calls for -------------------------------------------------------------


async def _event_notices(uow: UnitOfWork, settings: TenantSettings, event: RecordedEvent
                         ) -> list[Notice]:
    wanted = settings.mail_notifications
    ticket = await load_ticket(uow.conn, uow.tenant_id, event.stream_id)
    if ticket is None:
        return []
    base = {"subject": ticket.subject, "ticket_id": str(ticket.id)}
    if event.type == "TicketOpened" and wanted.acknowledgement:
        email = ticket.requester.email
        if email.lower().endswith(".invalid"):
            return []  # no one's address (a Slack user's contact: docs/slack.md)
        thread = await uow.conn.fetchrow(Q["mail_thread_get"], uow.tenant_id, ticket.id)
        return [Notice("acknowledgement", email, {
            **base, "name": ticket.requester.name or email, "email": email,
            "reference": f"#{thread['token']}" if thread is not None else ""},
            f"ack:{ticket.id}", ticket.id)]
    if event.type == "TicketAssigned" and wanted.assignment:
        assignee = event.data.get("assignee")
        if assignee is None or (event.actor_kind == "agent" and event.actor_id == assignee):
            return []  # nobody, or one who took the ticket themselves
        agents = await uow.conn.fetch(Q["notice_agents"], uow.tenant_id, [UUID(assignee)])
        return [Notice("assignment", a["email"], {
            **base, "agent_name": a["name"], "priority": str(ticket.priority),
            "requester": ticket.requester.email}, f"assign:{event.seq}", ticket.id)
            for a in agents]
    if event.type == "SlaBreached" and wanted.breach:
        agents = [] if ticket.assignee is None else await uow.conn.fetch(
            Q["notice_agents"], uow.tenant_id, [ticket.assignee])
        if not agents:  # unassigned, or its assignee is deactivated: the admins are told
            agents = await uow.conn.fetch(Q["notice_agents"], uow.tenant_id, None)
        return [Notice("breach", a["email"], {
            **base, "agent_name": a["name"], "priority": str(ticket.priority),
            "metric": str(event.data["metric"]), "due_at": str(event.data["due_at"])},
            f"breach:{event.seq}:{a['id']}", ticket.id) for a in agents]
    return []


async def _make_event_notices(store: EventStore, tenant: TenantId, stream_id: UUID, seq: int,
                              at: datetime) -> list[UUID]:
    """The rows an event calls for, made by the first attempt (module docstring)."""
    async with store.unit_of_work(tenant, ACTOR) as uow:
        settings = await load_settings(uow.conn, tenant)
        event = next((e for e in await uow.read_stream(stream_id) if e.seq == seq), None)
        if event is None or uow.keyring is None:
            return []
        notices = await _event_notices(uow, settings, event)
        thread = await uow.conn.fetchrow(Q["mail_thread_get"], tenant, stream_id)
        mailbox = await uow.conn.fetchrow(Q["sending_mailbox"], tenant,
                                          None if thread is None else thread["mailbox_id"])
        if mailbox is None or not notices:
            return []
        for notice in notices:
            await _insert(uow, mailbox, notice, at)
        rows = await uow.conn.fetch(Q["notices_by_keys"], tenant,
                                    [n.dedupe_key for n in notices])
    return [r["id"] for r in rows]


FOLLOWED = frozenset({"MessageAdded", "StateChanged", "TicketAssigned"})
"""The events of a ticket its followers are mailed of (docs/email.md)."""


def _change(event: PendingEvent, names: dict[str, str]) -> str:
    """What an event did, as the follow mail's ``change`` says it."""
    if event.type == "MessageAdded":
        internal = event.data.get("visibility") == "internal"
        return "a new internal note" if internal else "a new public reply"
    if event.type == "StateChanged":
        return f"moved to {event.data.get('to_state')}"
    assignee = event.data.get("assignee")
    return ("been unassigned" if assignee is None
            else f"been assigned to {names.get(str(assignee), 'an agent')}")


async def queue_follower_notices(uow: UnitOfWork, ticket: Ticket,
                                 events: Sequence[PendingEvent], actor: Actor | None,
                                 at: datetime) -> None:
    """Mail the ticket's followers, in the command's own transaction, of its messages,
    state changes and assignments (one mail each per command), but not the agent who
    did it: when the tenant sends ``follow`` mail and has a mailbox with SMTP. An
    import (a unit of work that stamps its events) writes history: it tells no one."""
    followed = [e for e in events if e.stream_id == ticket.id and e.type in FOLLOWED]
    doer = actor.id if actor is not None and actor.kind is ActorKind.AGENT else None
    told = {str(a) for a in ticket.followers} - {doer}
    if uow.stamp or uow.keyring is None or not followed or not told:
        return
    settings = await load_settings(uow.conn, uow.tenant_id)
    if not settings.mail_notifications.follow:
        return
    assignees = {str(a) for e in followed
                 if e.type == "TicketAssigned" and (a := e.data.get("assignee"))}
    agents = await uow.conn.fetch(Q["notice_agents"], uow.tenant_id,
                                  [UUID(a) for a in told | assignees])
    names = {str(a["id"]): a["name"] for a in agents}
    change = " and ".join(dict.fromkeys(_change(e, names) for e in followed))
    version = max(e.version for e in followed)
    base = {"subject": ticket.subject, "ticket_id": str(ticket.id),
            "priority": str(ticket.priority), "change": change}
    notices = [Notice("follow", a["email"], {**base, "agent_name": a["name"]},
                      f"follow:{ticket.id}:{version}:{a['id']}", ticket.id)
               for a in agents if str(a["id"]) in told]
    if notices:
        await queue_notices(uow, notices, at, ticket.id)


# --- sending -----------------------------------------------------------------------------


THREADED = ("acknowledgement", RULE_KIND)
"""The kinds of mail that come back to their ticket (Reply-To its token, In-Reply-To
the mail that opened it), as a reply would."""


def _template(kind: str, data: dict[str, str], settings: TenantSettings) -> MailTemplate:
    """A rule's mail carries its rule's template (as the rule stood when it fired);
    the others are the tenant's of their kind."""
    if kind == RULE_KIND:
        return MailTemplate(data["template_subject"], data["template_body"])
    return template_of(kind, settings.mail_templates)


def links(kind: str, data: dict[str, str], public_url: str) -> dict[str, str]:
    """``data`` with the ``link`` of an invitation (the console) or a password link (the
    portal's page that spends it), under ``public_url`` ('' leaves the path alone)."""
    base = public_url.rstrip("/")
    if kind == "invitation":
        return {**data, "link": f"{base}/console/"}
    if kind == "portal_link":
        return {**data, "link": f"{base}/portal/{data['tenant']}/#/password/{data['token']}"}
    return data


def build_notice(*, kind: str, address: str, sender_name: str | None, to: str,
                 subject: str, body: str, rfc_id: str, at: datetime,
                 token: str | None, answers: str | None) -> EmailMessage:
    """The mail of one notification: an acknowledgement of a mail ticket comes back to
    its ticket (the token Reply-To, In-Reply-To the mail it answers)."""
    msg = EmailMessage()
    msg["From"] = display_address(address, sender_name)
    msg["To"] = to
    if token is not None:
        msg["Reply-To"] = tokened_address(address, token)
    msg["Subject"] = subject
    msg["Date"] = format_datetime(at)
    msg["Message-ID"] = f"<{rfc_id}>"
    if answers is not None:
        msg["In-Reply-To"] = f"<{answers}>"
        msg["References"] = f"<{answers}>"
    msg["Auto-Submitted"] = "auto-replied" if kind == "acknowledgement" else "auto-generated"
    msg.set_content(body)
    msg.add_alternative(html_part(body), subtype="html")
    return msg


async def _send_one(store: EventStore, tenant: TenantId, notice_id: UUID, *, job: Job,
                    public_url: str, timeout: float, at: datetime) -> None:
    """Mail one notification, settled as every outbound delivery is
    (``handlers.delivery``): the last attempt's failure leaves it ``dead``."""
    async with store.unit_of_work(tenant, ACTOR) as uow:
        row = await uow.conn.fetchrow(Q["notice_take"], tenant, notice_id)
        if row is None or row["status"] != "queued" or row["data"] is None:
            return  # sent already, or never deliverable
        settings = await load_settings(uow.conn, tenant)
        assert uow.keyring is not None
        data = orjson.loads(uow.keyring.unwrap(tenant, notice_id, bytes(row["data"]),
                                               row["kek"]))
        address, access = await mailboxes.smtp_access(uow, row["mailbox_id"])
        mailbox = await uow.conn.fetchrow(Q["mailbox_get"], tenant, row["mailbox_id"])
        token = answers = None
        if row["kind"] in THREADED and row["ticket_id"] is not None:
            thread = await uow.conn.fetchrow(Q["mail_thread_get"], tenant, row["ticket_id"])
            if thread is not None:
                token = thread["token"]
                answers = await uow.conn.fetchval(Q["notice_first_mail"], tenant,
                                                  row["ticket_id"])
        failure = None if access is not None else "the mailbox has no outbound SMTP"
        try:
            subject, body = render(_template(row["kind"], data, settings),
                                   links(row["kind"], data, public_url))
        except RenderFailed as exc:
            failure = f"the template did not render: {exc}"
        if failure is not None:
            await uow.conn.execute(Q["notice_done"], tenant, notice_id, "dead", failure, None)
            return
    assert access is not None
    try:
        message = build_notice(kind=row["kind"], address=address,
                               sender_name=mailbox["name"] if mailbox else None,
                               to=row["to_address"], subject=subject, body=body,
                               rfc_id=row["rfc_message_id"], at=at, token=token,
                               answers=answers)
    except (ValueError, TypeError) as exc:  # an address or header no mail can carry
        async with store.unit_of_work(tenant, ACTOR) as uow:
            await uow.conn.execute(Q["notice_done"], tenant, notice_id, "dead",
                                   f"the mail could not be made: {exc}"[:500], None)
        return
    mailbox_id = row["mailbox_id"]

    async def settle(uow: UnitOfWork, status: str, reason: str | None, _: None) -> None:
        await uow.conn.execute(Q["notice_done"], tenant, notice_id, status, reason,
                               at if status == "sent" else None)
        await mailboxes.record_use(uow.conn, tenant, mailbox_id, at, reason)

    def send() -> Awaitable[None]:
        return send_mail(access, message, timeout)

    await delivery.attempt(store, tenant, ACTOR, job, send, settle, (MailNotSent,))


async def deliver(ctx: JobContext, job: Job, *, public_url: str,
                  timeout: float = SMTP_TIMEOUT) -> None:
    """Job handler for ``mail.notify`` (module docstring)."""
    assert job.tenant_id is not None
    tenant, at = job.tenant_id, ctx.clock.now()
    if "notification" in job.payload:
        ids = [UUID(job.payload["notification"])]
    else:
        ids = await _make_event_notices(ctx.store, tenant, UUID(job.payload["stream_id"]),
                                        int(job.payload["seq"]), at)
    failed: MailNotSent | None = None
    for notice_id in ids:  # one recipient's failure does not hold back the others
        try:
            await _send_one(ctx.store, tenant, notice_id, job=job, public_url=public_url,
                            timeout=timeout, at=at)
        except MailNotSent as exc:  # raised only while attempts remain
            failed = exc
    if failed is not None:
        raise failed


def register(registry: Registry, *, public_url: str = "", timeout: float = SMTP_TIMEOUT,
             max_attempts: int | None = None) -> None:
    """Handle ``mail.notify`` jobs in this process's scheduler."""
    registry.register(KIND, functools.partial(deliver, public_url=public_url,
                                              timeout=timeout), max_attempts=max_attempts)


# --- the list ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoticeFilter:
    """What narrows the list of notifications (None: anything)."""

    kind: str | None = None
    status: str | None = None
    to: str | None = None
    ticket_id: UUID | None = None


def notice_document(row: Any) -> dict[str, Any]:
    """A notification as admins see it: never its values (an invitation's token)."""
    return {"id": row["id"], "kind": row["kind"], "mailbox_id": row["mailbox_id"],
            "to": row["to_address"], "ticket_id": row["ticket_id"],
            "rfc_message_id": row["rfc_message_id"], "status": row["status"],
            "attempts": row["attempts"], "last_error": row["reason"],
            "created_at": row["created_at"], "sent_at": row["sent_at"]}


async def list_notices(uow: UnitOfWork, filters: NoticeFilter,
                       after: tuple[datetime, UUID] | None, limit: int
                       ) -> list[dict[str, Any]]:
    """The tenant's notifications, oldest first, after ``after``."""
    conn, tenant_id = uow.conn, uow.tenant_id
    at, last = after if after is not None else (None, None)
    rows = await conn.fetch(Q["notice_page"], tenant_id, filters.kind, filters.status,
                            None if filters.to is None else filters.to.lower(),
                            filters.ticket_id, at, last, limit)
    return [notice_document(r) for r in rows]


# --- preview -----------------------------------------------------------------------------


async def preview(uow: UnitOfWork, kind: str, subject: str | None, body: str | None,
                  data: dict[str, str] | None) -> dict[str, Any]:
    """What ``kind``'s mail would say, changing nothing: the tenant's template of the kind
    (its own, else the default) with ``subject`` and ``body`` in place of its parts when
    given, and ``data`` laid over the kind's sample values. A template that does not
    compile or names an unknown placeholder, or a value of no placeholder, is
    ``Invalid``, as saving it would be."""
    settings = await load_settings(uow.conn, uow.tenant_id)
    current = template_of(kind, settings.mail_templates)
    chosen = MailTemplate(current.subject if subject is None else subject,
                          current.body if body is None else body)
    try:
        check_template(kind, chosen)
    except TemplateInvalid as exc:
        raise Invalid("validation_failed", exc.message, reason=exc.message,
                      field=exc.field) from exc
    unknown = sorted(set(data or {}) - set(PLACEHOLDERS[kind]))
    if unknown:
        reason = f"{kind} mail has no placeholder {unknown[0]}"
        raise Invalid("validation_failed", reason, reason=reason, field=f"data.{unknown[0]}")
    try:
        rendered_subject, rendered_body = render(chosen, {**SAMPLES[kind], **(data or {})})
    except RenderFailed as exc:
        reason = f"the template did not render: {exc}"
        raise Invalid("validation_failed", reason, reason=reason, field="body") from exc
    return {"kind": kind, "subject": rendered_subject, "body": rendered_body,
            "html": html_part(rendered_body), "placeholders": dict(PLACEHOLDERS[kind]),
            "own": kind in settings.mail_templates}


__all__ = ["FOLLOWED", "KIND", "THREADED", "Notice", "NoticeFilter", "build_notice", "deliver",
           "links", "list_notices", "notice_document", "preview", "queue_follower_notices",
           "queue_notice", "queue_notices", "register", "sending_mailbox", "tenant_slug"]
