"""What mail costs: ingestion from a real Dovecot into tickets against parsing alone, and
staff replies delivered to a real SMTP server with their delivery lag.

    python -m bench.mail [--mails 2000] [--replies 1000] [--idle-mails 200] [--idle-rate 5]

One run: a fresh migrated database (bench/common.py), Debian's Dovecot and an aiosmtpd
server as the tests start them (tests/support/dovecot.py, tests/support/smtp.py), and
the process's parts built by the composition root as the runtime role.

- **Ingestion.** ``--mails`` messages (the corpus's Gmail, Outlook with TNEF, Apple Mail
  and HTML-only mails, each with a Message-ID and a sender of its own) are APPENDed to
  one IMAP folder; then the baseline: ``domain.mail.parse`` over the same bytes, in
  this process; then ``handlers.mail_poll.poll_mailbox`` until the folder is drained,
  each mail a ticket (contact, files, checkpoint), runs of mails in one transaction
  with their checkpoint (handlers/mail_in.py ``take_in_all``). Mails per
  second of each and their ratio (target >= 0.3x).
- **Arrival to ticket with IDLE.** A second tenant with a mailbox on its own Dovecot
  user; a scheduler loop with ``mail.poll`` and ``mail.idle`` registered as the
  worker's composition root registers them (the process's settings: poll period,
  ``MAIL_IDLE_TENANTS``, concurrency, poll interval) and listening for NOTIFY. Once
  the tenant's ``mail.idle`` job runs and a warm-up mail has become a ticket,
  ``--idle-mails`` mails are APPENDed one at a time, ``--idle-rate`` a second; the
  latency of each is from its APPEND's answer to the first time its ``mail_messages``
  row is seen committed (the database is looked at every 20 ms): p50, p99, max (target
  p99 < 2 s). Every wait has a deadline: the mail.idle job running (60 s), the warm-up
  (60 s), each APPEND (15 s), the last tickets (120 s), the loop's stop (60 s); mail
  not in by then is counted as "not in", never waited for.
- **Outbound.** ``--replies`` agent replies on those tickets, through
  ``handlers.tickets.post_message`` as the API posts them, while a scheduler loop with
  only ``mail.send`` runs; lag per reply is from its event's commit (``recorded_at``) to
  the SMTP server's acceptance (the mail row's ``sent_at``): p50, p99, max. The
  baseline is the same replies posted with no mailbox behind the tickets (no job).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg

from api.config import ProcessSettings
from api.root import ProcessRole, Services, file_storages, running
from bench.common import bench_server, fresh_database, report
from domain.clock import SystemClock
from domain.ids import MessageId, TicketId
from domain.mail import message_ids, parse
from domain.values import Actor, ActorKind, Visibility
from eventstore.types import StoreActor
from handlers import mail_idle, mail_out, mail_poll, mailboxes
from handlers.tenants import create_tenant_as_operator
from handlers.tickets import PostMessage, post_message
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.support.dovecot import DovecotServer
from tests.support.smtp import SmtpServer
from tests.support.wait import until

CORPUS = Path(__file__).parent.parent / "tests" / "mail"
KINDS = ("gmail.eml", "outlook_tnef.eml", "apple_mail.eml", "html_only.eml")
USER, IDLE_USER, PASSWORD = "bench@acme.test", "idle@acme.test", "bench-secret"


def _mails(n: int) -> list[bytes]:
    bases = [(CORPUS / k).read_bytes() for k in KINDS]
    out = []
    for i in range(n):
        raw = bases[i % len(bases)]
        head, _, body = raw.partition(b"\n\n")
        lines = [ln for ln in head.split(b"\n")
                 if not ln.lower().startswith((b"message-id:", b"from:", b"cc:"))]
        lines += [f"Message-ID: <bench-{i}-{uuid.uuid4().hex}@example.com>".encode(),
                  f"From: Customer {i} <c{i}@example.com>".encode()]
        out.append(b"\r\n".join(lines) + b"\r\n\r\n" + body.replace(b"\n", b"\r\n"))
    return out


async def _mailbox(services: Services, tenant: Any, *, imap_port: int | None,
                   smtp_port: int | None, address: str, user: str = USER) -> Any:
    command = mailboxes.CreateMailbox(
        address=address, name=None, at=SystemClock().now(),
        smtp=None if smtp_port is None else mailboxes.Smtp("127.0.0.1", smtp_port, "none"),
        imap=None if imap_port is None else mailboxes.Imap(
            "127.0.0.1", imap_port, "none", user, PASSWORD))
    async with services.store.unit_of_work(tenant, StoreActor("operator", "bench")) as uow:
        doc, _ = await mailboxes.create_mailbox(uow, command)
    return doc["id"]


async def _idle_latency(db: Any, dovecot: DovecotServer, services: Services,
                        storages: Any, count: int, rate: float) -> dict[str, Any]:
    """Arrival (APPEND answered) to ticket (its row seen committed) with IDLE, as the
    worker runs the mail jobs; every wait has a deadline."""
    tenant = (await create_tenant_as_operator(db.admin_url, "Bench IDLE")).tenant_id
    dovecot.add_user(IDLE_USER, PASSWORD)
    await _mailbox(services, tenant, imap_port=dovecot.port, smtp_port=None,
                   address="idle@acme.test", user=IDLE_USER)
    s = services.settings
    registry = Registry()
    mail_poll.register(registry, lambda store: storages,
                       every=timedelta(seconds=s.mail_poll_seconds))
    mail_idle.register(registry, tenants=min(s.mail_idle_tenants, s.scheduler_concurrency - 1),
                       every=timedelta(seconds=s.mail_poll_seconds))
    loop = Scheduler(services.store, SystemClock(), registry,
                     config=LoopConfig(concurrency=s.scheduler_concurrency,
                                       poll_interval=s.scheduler_poll_interval),
                     listen_dsn=db.runtime_url)
    conn = await asyncpg.connect(db.admin_url)
    seen: dict[str, float] = {}

    async def look() -> None:
        for r in await conn.fetch("SELECT rfc_message_id FROM mail_messages "
                                  "WHERE tenant_id = $1 AND direction = 'in'", tenant):
            seen.setdefault(r["rfc_message_id"], time.time())

    async def watching() -> bool:
        return bool(await conn.fetchval(
            "SELECT count(*) FROM jobs WHERE tenant_id = $1 AND kind = 'mail.idle' "
            "AND status = 'running'", tenant))

    client = dovecot.client(IDLE_USER, PASSWORD)
    raws = _mails(count + 1)
    ids = [_message_id(raw) for raw in raws]
    task = asyncio.create_task(loop.run())
    arrived: dict[str, float] = {}
    try:
        await until(watching, timeout=60, interval=0.1, what="the mail.idle job running")
        await look()  # what the first poll took in (nothing) and a warm-up mail
        await asyncio.to_thread(client.append, "INBOX", "", None, raws[0])
        await until(lambda: _seen(look, seen, ids[0]), timeout=60, interval=0.05,
                    what="the warm-up mail's ticket")
        started = time.perf_counter()
        for i, (raw, rfc_id) in enumerate(zip(raws[1:], ids[1:], strict=True)):
            pause = started + i / rate - time.perf_counter()
            if pause > 0:
                await _watch_for(look, pause)
            typ, data = await asyncio.wait_for(
                asyncio.to_thread(client.append, "INBOX", "", None, raw), 15)
            assert typ == "OK", data
            arrived[rfc_id] = time.time()
        deadline = time.perf_counter() + 120
        while len(seen) < count + 1 and time.perf_counter() < deadline:
            await _watch_for(look, 0.05)
    finally:
        with contextlib.suppress(Exception):
            client.logout()
        await asyncio.wait_for(loop.stop(), 60)
        await asyncio.wait_for(task, 10)
        await conn.close()
    lags = sorted(seen[m] - arrived[m] for m in arrived if m in seen)
    missing = len(arrived) - len(lags)
    if not lags:
        raise RuntimeError("no mail became a ticket within 120 s of the last APPEND")
    return {"figure": f"IDLE arrival to ticket p50 / p99 / max, s ({count} at {rate:g}/s)",
            "value": f"{statistics.median(lags):.2f}/{lags[int(0.99 * (len(lags) - 1))]:.2f}"
                     f"/{lags[-1]:.2f}",
            "baseline": f"poll period {s.mail_poll_seconds} s"
                        + (f", {missing} not in" if missing else ""),
            "ratio": "", "target": "p99 < 2 s"}


def _message_id(raw: bytes) -> str:
    head = raw.partition(b"\r\n\r\n")[0]
    line = next(ln for ln in head.split(b"\r\n") if ln.lower().startswith(b"message-id:"))
    return message_ids(line.decode())[0]


async def _seen(look: Callable[[], Awaitable[None]], seen: dict[str, float], rfc_id: str
                ) -> bool:
    await look()
    return rfc_id in seen


async def _watch_for(look: Callable[[], Awaitable[None]], seconds: float) -> None:
    """Look for new tickets every 20 ms for ``seconds``."""
    end = time.perf_counter() + seconds
    while (left := end - time.perf_counter()) > 0:
        await look()
        await asyncio.sleep(min(0.02, max(left, 0)))


async def _reply(services: Services, tenant: Any, agent: Actor, ticket: Any) -> None:
    async with services.store.unit_of_work(tenant, StoreActor("agent", agent.id)) as uow:
        await post_message(uow, PostMessage(
            ticket_id=TicketId(ticket), message_id=MessageId(uuid.uuid4()),
            body="Thanks, we are on it.", visibility=Visibility.PUBLIC,
            at=SystemClock().now(), author=agent))


async def main(mails: int, replies: int, idle_mails: int, idle_rate: float) -> None:
    with bench_server() as server:
        async with fresh_database(server, "hd_bench_mail") as db:
            tenant = (await create_tenant_as_operator(db.admin_url, "Bench")).tenant_id
            dovecot, smtp = DovecotServer().start(), SmtpServer().start()
            try:
                await _run(db, tenant, dovecot, smtp, mails, replies, idle_mails, idle_rate)
            finally:
                dovecot.stop()
                smtp.stop()


async def _run(db: Any, tenant: Any, dovecot: DovecotServer, smtp: SmtpServer,
               mails: int, replies: int, idle_mails: int, idle_rate: float) -> None:
    dovecot.add_user(USER, PASSWORD)
    raws = _mails(mails)
    client = dovecot.client(USER, PASSWORD)
    for raw in raws:
        client.append("INBOX", "", None, raw)
    client.logout()

    started = time.perf_counter()
    for raw in raws:
        parse(raw)
    parse_rate = mails / (time.perf_counter() - started)

    settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=2, db_pool_max=12)
    async with running(settings, ProcessRole.CLI) as services:
        box = await _mailbox(services, tenant, imap_port=dovecot.port, smtp_port=smtp.port,
                             address="support@acme.test")
        storages = file_storages(settings, services.store)
        started = time.perf_counter()
        while await mail_poll.poll_mailbox(services.store, storages, tenant, box,
                                           services.clock.now):
            pass
        ingest_rate = mails / (time.perf_counter() - started)
        idle = await _idle_latency(db, dovecot, services, storages, idle_mails, idle_rate)
        conn = await asyncpg.connect(db.admin_url)
        tickets = [r["ticket_id"] for r in await conn.fetch(
            "SELECT ticket_id FROM mail_threads WHERE tenant_id = $1 ORDER BY created_at "
            "LIMIT $2", tenant, replies)]
        agent = Actor(kind=ActorKind.AGENT, id=str(uuid.uuid4()))

        registry = Registry()
        mail_out.register(registry, lambda store: storages)
        loop = Scheduler(services.store, SystemClock(), registry,
                         config=LoopConfig(concurrency=8, poll_interval=0.2))
        task = asyncio.create_task(loop.run())
        started = time.perf_counter()
        for ticket in tickets:
            await _reply(services, tenant, agent, ticket)
        post_seconds = time.perf_counter() - started
        async def all_sent() -> bool:
            sent = await conn.fetchval("SELECT count(*) FROM mail_messages "
                                       "WHERE direction = 'out' AND outcome = 'sent'")
            return bool(sent >= len(tickets))

        await until(all_sent, timeout=3600, interval=0.2, what="every reply sent")
        await loop.stop()
        await task
        lags = [float(r["lag"]) for r in await conn.fetch("""
            SELECT extract(epoch FROM m.sent_at - e.recorded_at) AS lag
              FROM mail_messages m
              JOIN events e ON e.tenant_id = m.tenant_id AND e.type = 'MessageAdded'
                           AND (e.data ->> 'message_id')::uuid = m.message_id
             WHERE m.direction = 'out'""")]
        # Baseline: the same number of replies on tickets with no mailbox behind them.
        await conn.execute("DELETE FROM mail_threads")
        started = time.perf_counter()
        for ticket in tickets:
            await _reply(services, tenant, agent, ticket)
        plain_seconds = time.perf_counter() - started
        await conn.close()
    delivered = len(smtp.delivered)
    lags.sort()
    report("mail", [
        {"figure": f"ingestion from IMAP, mails/s ({mails} mails)",
         "value": round(ingest_rate, 1), "baseline": f"parse {parse_rate:.0f}/s",
         "ratio": round(ingest_rate / parse_rate, 4), "target": ">= 0.3x"},
        idle,
        {"figure": f"replies posted with mail.send behind, /s ({len(tickets)})",
         "value": round(len(tickets) / post_seconds, 1),
         "baseline": f"{len(tickets) / plain_seconds:.1f}/s without",
         "ratio": round(plain_seconds / post_seconds, 3), "target": ""},
        {"figure": "delivery lag p50 / p99 / max, s",
         "value": f"{statistics.median(lags):.2f}/{lags[int(0.99 * (len(lags) - 1))]:.2f}"
                  f"/{lags[-1]:.2f}",
         "baseline": f"{delivered} delivered", "ratio": "", "target": ""},
    ])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mails", type=int, default=2000)
    parser.add_argument("--replies", type=int, default=1000)
    parser.add_argument("--idle-mails", type=int, default=200)
    parser.add_argument("--idle-rate", type=float, default=5.0, help="APPENDs per second")
    args = parser.parse_args()
    asyncio.run(main(args.mails, args.replies, args.idle_mails, args.idle_rate))
