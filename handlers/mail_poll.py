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
   read by fetching), oldest first, ``FETCH_CHUNK`` to a command, at most ``BATCH`` a
   run;
3. take them in (handlers/mail_in.py ``take_in_all``) with the checkpoint
   (UIDVALIDITY, UID) written in the same transaction as the tickets or messages it
   covers: a crash after that commit fetches those mails no more, a crash before it
   fetches them again, and their Message-IDs make that harmless;
4. only then flag the taken-in messages ``\\Seen`` on the server, on the same login;
5. look again on that login (NOOP, then the search) for mail that came meanwhile, and
   take it in the same way, until a look finds none or the batch is full: a mail that
   arrives during a poll waits for no other poll.

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
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar
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
FETCH_CHUNK = 50
"""Messages fetched by one ``UID FETCH``: a round trip each, not one per message."""
IMAP_TIMEOUT = 15.0
_T = TypeVar("_T")
_UID = re.compile(rb"\bUID (\d+)", re.IGNORECASE)


class MailboxUnreachable(Exception):
    """The IMAP server could not be reached, refused the login or the folder."""


_IMAP_ERRORS = (OSError, imaplib.IMAP4.error, MailboxUnreachable, ssl.SSLError)


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


def _open(access: mailboxes.ImapAccess, timeout: float) -> tuple[imaplib.IMAP4, int]:
    """Logged in, the folder selected, and its UIDVALIDITY (blocking: run in a thread)."""
    client = connect(access, timeout)
    try:
        _, said = client.response("UIDVALIDITY")
        return client, int(said[0]) if said and said[0] else 0
    except BaseException:
        logout(client)
        raise


def _fetch(client: imaplib.IMAP4, after: int, limit: int, again: bool
           ) -> list[tuple[int, bytes]]:
    """The first ``limit`` messages after UID ``after``, oldest first (blocking: run in
    a thread); ``again``: a NOOP first, so the server tells of mail that came since."""
    if again:
        client.noop()
    typ, data = client.uid("SEARCH", f"UID {after + 1}:*")
    if typ != "OK":
        raise MailboxUnreachable(f"UID SEARCH failed: {data!r}"[:300])
    # "n:*" always names the last message, even one at or below n.
    uids = sorted(u for u in (int(x) for x in (data[0] or b"").split()) if u > after)[:limit]
    messages: dict[int, bytes] = {}
    for start in range(0, len(uids), FETCH_CHUNK):
        chunk = uids[start:start + FETCH_CHUNK]
        typ, parts = client.uid("FETCH", ",".join(map(str, chunk)), "(UID BODY.PEEK[])")
        if typ != "OK":
            raise MailboxUnreachable(f"cannot fetch UIDs {chunk[0]}-{chunk[-1]}")
        for k, part in enumerate(parts):
            if not isinstance(part, tuple):
                continue
            # "* n FETCH (UID u BODY[] {size}", the body, then ")": the UID is before the
            # body as asked, or after it where a server answers in another order.
            found = _UID.search(part[0])
            if found is None and k + 1 < len(parts) and isinstance(parts[k + 1], bytes):
                found = _UID.search(parts[k + 1])
            if found is not None:
                messages[int(found.group(1))] = bytes(part[1])
    missing = [u for u in uids if u not in messages]
    if missing:
        raise MailboxUnreachable(f"cannot fetch UID {missing[0]}")
    return [(u, messages[u]) for u in uids]


def _flag(client: imaplib.IMAP4, uids: list[int]) -> None:
    for start in range(0, len(uids), 100):
        chunk = ",".join(map(str, uids[start:start + 100]))
        client.uid("STORE", chunk, "+FLAGS.SILENT", r"(\Seen)")


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
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        access = await mailboxes.imap_access(uow, mailbox_id)
    if access is None:
        return []

    async def imap(fn: Callable[..., _T], *args: Any) -> _T:
        """``fn`` in a thread; the server's failure noted on the mailbox and raised."""
        try:
            return await asyncio.to_thread(fn, *args)
        except _IMAP_ERRORS as exc:
            async with store.unit_of_work(tenant_id, mail_in.mail_actor(mailbox_id)) as uow:
                await mailboxes.record_use(uow.conn, tenant_id, mailbox_id, now(),
                                           reason(exc))
            raise MailboxUnreachable(reason(exc)) from exc

    client, uidvalidity = await imap(_open, access, timeout)
    outcomes: list[str] = []
    try:
        after = access.last_uid if access.uidvalidity == uidvalidity else 0
        # Again after each round, on the same login, for mail that came meanwhile (IDLE
        # would only make the next poll due), until a round finds none or the batch
        # is full.
        while len(outcomes) < limit:
            fetched = await imap(_fetch, client, after, limit - len(outcomes),
                                 bool(outcomes))
            if not fetched:
                break

            async def checkpoint(uow: UnitOfWork, i: int,
                                 fetched: list[tuple[int, bytes]] = fetched) -> None:
                await uow.conn.execute(Q["imap_checkpoint"], tenant_id, mailbox_id,
                                       uidvalidity, fetched[i][0])

            taken = await mail_in.take_in_all(store, storages, tenant_id, mailbox_id,
                                              [raw for _, raw in fetched], now,
                                              checkpoint=checkpoint)
            outcomes += [t.outcome for t in taken]
            # Taken in and checkpointed already: the flag is a courtesy to people
            # reading the mailbox, and a failure to set it loses nothing.
            with contextlib.suppress(*_IMAP_ERRORS):
                await asyncio.to_thread(_flag, client, [u for u, _ in fetched])
            after = fetched[-1][0]
    finally:
        await asyncio.to_thread(logout, client)
    async with store.unit_of_work(tenant_id, mail_in.mail_actor(mailbox_id)) as uow:
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
    async with ctx.store.unit_of_work(tenant, readonly=True) as uow:
        ids = [r["id"] for r in await uow.conn.fetch(Q["imap_mailboxes"], tenant)]
    if ids:  # the IDLE watch of a tenant whose mailbox was made before it existed
        async with ctx.store.unit_of_work(tenant, mail_in.mail_actor(ids[0])) as uow:
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
