"""The ``mail.idle`` job: IMAP IDLE, so a mail becomes a ticket when it arrives instead
of one poll period later.

One job per tenant with an IMAP mailbox (made with its ``mail.poll`` job). It holds an
IDLE session (handlers/imap_idle.py) on each of the tenant's mailboxes whose server
offers IDLE, and when one says a message exists it makes the tenant's ``mail.poll``
job due now. It fetches nothing: every mail is still taken in by the poll, under the
poll's one claim (SKIP LOCKED, lease), with the UIDVALIDITY/UID checkpoint in the
transaction of its ticket and the ``\\Seen`` flag after the commit, so IDLE adds no
way for a mail to come in twice or be lost. A watch that dies costs latency only: the
poll still runs every period.

A mail that arrives while the poll runs may have arrived after the run looked, so the
nudge waits for the poll's next ``ready`` row and moves that one; a poll that starts
after the arrival always sees the mail. When a session starts, a folder whose
``UIDNEXT`` is past the checkpoint (mail that came while nobody watched) is a nudge
too.

The job holds one of its scheduler's job slots while it watches, so a process watches
at most ``MAIL_IDLE_TENANTS`` tenants at once (``IdleSlots``); the job of a tenant past
that ends at once and comes back a period later, polled meanwhile. A server without
IDLE is polled only. The watch re-reads the tenant's mailboxes every ``refresh``
seconds (a changed server, a new mailbox, a session that failed), re-issues IDLE every
``reissue`` seconds (RFC 2177: within 29 minutes), and ends when the scheduler stops;
the job then comes back a period later, on whichever worker claims it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from datetime import timedelta
from pathlib import Path
from uuid import UUID

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.types import StoreActor
from handlers import mailboxes
from handlers.imap_idle import IdleSession
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry
from scheduler.tenant_seed import ensure_tenant_jobs

Q = load_queries(Path(__file__).with_name("mail.sql"))
log = logging.getLogger("helpdesk.mail")

KIND = mailboxes.IDLE_KIND
NUDGE_RETRY = 0.2
IDLE_ACTOR = StoreActor("system", "mail:idle")


@dataclasses.dataclass(slots=True)
class IdleSlots:
    """Tenants this process watches at once, at most ``limit`` (0: IDLE is off)."""

    limit: int
    held: int = 0


def _server(access: mailboxes.ImapAccess) -> mailboxes.ImapAccess:
    """The access without its checkpoint, which moves with every poll."""
    return dataclasses.replace(access, uidvalidity=None, last_uid=0)


async def watch_mailbox(access: mailboxes.ImapAccess, arrived: asyncio.Event, *,
                        timeout: float, reissue: float) -> None:
    """Idle on one mailbox until cancelled; returns at once if the server has no IDLE."""
    session = await IdleSession.open(access, timeout)
    try:
        if "IDLE" not in session.capabilities:
            return
        folder = await session.examine(access.folder, timeout)
        if folder.uidvalidity != access.uidvalidity or (
                folder.uidnext is not None and folder.uidnext > access.last_uid + 1):
            arrived.set()
        while True:
            await session.idle(reissue, arrived, timeout)
    finally:
        session.close()


async def poll_now(ctx: JobContext, tenant_id: TenantId) -> bool:
    """Make the tenant's waiting poll due now; False while only a running one exists."""
    now = ctx.clock.now()
    async with ctx.store.unit_of_work(tenant_id, IDLE_ACTOR) as uow:
        if await uow.conn.fetchval(Q["imap_poll_now"], tenant_id, now) is not None:
            return True
        if await uow.conn.fetchval(Q["imap_poll_live"], tenant_id):
            return False
        await ensure_tenant_jobs(uow.conn, tenant_id,
                                 [(mailboxes.POLL_KIND, mailboxes.POLL_KIND)], now)
        return True


async def _nudge(ctx: JobContext, tenant_id: TenantId, arrived: asyncio.Event) -> None:
    while True:
        await arrived.wait()
        arrived.clear()
        while True:
            try:
                if await poll_now(ctx, tenant_id):
                    break
            except Exception as exc:  # Postgres away: the poll's period still holds
                log.warning("mail.idle could not wake the poll of %s: %s", tenant_id, exc)
            await asyncio.sleep(NUDGE_RETRY)


async def _accesses(ctx: JobContext, tenant_id: TenantId) -> dict[UUID, mailboxes.ImapAccess]:
    async with ctx.store.unit_of_work(tenant_id, readonly=True) as uow:
        out = {}
        for row in await uow.conn.fetch(Q["imap_mailboxes"], tenant_id):
            access = await mailboxes.imap_access(uow, row["id"])
            if access is not None:
                out[row["id"]] = access
        return out


async def watch_tenant(ctx: JobContext, tenant_id: TenantId, *, timeout: float,
                       reissue: float, refresh: float) -> None:
    """Watch the tenant's IMAP mailboxes until the scheduler stops, none is left, or
    none offers IDLE."""
    arrived = asyncio.Event()
    nudger = asyncio.create_task(_nudge(ctx, tenant_id, arrived))
    watching: dict[UUID, tuple[mailboxes.ImapAccess, asyncio.Task[None]]] = {}
    try:
        while not ctx.stopping.is_set():
            accesses = await _accesses(ctx, tenant_id)
            for mailbox_id, (server, task) in list(watching.items()):
                access = accesses.get(mailbox_id)
                failed = task.done() and (task.cancelled() or task.exception() is not None)
                if access is None or _server(access) != server or failed:
                    task.cancel()
                    del watching[mailbox_id]
            for mailbox_id, access in accesses.items():
                if mailbox_id not in watching:
                    watching[mailbox_id] = (_server(access), asyncio.create_task(
                        watch_mailbox(access, arrived, timeout=timeout, reissue=reissue)))
            if all(t.done() and not t.cancelled() and t.exception() is None
                   for _, t in watching.values()):
                return  # no mailbox, or no server with IDLE: the poll alone
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ctx.stopping.wait(), refresh)
            for mailbox_id, (_, task) in watching.items():
                if task.done() and not task.cancelled() and task.exception() is not None:
                    log.info("mail.idle on mailbox %s ended: %s", mailbox_id, task.exception())
    finally:
        tasks = [nudger, *(t for _, t in watching.values())]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def watch(ctx: JobContext, job: Job, *, slots: IdleSlots, timeout: float,
                reissue: float, refresh: float) -> None:
    """Job handler for ``mail.idle`` (module docstring)."""
    if job.tenant_id is None or slots.held >= slots.limit:
        return
    slots.held += 1
    try:
        await watch_tenant(ctx, job.tenant_id, timeout=timeout, reissue=reissue,
                           refresh=refresh)
    finally:
        slots.held -= 1


def register(registry: Registry, *, tenants: int, every: timedelta = timedelta(seconds=60),
             timeout: float = 15.0, reissue: float = 600.0, refresh: float = 60.0) -> None:
    """Watch at most ``tenants`` tenants' mailboxes at once; a watch that ends comes
    back ``every`` later (the poll period)."""
    registry.periodic(KIND, every, functools.partial(
        watch, slots=IdleSlots(tenants), timeout=timeout, reissue=reissue, refresh=refresh))


__all__ = ["KIND", "IdleSlots", "poll_now", "register", "watch_mailbox", "watch_tenant"]
