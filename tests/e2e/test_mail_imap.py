"""Mail polled by IMAP from the session's real Dovecot: each mail taken in once, the
UIDVALIDITY/UID checkpoint committed with the tickets, flagged \\Seen only after, and a
fetch repeated from the start (a lost checkpoint, a new UIDVALIDITY) creating nothing
twice; a server that is down leaves the API served and readiness degraded."""

from __future__ import annotations

import uuid
from typing import Any

from domain.clock import ManualClock
from tests.e2e.conftest import auth
from tests.support.dovecot import DovecotServer
from tests.support.mail import corpus, make_mailbox, owner_fetch, run_mail_jobs, soon
from tests.support.smtp import free_port

PASSWORD = "imap-secret"
POLLED = ("gmail.eml", "outlook_tnef.eml", "html_only.eml", "auto_reply.eml")


def imap_at(port: int, user: str) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": port, "security": "none", "username": user,
            "password": PASSWORD}


async def _counts(db: Any, tenant: Any) -> tuple[int, int, int]:
    [row] = await owner_fetch(db, """
        SELECT (SELECT count(*) FROM tickets WHERE tenant_id = $1) AS tickets,
               (SELECT count(*) FROM mail_messages WHERE tenant_id = $1) AS mails,
               (SELECT count(*) FROM jobs WHERE tenant_id = $1 AND kind = 'mail.poll'
                   AND status = 'done') AS polled""",
                              tenant)
    return row["tickets"], row["mails"], row["polled"]


async def test_imap_mail_is_taken_in_once_with_its_checkpoint(
        http, db, services, tenant, dovecot_server: DovecotServer) -> None:
    user = f"{uuid.uuid4().hex[:12]}@acme.test"
    dovecot_server.add_user(user, PASSWORD)
    for name in POLLED:
        dovecot_server.append(user, PASSWORD, corpus(name))
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, imap=imap_at(dovecot_server.port, user))
    assert box["imap"] == {"host": "127.0.0.1", "port": dovecot_server.port,
                           "security": "none", "username": user, "folder": "INBOX",
                           "password_set": True}
    clock = ManualClock(soon())

    runs = 1

    async def polled() -> bool:
        return (await _counts(db, tenant.tenant_id))[2] == runs

    await run_mail_jobs(services, clock, polled)
    assert (await _counts(db, tenant.tenant_id))[:2] == (3, 4)  # the auto-reply: no ticket
    [mark] = await owner_fetch(db, "SELECT imap_uidvalidity, imap_last_uid FROM mailboxes")
    assert mark["imap_last_uid"] == 4 and mark["imap_uidvalidity"]
    assert dovecot_server.seen(user, PASSWORD) == [1, 2, 3, 4]  # flagged after the commits
    tickets = (await http.get("/v1/tickets", headers=admin)).json()["data"]
    assert sorted(t["subject"] for t in tickets) == ["Order 77 missing", "Printer on fire",
                                                    "RE: Invoice 4411"]

    # The next poll fetches the new mail only; a new UIDVALIDITY (or a checkpoint lost
    # with it) fetches all again, and the Message-IDs keep it from doing anything twice.
    dovecot_server.append(user, PASSWORD, corpus("apple_mail.eml"))
    for reset in ("", "imap_uidvalidity = 1, imap_last_uid = 0"):
        if reset:
            await owner_fetch(db, f"UPDATE mailboxes SET {reset} RETURNING id")
        runs += 1
        clock.advance(seconds=120)  # the job comes back one period after its last run
        await run_mail_jobs(services, clock, polled)
        assert (await _counts(db, tenant.tenant_id))[:2] == (4, 5)
        [mark] = await owner_fetch(db, "SELECT imap_uidvalidity, imap_last_uid FROM mailboxes")
        assert mark["imap_last_uid"] == 5 and mark["imap_uidvalidity"] != 1
    ids = await owner_fetch(db, "SELECT rfc_message_id FROM mail_messages ORDER BY 1")
    assert len({r["rfc_message_id"] for r in ids}) == 5


async def test_an_imap_server_that_is_down_degrades_readiness_only(
        http, db, services, tenant) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, imap=imap_at(free_port(), "nobody@acme.test"))
    clock = ManualClock(soon())

    async def failed() -> bool:
        rows = await owner_fetch(db, "SELECT last_error FROM jobs WHERE kind = 'mail.poll' "
                                     "AND tenant_id = $1", tenant.tenant_id)
        return any(r["last_error"] for r in rows)

    await run_mail_jobs(services, clock, failed)
    got = (await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)).json()
    assert got["status"] == "degraded" and "Connection refused" in got["last_error"]
    ready = await http.get("/health/ready")
    assert ready.status_code == 200 and ready.json()["checks"]["mail"]["status"] == "degraded"
    assert (await http.get("/v1/tickets", headers=admin)).status_code == 200


async def test_idle_takes_a_mail_in_when_it_arrives_not_a_period_later(
        http, db, services, tenant, dovecot_server: DovecotServer) -> None:
    user = f"{uuid.uuid4().hex[:12]}@acme.test"
    dovecot_server.add_user(user, PASSWORD)
    dovecot_server.append(user, PASSWORD, corpus("gmail.eml"))
    admin = auth(tenant.admin_key)
    await make_mailbox(http, admin, imap=imap_at(dovecot_server.port, user))
    # The clock never moves: the poll comes back a period (60 s) after its first run
    # by the clock, that is never, unless IDLE makes it due.
    clock = ManualClock(soon())
    arrived = False

    async def taken_in() -> bool:
        nonlocal arrived
        tickets, mails, _ = await _counts(db, tenant.tenant_id)
        if tickets == 1 and not arrived:
            [watch] = await owner_fetch(db, "SELECT status FROM jobs WHERE tenant_id = $1 "
                                            "AND kind = 'mail.idle'", tenant.tenant_id)
            if watch["status"] == "running":
                dovecot_server.append(user, PASSWORD, corpus("apple_mail.eml"))
                arrived = True
        return (tickets, mails) == (2, 2)

    await run_mail_jobs(services, clock, taken_in, idle=True)
    [mark] = await owner_fetch(db, "SELECT imap_last_uid FROM mailboxes")
    assert mark["imap_last_uid"] == 2 and dovecot_server.seen(user, PASSWORD) == [1, 2]
    tickets = (await http.get("/v1/tickets", headers=admin)).json()["data"]
    assert sorted(t["subject"] for t in tickets) == ["Login page blank", "Printer on fire"]
    # Stopped, the watch ended and comes back a period later (the poll covers meanwhile).
    [watch] = await owner_fetch(db, "SELECT status FROM jobs WHERE tenant_id = $1 AND "
                                    "kind = 'mail.idle' AND status <> 'done'",
                                tenant.tenant_id)
    assert watch["status"] == "ready"
