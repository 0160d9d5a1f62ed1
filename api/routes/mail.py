"""Mail: the tenant's mailboxes (admin), inbound mail, the quarantine, a ticket's mail.

- ``/v1/mailboxes``: an address, outbound SMTP (optional) and an inbound secret, shown
  once at creation. Secrets are never returned (handlers/mailboxes.py). A mailbox that
  never took in or sent mail can be deleted.
- ``POST /v1/inbound/mail/{mailbox_id}``: a raw RFC 5322 message (an MTA's pipe, a
  mail provider's inbound webhook), its credential the mailbox's inbound secret as a
  bearer token. The answer says what became of it (handlers/mail_in.py); a mail that
  cannot be parsed is kept in the quarantine and answered 200 too, so the sender does
  not retry what would fail again.
- ``POST /v1/mailboxes/{id}/test``: a trial login on its IMAP and SMTP servers, each
  answered ``ok`` or ``failed`` with the reason (handlers/mail_check.py).
- ``/v1/mailboxes/{id}/quarantine``: list, retry, discard.
- ``GET /v1/tickets/{id}/mail``: the mail a ticket took in and sent, with each reply's
  delivery status.
- ``GET /v1/mail-notifications``: the notification mail queued, sent and dead (admin).
- ``POST /v1/mail-templates/preview``: a notification mail rendered with the tenant's
  template (or one not yet saved) and sample or given values; it changes nothing.

See docs/email.md.
"""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from api.http import commands
from api.http.answer_headers import LOCATION, sends
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch, bearer_token
from api.http.limits import whole_body
from api.http.pagination import DEFAULT_LIMIT, PageAsked, PageCursor, PageLimit, tenant_list_page
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.mail import (
    DkimIn,
    ImapIn,
    MailboxCreated,
    MailboxIn,
    MailboxOut,
    MailboxPage,
    MailboxPatch,
    MailboxTrialOut,
    MailPreviewIn,
    MailPreviewOut,
    NoticeKind,
    NoticeStatus,
    NotificationPage,
    QuarantinedOut,
    QuarantinePage,
    SmtpIn,
    TakenInOut,
    TicketMail,
)
from domain.ids import TenantId
from eventstore.store import UnitOfWork
from handlers import mail_check, mail_in, mail_notify, mailboxes

router = APIRouter(tags=["mail"], route_class=StrictRoute)

MAIL_MAX_BYTES = 30 * 1024 * 1024
"""The largest raw message taken in (providers cap mail at 25-35 MB)."""



def _cleared(given: SmtpIn | ImapIn | DkimIn, secret: str) -> bool:
    """Whether ``secret`` was given as null: forget the stored one (left out, it is
    kept)."""
    return secret in given.model_fields_set and getattr(given, secret) is None


def _smtp(given: SmtpIn | None) -> mailboxes.Smtp | None:
    return None if given is None else mailboxes.Smtp(
        host=given.host, port=given.port, security=given.security, username=given.username,
        password=given.password, clear_password=_cleared(given, "password"))


def _imap(given: ImapIn | None) -> mailboxes.Imap | None:
    return None if given is None else mailboxes.Imap(
        host=given.host, port=given.port, security=given.security, username=given.username,
        password=given.password, folder=given.folder,
        clear_password=_cleared(given, "password"))


def _dkim(given: DkimIn | None) -> mailboxes.Dkim | None:
    return None if given is None else mailboxes.Dkim(
        selector=given.selector, domain=given.domain, private_key=given.private_key,
        clear_key=_cleared(given, "private_key"))


def _safe(body: Any) -> dict[str, Any]:
    """A mailbox body as its Idempotency-Key record keeps it: without the passwords and
    the DKIM key."""
    doc: dict[str, Any] = body.model_dump(mode="json", exclude_unset=True)
    for part in ("smtp", "imap", "dkim"):
        if isinstance(doc.get(part), dict):
            doc[part] = {k: v for k, v in doc[part].items()
                         if k not in ("password", "private_key")}
    return doc


