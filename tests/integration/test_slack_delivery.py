"""Slack against the real store, as the runtime role: a reply is posted to its thread
once even when the worker is killed after Slack took the post and before it heard so,
and tenants' connections, events, threads and posts are their own."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from domain.clock import ManualClock
from domain.ids import MessageId, TicketId
from domain.ticket.commands import AddMessage
from handlers import slack, slack_in
from handlers.tickets import run_command
from tests.support.desk import ACTOR, Desk, agent
from tests.support.mail import soon
from tests.support.slack import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    FakeSlack,
    message_event,
    run_slack_jobs,
)
from tests.support.wait import until

ROOT = Path(__file__).parents[2]
AGENT = uuid.UUID(int=5)


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    server = FakeSlack().start()
    try:
        yield server
    finally:
        server.stop()


async def connected(store: Any, tenant: Any, secret: str = SIGNING_SECRET) -> dict[str, Any]:
    async with store.unit_of_work(tenant, ACTOR) as s:
        doc, made = await slack.connect_slack(s, slack.ConnectSlack(
            channel_id=CHANNEL, bot_user_id=None, bot_token=BOT_TOKEN, signing_secret=secret,
            notices=None, at=soon()))
    assert made
    return doc


async def slack_ticket(store: Any, tenant: Any, event_id: str, ts: str) -> uuid.UUID:
    taken = await slack_in.take_event(store, tenant, message_event(event_id, ts, "Help"),
                                      soon())
    assert taken.outcome == "ticket" and taken.ticket_id is not None
    return taken.ticket_id


async def reply(store: Any, tenant: Any, ticket: uuid.UUID) -> None:
    async with store.unit_of_work(tenant, ACTOR) as s:
        await run_command(s, TicketId(ticket), AddMessage(
            message_id=MessageId(uuid.uuid4()), body="Fixed now", actor=agent(AGENT),
            at=soon()))


async def post_rows(store: Any, tenant: Any) -> list[Any]:
    async with store.unit_of_work(tenant, readonly=True) as s:
        return list(await s.conn.fetch("SELECT status, in_doubt, ts, attempts FROM slack_posts"))


@pytest.mark.slow  # a worker process
async def test_a_worker_killed_mid_post_leaves_one_post_in_the_thread(
        store: Any, make_tenant: Any, db: Any, fake: FakeSlack) -> None:
    tenant = (await make_tenant("Acme")).tenant_id
    await Desk(store, tenant, ManualClock(soon())).hire(AGENT)
    await connected(store, tenant)
    top = fake.message()
    ticket = await slack_ticket(store, tenant, "Ev1", top)
    fake.mode = "hold"  # Slack takes the post and the answer never comes
    await reply(store, tenant, ticket)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SCHEDULER_", "RUN_"))}
    env.update(DATABASE_URL=db.runtime_url, LOG_LEVEL="warning", SLACK_API_URL=fake.url,
               SCHEDULER_POLL_INTERVAL="0.2", SCHEDULER_LEASE_SECONDS="1")
    worker = await asyncio.to_thread(
        subprocess.Popen, [sys.executable, "-m", "tests.support.job_worker"], cwd=ROOT,
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        await until(fake.held.is_set, timeout=30, what="the worker to post")
        os.kill(worker.pid, signal.SIGKILL)
        await asyncio.to_thread(worker.wait, 10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    [held] = fake.posted(top)
    [row] = await post_rows(store, tenant)
    assert (row["status"], row["in_doubt"], row["ts"]) == ("queued", True, None)

    fake.mode = "ok"
    fake.release.set()  # the killed worker's connection is gone; nothing answers it

    async def settled() -> bool:
        return (await post_rows(store, tenant))[0]["status"] == "sent"

    await asyncio.sleep(1.1)  # the dead worker's lease runs out (real time)
    await run_slack_jobs(store, ManualClock(soon()), fake.url, settled)
    [row] = await post_rows(store, tenant)
    assert row["ts"] == held.ts and not row["in_doubt"]
    assert fake.posted(top) == [held]  # found in the thread, not posted again
    assert "conversations.replies" in fake.calls and fake.refusals == []


async def test_tenants_slack_is_their_own_as_the_runtime_role(
        store: Any, pool: Any, make_tenant: Any, fake: FakeSlack) -> None:
    acme = (await make_tenant("Acme")).tenant_id
    globex = (await make_tenant("Globex")).tenant_id
    a = await connected(store, acme)
    g = await connected(store, globex, secret="c" * 32)
    await Desk(store, acme, ManualClock(soon())).hire(AGENT)
    ticket = await slack_ticket(store, acme, "EvA", fake.message())
    await reply(store, acme, ticket)
    # The same event id at another tenant is another event.
    await slack_ticket(store, globex, "EvA", fake.message())
    async with pool.acquire() as conn:
        assert await slack.inbound_secret(conn, store.keyring, a["id"]) == (acme, SIGNING_SECRET)
        assert await slack.inbound_secret(conn, store.keyring, g["id"]) == (globex, "c" * 32)
        assert await slack.slack_health(conn) == (2, 0)
        # Without a tenant's context the runtime role sees and changes nothing.
        for table in ("slack_integrations", "slack_events", "slack_threads", "slack_posts"):
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0
        assert await conn.fetchval("SELECT rolsuper OR rolbypassrls FROM pg_roles "
                                   "WHERE rolname = current_user") is False
    tables = ("slack_integrations", "slack_events", "slack_threads",
              "jobs WHERE kind = 'slack.post'")
    counts = {}
    for tenant in (acme, globex):
        async with store.unit_of_work(tenant, ACTOR) as s:
            counts[tenant] = [await s.conn.fetchval(f"SELECT count(*) FROM {t}")
                              for t in tables]
            assert await s.conn.fetchval("SELECT count(*) FROM slack_integrations "
                                         "WHERE tenant_id <> $1", tenant) == 0
            other = globex if tenant == acme else acme
            done = await s.conn.execute("UPDATE slack_integrations SET channel_id = 'CX' "
                                        "WHERE tenant_id = $1", other)
            assert done == "UPDATE 0"
    assert counts == {acme: [1, 1, 1, 1], globex: [1, 1, 1, 0]}  # one reply, at Acme
    async with store.unit_of_work(acme, ACTOR) as s:
        with pytest.raises(Exception, match="row-level security"):
            await s.conn.execute(
                "INSERT INTO slack_events (tenant_id, event_id, outcome, received_at) "
                "VALUES ($1, 'EvX', 'ignored', now())", globex)


async def test_slack_retries_and_a_new_users_messages_at_once_make_one_of_each(
        store: Any, make_tenant: Any, fake: FakeSlack) -> None:
    tenant = (await make_tenant("Acme")).tenant_id
    await connected(store, tenant)
    top = fake.message()
    same = message_event("EvSame", top, "Printer on fire")
    taken = await asyncio.gather(*(slack_in.take_event(store, tenant, same, soon())
                                   for _ in range(3)))
    assert sorted(t.outcome for t in taken) == ["duplicate", "duplicate", "ticket"]
    assert len({t.ticket_id for t in taken}) == 1
    # Two messages of a user the desk has not met, at once: one contact for both.
    firsts = await asyncio.gather(*(slack_in.take_event(
        store, tenant, message_event(f"EvNew{n}", fake.message(), "Hi", user="UNEW"), soon())
        for n in range(2)))
    assert [t.outcome for t in firsts] == ["ticket", "ticket"]
    async with store.unit_of_work(tenant, readonly=True) as s:
        contacts = await s.conn.fetch("SELECT id FROM contacts WHERE external_id = 'slack:UNEW'")
        requesters = await s.conn.fetch(
            "SELECT DISTINCT view -> 'requester' ->> 'contact_id' AS c FROM tickets "
            "WHERE id = ANY ($1::uuid[])", [t.ticket_id for t in firsts])
        tickets = await s.conn.fetchval("SELECT count(*) FROM tickets")
    assert len(contacts) == 1 and [r["c"] for r in requesters] == [str(contacts[0]["id"])]
    assert tickets == 3
