"""Mail polled from the session's real Dovecot by real ``helpdesk worker`` processes
that are killed (SIGKILL) in the middle of taking it in, with the checkpoint lost on
the way (the whole folder fetched again) and part of the same mail delivered a second
time by the inbound route meanwhile: each mail becomes exactly one ticket, one message
and one mail row, told apart by their Message-IDs."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import auth
from tests.support.dovecot import DovecotServer
from tests.support.mail import inbound, make_mailbox, owner_fetch
from tests.support.wait import until
from tests.support.worker_process import worker_process

# Real worker processes, started and killed in turn.
pytestmark = pytest.mark.slow

PASSWORD = "imap-secret"
MAILS = 80
WORKER_ENV = {"DB_POOL_MIN": "1", "DB_POOL_MAX": "4", "SCHEDULER_POLL_INTERVAL": "0.2",
              "SCHEDULER_LEASE_SECONDS": "2", "PROJECTOR_POLL_INTERVAL": "1",
              "MAIL_POLL_SECONDS": "5"}


def _mail(run: str, i: int) -> bytes:
    # A sender each: the per-sender hourly cap plays no part.
    return (f"From: Customer {i} <customer{i}.{run}@example.com>\r\n"
            f"To: support@acme.test\r\nSubject: Killed poller {i}\r\n"
            f"Message-ID: <kill-{i}.{run}@example.com>\r\n"
            "Date: Wed, 02 Dec 2026 10:00:00 +0000\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\nMail number {i}.\r\n"
            + "Some history to parse.\r\n" * 40).encode()


async def _taken(db: Any, tenant: Any) -> int:
    [row] = await owner_fetch(db, "SELECT count(*) AS n FROM mail_messages "
                                  "WHERE tenant_id = $1", tenant)
    return int(row["n"])


async def test_killed_pollers_refetches_and_two_routes_take_each_mail_in_once(
        http: httpx.AsyncClient, db, tenant, dovecot_server: DovecotServer) -> None:
    run = uuid.uuid4().hex[:8]
    user = f"{run}@acme.test"
    dovecot_server.add_user(user, PASSWORD)
    raws = [_mail(run, i) for i in range(MAILS)]
    for raw in raws:
        dovecot_server.append(user, PASSWORD, raw)
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, imap={
        "host": "127.0.0.1", "port": dovecot_server.port, "security": "none",
        "username": user, "password": PASSWORD})

    # Every third mail comes by the inbound route as well, newest first, while the
    # workers take the folder in oldest first: the two routes meet in the middle.
    posted: list[str] = []

    async def deliver_twice() -> None:
        for raw in reversed(raws[::3]):
            posted.append((await inbound(http, box, raw))["outcome"])
            await asyncio.sleep(0.1)

    kills: list[int] = []

    async def kill_after(worker: Any, at_least: int) -> None:
        async def far_enough() -> bool:
            assert worker.proc.returncode is None, worker.output()
            return await _taken(db, tenant.tenant_id) >= at_least

        await until(far_enough, timeout=90, interval=0.02, what=f"{at_least} mails in")
        assert await worker.kill() == -9
        kills.append(await _taken(db, tenant.tenant_id))

    async with worker_process(db.runtime_url, **WORKER_ENV) as first:
        second_route = asyncio.create_task(deliver_twice())
        await kill_after(first, 10)
    # The checkpoint is lost: the next poll fetches the whole folder again.
    await owner_fetch(db, "UPDATE mailboxes SET imap_last_uid = 0 WHERE tenant_id = $1 "
                          "RETURNING id", tenant.tenant_id)
    async with worker_process(db.runtime_url, **WORKER_ENV) as second, \
            worker_process(db.runtime_url, **WORKER_ENV) as third:
        await kill_after(second, kills[-1] + 1)
        await third.kill()
    await second_route
    async with worker_process(db.runtime_url, **WORKER_ENV) as last:

        async def all_in() -> bool:
            assert last.proc.returncode is None, last.output()
            return await _taken(db, tenant.tenant_id) >= MAILS

        await until(all_in, timeout=120, interval=0.1, what="every mail in")

        async def checkpointed() -> bool:
            [mark] = await owner_fetch(db, "SELECT imap_last_uid FROM mailboxes "
                                           "WHERE tenant_id = $1", tenant.tenant_id)
            return bool(mark["imap_last_uid"] == MAILS)

        await until(checkpointed, timeout=60, interval=0.1, what="the checkpoint")
        assert await last.stop() == 0

    # The lone worker was killed in the middle: some but not all mail was in. The pair
    # is killed as soon as it has taken one more; on a quiet machine the pair and the
    # second route may have taken the rest by then, which the counts below cover too.
    assert 0 < kills[0] < MAILS and kills[0] < kills[1] <= MAILS, kills
    assert set(posted) <= {"duplicate", "ticket"} and len(posted) == len(raws[::3])
    rows = await owner_fetch(db, "SELECT rfc_message_id, outcome, ticket_id FROM mail_messages "
                                 "WHERE tenant_id = $1", tenant.tenant_id)
    assert sorted(r["rfc_message_id"] for r in rows) == sorted(
        f"kill-{i}.{run}@example.com" for i in range(MAILS))
    assert {r["outcome"] for r in rows} == {"ticket"}
    [counts] = await owner_fetch(db, """
        SELECT (SELECT count(*) FROM tickets WHERE tenant_id = $1) AS tickets,
               (SELECT count(DISTINCT subject) FROM tickets WHERE tenant_id = $1) AS subjects,
               (SELECT count(*) FROM messages WHERE tenant_id = $1) AS messages,
               (SELECT count(*) FROM events WHERE tenant_id = $1
                   AND type = 'TicketOpened') AS opened,
               (SELECT count(*) FROM mail_threads WHERE tenant_id = $1) AS threads""",
                                 tenant.tenant_id)
    assert dict(counts) == {"tickets": MAILS, "subjects": MAILS, "messages": MAILS,
                            "opened": MAILS, "threads": MAILS}
    assert len({r["ticket_id"] for r in rows}) == MAILS