@router.get("/v1/mailboxes", response_model=MailboxPage, responses=errors(),
            summary="List the mailboxes")
async def list_mailboxes(principal: Authorized, services: ServicesDep,
                         paging: Paging) -> Response:
    """Oldest first; pass ``next_cursor`` back as ``cursor``."""

    async def read(s: UnitOfWork, after: Any, n: int) -> list[dict[str, Any]]:
        return await mailboxes.list_mailboxes(s, after, n)

    page, nxt = await tenant_list_page(services.cursors, services.store, principal.tenant_id,
                                       "mailboxes", read, paging)
    return JsonReply(200, {"data": page, "next_cursor": nxt}).response()


@router.post("/v1/mailboxes", status_code=201, response_model=MailboxCreated,
             responses=errors(409, 413, 415) | sends(201, required=(LOCATION,)),
             summary="Add a mailbox")
async def create_mailbox(body: MailboxIn, request: Request, principal: Authorized,
                         services: ServicesDep) -> Response:
    """The answer carries the inbound secret, shown this once (a replay of the same
    ``Idempotency-Key`` does not show it again: it is never stored)."""
    command = mailboxes.CreateMailbox(address=body.address.lower(), name=body.name,
                                      smtp=_smtp(body.smtp), imap=_imap(body.imap),
                                      dkim=_dkim(body.dkim), at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        doc, secret = await mailboxes.create_mailbox(uow, command)
        where = f"/v1/mailboxes/{doc['id']}"
        return JsonReply(201, {**doc, "inbound_secret": secret,
                               "inbound_url": f"/v1/inbound/mail/{doc['id']}"},
                         {"Location": where})

    return await commands.run(request, services, principal, _safe(body), work)


@router.get("/v1/mailboxes/{mailbox_id}", response_model=MailboxOut, responses=errors(404),
            summary="A mailbox")
async def get_mailbox(mailbox_id: UUID, principal: Authorized,
                      services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        doc = await mailboxes.get_mailbox(s, mailbox_id)
    if doc is None:
        raise Problem(404, "mailbox_not_found", f"no mailbox {mailbox_id}")
    return JsonReply(200, doc).response()


@router.patch("/v1/mailboxes/{mailbox_id}", response_model=MailboxOut,
              responses=errors(404, 409, 412, 413, 415), summary="Change a mailbox")
async def change_mailbox(mailbox_id: UUID, body: MailboxPatch, request: Request,
                         principal: Authorized, services: ServicesDep,
                         if_match: IfMatch = None) -> Response:
    """``smtp`` replaces the SMTP settings (its password kept when left out, forgotten
    when given as null); ``smtp: null`` stops outbound mail; ``imap`` likewise.
    ``If-Match`` (the ``version`` shown) makes it a 412 when the mailbox changed since."""
    given = body.model_fields_set
    command = mailboxes.ChangeMailbox(
        mailbox_id=mailbox_id, name=body.name, smtp=_smtp(body.smtp),
        clear_smtp="smtp" in given and body.smtp is None, imap=_imap(body.imap),
        clear_imap="imap" in given and body.imap is None, dkim=_dkim(body.dkim),
        clear_dkim="dkim" in given and body.dkim is None, at=services.clock.now(),
        expected_version=commands.parse_if_match(if_match))

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await mailboxes.change_mailbox(uow, command))

    return await commands.run(request, services, principal, _safe(body), work)


@router.delete("/v1/mailboxes/{mailbox_id}", response_model=MailboxOut,
               responses=errors(404, 409, 412), summary="Delete an unused mailbox")
async def delete_mailbox(mailbox_id: UUID, request: Request, principal: Authorized,
                         services: ServicesDep, if_match: IfMatch = None) -> Response:
    """Only a mailbox that never took in or sent mail (409 ``mailbox_in_use``
    otherwise: set its ``smtp`` and ``imap`` to null to stop it). The answer is what
    was deleted. ``If-Match`` as for a change."""
    at = services.clock.now()
    expected = commands.parse_if_match(if_match)

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await mailboxes.delete_mailbox(uow, mailbox_id, at, expected))

    return await commands.run(request, services, principal, None, work)


