"""A time rule's ``send_mail`` over real SMTP (the session's aiosmtpd server): a ticket
that came in by mail and has been pending an hour gets one mail per pending spell,
sent by the scheduler after the firing commits, threaded back to its ticket (Reply-To
its token, In-Reply-To the mail that opened it) with the rule's own template; a second
pass and the job done again in the same spell send nothing more, a new spell sends
again."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson

from domain.clock import ManualClock
from eventstore.types import SYSTEM, StoreActor
from handlers import mail_notify, rule_timers
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.e2e.conftest import auth
from tests.support.mail import corpus, inbound, make_mailbox, owner_fetch, smtp_at
from tests.support.rules import engine
from tests.support.smtp import SmtpServer
from tests.support.wait import until

NUDGE = {"name": "Nudge after an hour pending", "time": {"since": "pending", "hours": 1},
         "conditions": [{"field": "state", "op": "is", "value": "pending"}],
         "actions": [{"type": "send_mail", "value": {"to": "requester", "template": {
             "subject": "Still waiting on you: {{ subject }}",
             "body": "Dear {{ name }},\nwe need your answer on {{ reference }}.\n"
                     "-- {{ desk }}"}}}]}


async def _rule_mail(db: Any, tenant: UUID) -> list[Any]:
    return await owner_fetch(db, "SELECT to_address, status, rfc_message_id, attempts "
                                 "FROM mail_notifications WHERE tenant_id = $1 AND kind = "
                                 "'rule' ORDER BY created_at", tenant)


async def _pass(services: Any, db: Any, tenant: UUID, now: datetime) -> list[dict[str, Any]]:
    """The time rules' pass, as its job runs it; the ``rules.time`` jobs it leaves."""
    async with services.store.unit_of_work(tenant, SYSTEM) as s:
        await rule_timers.evaluate_tenant(s.conn, s.tenant_id, now)
    rows = await owner_fetch(db, "SELECT payload FROM jobs WHERE tenant_id = $1 AND kind = "
                                 "'rules.time' AND status = 'ready'", tenant)
    return [orjson.loads(r["payload"]) for r in rows]  # the owner's connection: jsonb as text


async def _schedulers(services: Any, clock: ManualClock, done: Any) -> None:
    """Two schedulers at once running the time rules' jobs and notification mail, until
    ``done``."""
    loops = []
    for _ in range(2):
        registry = Registry()
        rule_timers.register(registry)
        mail_notify.register(registry, timeout=2.0, max_attempts=3)
        loops.append(Scheduler(services.store, clock, registry, config=LoopConfig(
            concurrency=2, poll_interval=0.05, retry_base_seconds=60, retry_cap_seconds=60)))
    tasks = [asyncio.create_task(loop.run()) for loop in loops]
    try:
        await until(done, timeout=15)
    finally:
        for loop in loops:
            await loop.stop()
        await asyncio.gather(*tasks)


async def test_a_time_rule_mails_once_per_pending_spell_with_the_threads_headers(
        http, db, services, tenant, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port))
    rule = await http.post("/v1/rules", json=NUDGE, headers=admin)
    assert rule.status_code == 201, rule.text
    # The requester's address is this test's own: the SMTP server is the session's.
    address = f"ann-{uuid.uuid4().hex[:8]}@example.com"
    raw = corpus("gmail.eml").replace(b"ann@example.com", address.encode())
    ticket = (await inbound(http, box, raw))["ticket_id"]
    pending = await http.post(f"/v1/tickets/{ticket}/state", json={"state": "pending"},
                              headers=admin)
    assert pending.status_code == 200, pending.text
    rules = engine(services.pool, services.store)
    await rules.ensure_checkpoints()
    await rules.drain()

    start = datetime.now(UTC)
    assert await _pass(services, db, tenant.tenant_id, start + timedelta(minutes=30)) == []
    later = start + timedelta(hours=1, minutes=5)
    [job] = await _pass(services, db, tenant.tenant_id, later)
    assert job["ticket_id"] == ticket

    async def sent(n: int) -> Any:
        async def check() -> bool:
            rows = await _rule_mail(db, tenant.tenant_id)
            return len(rows) == n and all(r["status"] == "sent" for r in rows)
        return check

    await _schedulers(services, ManualClock(later), await sent(1))
    [row] = await _rule_mail(db, tenant.tenant_id)
    assert (row["to_address"], row["attempts"]) == (address, 1)
    [mail] = smtp_server.to(address)
    message = mail.message()
    [thread] = await owner_fetch(db, "SELECT token FROM mail_threads WHERE tenant_id = $1 "
                                     "AND ticket_id = $2", tenant.tenant_id, UUID(ticket))
    assert mail.mail_from == "support@acme.test"
    assert message["From"] == "Acme support <support@acme.test>"
    assert message["To"] == address
    assert message["Subject"] == "Still waiting on you: Printer on fire"
    assert message["Message-ID"] == f"<{row['rfc_message_id']}>"
    assert message["Reply-To"] == f"support+{thread['token']}@acme.test"
    assert message["In-Reply-To"] == message["References"] == "<CAF=gmail-0001@mail.gmail.com>"
    assert message["Auto-Submitted"] == "auto-generated"
    text = str(message.get_body(("plain",)).get_content()).replace("\r\n", "\n")
    assert text.startswith(f"Dear Ann Example,\nwe need your answer on #{thread['token']}.")
    assert message.get_body(("html",)) is not None

    # The same spell: a later pass finds it spent, and the job done again (a retry, a
    # second scheduler) sends nothing.
    assert await _pass(services, db, tenant.tenant_id, later + timedelta(hours=5)) == []
    async with services.store.unit_of_work(tenant.tenant_id,
                                           StoreActor("rule", job["rule_id"])) as uow:
        assert await rule_timers.fire(uow, UUID(job["rule_id"]), UUID(ticket),
                                      datetime.fromisoformat(job["episode"]), later) is False
    await asyncio.sleep(0.2)
    assert len(smtp_server.to(address)) == 1

    # A new spell (the customer answers, the agent sets it pending again): once more.
    for state in ("open", "pending"):
        r = await http.post(f"/v1/tickets/{ticket}/state", json={"state": state},
                            headers=admin)
        assert r.status_code == 200, r.text
    await rules.drain()
    again = datetime.now(UTC) + timedelta(hours=1, minutes=5)
    [next_job] = await _pass(services, db, tenant.tenant_id, again)
    assert next_job["episode"] != job["episode"]
    await _schedulers(services, ManualClock(again), await sent(2))
    first, second = smtp_server.to(address)
    assert first.message()["Message-ID"] != second.message()["Message-ID"]
    assert second.message()["Subject"] == "Still waiting on you: Printer on fire"
