"""Inbound mail by IMAP: the ``mail.poll`` job, one per tenant, polling its mailboxes.

A tenant gets the job when a mailbox of it is given IMAP (``ensure_poll``); the kind is
periodic (``MAIL_POLL_SECONDS``), so the job comes back one period after each run, and
one claim (SKIP LOCKED, lease) holds a tenant's mailboxes at a time: two workers never
poll one mailbox at once. Tenants without IMAP have no such job (the kind's global job,
which every periodic kind has, does nothing).
For each mailbox with IMAP, in turn:

1. connect (TLS, STARTTLS or plain), log in, select the folder, read its
   ``UIDVALIDITY``; a UIDVALIDITY other than the checkpoint's starts the folder over
   (the Message-IDs keep what was taken in before from coming in twice);
2. fetch the messages after the checkpoint's UID (``BODY.PEEK[]``: nothing is marked
   read by fetching), oldest first, at most ``BATCH`` a run;
3. take each in (handlers/mail_in.py) with the checkpoint (UIDVALIDITY, UID) written
   in the same transaction as the mail's ticket or message: a crash after that commit
   fetches the mail no more, a crash before it fetches it again, and its Message-ID
   makes that harmless;
4. only then flag the taken-in messages ``\\Seen`` on the server.

The server's failure is noted on the mailbox (readiness ``degraded``) and raised, for
the queue's backoff; an unreachable server holds up nothing else. Where the server
offers IDLE, the tenant's ``mail.idle`` job (handlers/mail_idle.py) makes this job due
as soon as a mail arrives; the period is the latency only where it does not.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import imaplib
import re
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from uuid import UUID

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from handlers import attachments, mail_in, mailboxes
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry
from scheduler.tenant_seed import ensure_tenant_jobs

Q = load_queries(Path(__file__).with_name("mail.sql"))

KIND = "mail.poll"
BATCH = 200
IMAP_TIMEOUT = 15.0


class MailboxUnreachable(Exception):
    """The IMAP server could not be reached, refused the login or the folder."""


@dataclass(frozen=True, slots=True)
class Fetched:
    uidvalidity: int
    messages: list[tuple[int, bytes]]


def connect(access: mailboxes.ImapAccess, timeout: float) -> imaplib.IMAP4:
    """Logged in, the folder selected (blocking); ``MailboxUnreachable`` when refused."""
    context = ssl.create_default_context()
    client: imaplib.IMAP4
    if access.security == "tls":
        client = imaplib.IMAP4_SSL(access.host, access.port, ssl_context=context,
                                   timeout=timeout)
    else:
        client = imaplib.IMAP4(access.host, access.port, timeout=timeout)
        if access.security == "starttls":
            client.starttls(ssl_context=context)
    client.login(access.username, access.password)
    typ, _ = client.select(_quoted(access.folder))
    if typ != "OK":
        raise MailboxUnreachable(f"cannot select folder {access.folder!r}")
    return client


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fetch(access: mailboxes.ImapAccess, limit: int, timeout: float) -> Fetched:
    """The messages after the checkpoint (blocking: run in a thread)."""
    client = connect(access, timeout)
    try:
        _, said = client.response("UIDVALIDITY")
        uidvalidity = int(said[0]) if said and said[0] else 0
        after = access.last_uid if access.uidvalidity == uidvalidity else 0
        typ, data = client.uid("SEARCH", f"UID {after + 1}:*")
        if typ != "OK":
            raise MailboxUnreachable(f"UID SEARCH failed: {data!r}"[:300])
        # "n:*" always names the last message, even one at or below n.
        uids = sorted(u for u in (int(x) for x in (data[0] or b"").split()) if u > after)
        messages = []
        for uid in uids[:limit]:
            typ, parts = client.uid("FETCH", str(uid), "(BODY.PEEK[])")
            raw = next((p[1] for p in parts if isinstance(p, tuple)), None)
            if typ != "OK" or raw is None:
                raise MailboxUnreachable(f"cannot fetch UID {uid}")
            messages.append((uid, bytes(raw)))
        return Fetched(uidvalidity, messages)
    finally:
        logout(client)


def _flag(access: mailboxes.ImapAccess, uids: list[int], timeout: float) -> None:
    client = connect(access, timeout)
    try:
        for start in range(0, len(uids), 100):
            chunk = ",".join(map(str, uids[start:start + 100]))
            client.uid("STORE", chunk, "+FLAGS.SILENT", r"(\Seen)")
    finally:
        logout(client)


def logout(client: imaplib.IMAP4) -> None:
    """Log out, whatever the server says to it."""
    with contextlib.suppress(OSError, imaplib.IMAP4.error):
        client.logout()


_SAFE = re.compile(r"[^\x20-\x7e]")


def reason(exc: BaseException) -> str:
    """A failure as one printable line to keep or show."""
    return _SAFE.sub("?", f"{type(exc).__name__}: {exc}")[:400]


async def poll_mailbox(store: EventStore, storages: attachments.Storages, tenant_id: TenantId,
                       mailbox_id: UUID, now: Callable[[], datetime], *,
                       limit: int = BATCH, timeout: float = IMAP_TIMEOUT) -> list[str]:
    """Poll one mailbox (module docstring); the outcome of each mail taken in."""
    async with store.session(tenant_id, readonly=True) as uow:
        access = await mailboxes.imap_access(uow.conn, store.keyring, tenant_id, mailbox_id)
    if access is None:
        return []
    try:
        fetched = await asyncio.to_thread(_fetch, access, limit, timeout)
    except (OSError, imaplib.IMAP4.error, MailboxUnreachable, ssl.SSLError) as exc:
        async with store.session(tenant_id, mail_in.mail_actor(mailbox_id)) as uow:
            await mailboxes.record_use(uow.conn, tenant_id, mailbox_id, now(),
                                       reason(exc))
        raise MailboxUnreachable(reason(exc)) from exc
    outcomes = []
    for uid, raw in fetched.messages:
        async def checkpoint(uow: UnitOfWork, uid: int = uid) -> None:
            await uow.conn.execute(Q["imap_checkpoint"], tenant_id, mailbox_id,
                                   fetched.uidvalidity, uid)

        taken = await mail_in.take_in(store, storages, tenant_id, mailbox_id, raw,
                                      now(), checkpoint=checkpoint)
        outcomes.append(taken.outcome)
    if fetched.messages:
        # Taken in and checkpointed already: the flag is a courtesy to people reading
        # the mailbox, and a failure to set it loses nothing.
        with contextlib.suppress(OSError, imaplib.IMAP4.error, MailboxUnreachable,
                                 ssl.SSLError):
            await asyncio.to_thread(_flag, access, [u for u, _ in fetched.messages], timeout)
    async with store.session(tenant_id, mail_in.mail_actor(mailbox_id)) as uow:
        await mailboxes.record_use(uow.conn, tenant_id, mailbox_id, now(), None)
    return outcomes


async def poll(ctx: JobContext, job: Job, *,
               storages_for: Callable[[EventStore], attachments.Storages],
               timeout: float = IMAP_TIMEOUT) -> None:
    """Job handler for ``mail.poll``: every IMAP mailbox of the job's tenant. One
    mailbox's failure does not stop the others; the job raises after them all."""
    if job.tenant_id is None:
        return
    tenant = job.tenant_id
    async with ctx.store.session(tenant, readonly=True) as uow:
        ids = [r["id"] for r in await uow.conn.fetch(Q["imap_mailboxes"], tenant)]
    if ids:  # the IDLE watch of a tenant whose mailbox was made before it existed
        async with ctx.store.session(tenant, mail_in.mail_actor(ids[0])) as uow:
            await ensure_tenant_jobs(uow.conn, tenant, [(mailboxes.IDLE_KIND,
                                                         mailboxes.IDLE_KIND)],
                                     ctx.clock.now())
    storages = storages_for(ctx.store)
    failed: list[str] = []
    for mailbox_id in ids:
        try:
            await poll_mailbox(ctx.store, storages, tenant, mailbox_id, ctx.clock.now,
                               timeout=timeout)
        except MailboxUnreachable as exc:
            failed.append(f"{mailbox_id}: {exc}")
    if failed:
        raise MailboxUnreachable("; ".join(failed)[:1000])


def register(registry: Registry, storages_for: Callable[[EventStore], attachments.Storages],
             *, every: timedelta = timedelta(seconds=60), timeout: float = IMAP_TIMEOUT) -> None:
    """Poll each tenant's IMAP mailboxes every ``every``."""
    registry.periodic(KIND, every, functools.partial(poll, storages_for=storages_for,
                                                     timeout=timeout))


__all__ = ["KIND", "MailboxUnreachable", "poll", "poll_mailbox", "register"]