@router.post("/v1/mailboxes/{mailbox_id}/test", response_model=MailboxTrialOut,
             responses=errors(404), summary="Try a mailbox's servers")
async def try_mailbox(mailbox_id: UUID, request: Request, principal: Authorized,
                      services: ServicesDep) -> Response:
    """Log in to its IMAP server (and select the folder) and to its SMTP server (EHLO,
    STARTTLS, AUTH), a few seconds each, sending and fetching nothing. A server that
    refuses or does not answer is ``failed`` with the reason, still a 200; one the
    mailbox has not is ``not_configured``."""

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await mail_check.try_mailbox(uow, mailbox_id))

    return await commands.run(request, services, principal, None, work)


@router.post("/v1/inbound/mail/{mailbox_id}", response_model=TakenInOut,
             responses=errors(401, 413, 415), summary="Take in a raw mail")
async def inbound_mail(mailbox_id: UUID, request: Request, services: ServicesDep) -> Response:
    """The body is the message as received (``Content-Type: message/rfc822``), the
    credential the mailbox's inbound secret (``Authorization: Bearer hdmail_...``).
    Delivering the same mail again does nothing twice (its ``Message-ID``)."""
    secret = bearer_token(request.headers.get("authorization"))
    if not secret:
        raise Problem(401, "unauthorized", "the mailbox's inbound secret is required",
                      headers={"WWW-Authenticate": "Bearer"})
    content_type = (request.headers.get("content-type") or "").split(";")[0].strip().lower()
    if content_type not in ("message/rfc822", "application/octet-stream", "text/plain"):
        raise Problem(415, "unsupported_media_type",
                      "send the raw message as message/rfc822")
    async with services.pool.acquire() as conn:
        tenant = await mailboxes.inbound_tenant(conn, mailbox_id, secret)
    if tenant is None:
        raise Problem(401, "unauthorized", "unknown mailbox or wrong inbound secret",
                      headers={"WWW-Authenticate": "Bearer"})
    raw = await whole_body(request, MAIL_MAX_BYTES, f"a mail is at most {MAIL_MAX_BYTES} bytes",
                           "the mail was cut off")
    taken = await mail_in.take_in(services.store, services.files, TenantId(tenant),
                                  mailbox_id, raw, services.clock.now())
    return JsonReply(200, _taken(taken)).response()


def _taken(taken: mail_in.TakenIn) -> dict[str, Any]:
    return {"outcome": taken.outcome, "reason": taken.reason, "ticket_id": taken.ticket_id,
            "message_id": taken.message_id, "mail_id": taken.mail_id}


@router.get("/v1/mail-notifications", response_model=NotificationPage, responses=errors(),
            summary="List the notification mail")
async def list_notifications(
        principal: Authorized, services: ServicesDep, limit: PageLimit = DEFAULT_LIMIT,
        cursor: PageCursor = None, kind: NoticeKind | None = None,
        status: NoticeStatus | None = None,
        to: Annotated[str | None, Query(min_length=3, max_length=320,
                                        description="The recipient (any case).")] = None,
        ticket_id: UUID | None = None) -> Response:
    """Invitations, password links, acknowledgements, assignment and breach notices and
    rules' mail, oldest first: each one's recipient, status (``queued``, ``sent``,
    ``dead``), attempts and last error."""
    filters = mail_notify.NoticeFilter(kind=kind, status=status, to=to, ticket_id=ticket_id)

    async def read(s: UnitOfWork, after: Any, n: int) -> list[dict[str, Any]]:
        return await mail_notify.list_notices(s, filters, after, n)

    scope = {k: str(v) for k, v in (("kind", kind), ("status", status),
                                    ("to", None if to is None else to.lower()),
                                    ("ticket", ticket_id)) if v is not None}
    page, nxt = await tenant_list_page(services.cursors, services.store, principal.tenant_id,
                                       "mail_notifications", read, PageAsked(limit, cursor),
                                       filters=scope)
    return JsonReply(200, {"data": page, "next_cursor": nxt}).response()


