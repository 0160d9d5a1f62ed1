"""A mailbox's servers tried out: IMAP login and folder, SMTP EHLO, STARTTLS and login.

What an admin's "test connection" asks (``POST /v1/mailboxes/{id}/test``). Nothing is
sent, fetched or flagged, and the mailbox's ``status`` is left as it is: a trial is no
use of the server. Each server is tried with a short timeout, both at once, and each
answers ``ok`` or ``failed`` with the reason; a mailbox without one answers
``not_configured`` for it.
"""

from __future__ import annotations

import asyncio
import imaplib
import smtplib
import ssl
from typing import Any
from uuid import UUID

from eventstore.store import UnitOfWork
from handlers import mail_out, mail_poll, mailboxes
from handlers.errors import Missing

TRIAL_TIMEOUT = 5.0
"""Seconds each server has to answer a trial: an admin is waiting on it."""


def _smtp_login(access: mailboxes.SmtpAccess, timeout: float) -> None:
    """EHLO, STARTTLS when asked, login when there is a username (blocking)."""
    with mail_out.smtp_session(access, timeout):
        pass


def _imap_login(access: mailboxes.ImapAccess, timeout: float) -> None:
    client = mail_poll.connect(access, timeout)
    mail_poll.logout(client)


async def _tried(probe: Any, access: Any, timeout: float) -> dict[str, Any]:
    try:
        # wait_for bounds a server that answers, but slowly, line by line.
        await asyncio.wait_for(asyncio.to_thread(probe, access, timeout), timeout * 2)
    except (OSError, smtplib.SMTPException, imaplib.IMAP4.error, ssl.SSLError,
            mail_poll.MailboxUnreachable, TimeoutError, UnicodeError, ValueError) as exc:
        return {"status": "failed", "reason": mail_poll.reason(exc)}
    return {"status": "ok", "reason": None}


async def try_mailbox(uow: UnitOfWork, mailbox_id: UUID, timeout: float = TRIAL_TIMEOUT
                      ) -> dict[str, Any]:
    """``{smtp: {status, reason}, imap: {status, reason}}`` for the mailbox's servers.

    Run in the caller's unit of work (its Idempotency-Key record), which holds its
    connection for the trial: at most twice ``timeout``, both servers tried at once."""
    if await mailboxes.get_mailbox(uow, mailbox_id) is None:
        raise Missing("mailbox_not_found", f"no mailbox {mailbox_id}")
    _, smtp = await mailboxes.smtp_access(uow, mailbox_id)
    imap = await mailboxes.imap_access(uow, mailbox_id)
    unset = {"status": "not_configured", "reason": None}
    smtp_said, imap_said = await asyncio.gather(
        _tried(_smtp_login, smtp, timeout) if smtp is not None else _unset(unset),
        _tried(_imap_login, imap, timeout) if imap is not None else _unset(unset))
    return {"smtp": smtp_said, "imap": imap_said}


async def _unset(doc: dict[str, Any]) -> dict[str, Any]:
    return doc