@router.get("/v1/mailboxes/{mailbox_id}/quarantine", response_model=QuarantinePage,
            responses=errors(404), summary="List the mailbox's quarantined mail")
async def list_quarantine(mailbox_id: UUID, principal: Authorized, services: ServicesDep,
                          paging: Paging) -> Response:
    """Mail that could not be taken in, oldest first, with the reason."""
    async with commands.reading(services, principal) as s:
        if await mailboxes.get_mailbox(s, mailbox_id) is None:
            raise Problem(404, "mailbox_not_found", f"no mailbox {mailbox_id}")

    async def read(s: UnitOfWork, after: Any, n: int) -> list[dict[str, Any]]:
        return await mail_in.list_quarantine(s, mailbox_id, after, n)

    page, nxt = await tenant_list_page(services.cursors, services.store, principal.tenant_id,
                                       "quarantine", read, paging,
                                       filters={"mailbox": str(mailbox_id)})
    return JsonReply(200, {"data": page, "next_cursor": nxt}).response()


@router.post("/v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}/retry",
             response_model=TakenInOut, responses=errors(404),
             summary="Take a quarantined mail in again")
async def retry_quarantined(mailbox_id: UUID, quarantined_id: UUID, request: Request,
                            principal: Authorized, services: ServicesDep) -> Response:
    """Taken in, it leaves the quarantine; refused again, it stays with the new reason
    (``outcome: quarantined``). The mail is taken in by its own transactions (as any
    inbound mail is); the ``Idempotency-Key`` record keeps the answer."""

    async def work(uow: UnitOfWork) -> JsonReply:
        taken = await mail_in.retry_quarantined(services.store, services.files,
                                                principal.tenant_id, mailbox_id,
                                                quarantined_id, services.clock.now())
        return JsonReply(200, _taken(taken))

    return await commands.run(request, services, principal, None, work)


@router.delete("/v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}",
               response_model=QuarantinedOut, responses=errors(404),
               summary="Discard a quarantined mail")
async def discard_quarantined(mailbox_id: UUID, quarantined_id: UUID, request: Request,
                              principal: Authorized, services: ServicesDep) -> Response:
    """The answer is what was discarded."""

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await mail_in.discard_quarantined(uow, mailbox_id,
                                                                quarantined_id))

    return await commands.run(request, services, principal, None, work)


@router.get("/v1/tickets/{ticket_id}/mail", response_model=TicketMail, responses=errors(404),
            summary="The ticket's mail and each reply's delivery")
async def ticket_mail(ticket_id: UUID, principal: Authorized,
                      services: ServicesDep) -> Response:
    """Oldest first: what the ticket took in (with its Cc) and each mailed reply's status
    (``queued``, ``sent``, ``dead`` with the reason)."""
    async with commands.reading(services, principal) as s:
        data = await mail_in.mail_of_ticket(s, ticket_id)
    if data is None:
        raise Problem(404, "not_found", f"no ticket {ticket_id}")
    return JsonReply(200, {"data": data}).response()


@router.post("/v1/mail-templates/preview", response_model=MailPreviewOut,
             responses=errors(413, 415), summary="Render a notification mail")
async def preview_mail(body: MailPreviewIn, request: Request, principal: Authorized,
                       services: ServicesDep) -> Response:
    """The subject, text and HTML a notification of ``kind`` would have, rendered in the
    template sandbox; nothing is saved or sent. A template that does not compile or
    names a placeholder the kind lacks is a 422, as saving it in ``mail_templates`` of
    ``PUT /v1/settings`` would be."""

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await mail_notify.preview(uow, body.kind, body.subject,
                                                        body.body, body.data))

    return await commands.run(request, services, principal,
                              body.model_dump(mode="json"), work)


__all__ = ["MAIL_MAX_BYTES", "QuarantinedOut", "router"]
