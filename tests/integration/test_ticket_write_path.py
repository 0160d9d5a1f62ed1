"""The ticket write path against real Postgres, as the runtime role."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import ValidationFailed
from domain.ids import MessageId, TicketId
from domain.sla import DEFAULT_TARGETS
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangePriority,
    ChangeState,
    ChangeTags,
    OpenTicket,
)
from domain.values import Actor, ActorKind, Priority, Requester, TicketState
from eventstore.errors import ConcurrencyError
from eventstore.types import StoreActor
from handlers.ticket_state import load_ticket
from handlers.tickets import execute, sla_job_key
from projections.tenant_settings import read_document

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")
CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="ann@example.com")
KEY = StoreActor("api_key", "test")


def opening(ticket_id: uuid.UUID, at: datetime = T0, **kw: object) -> OpenTicket:
    args: dict[str, object] = dict(
        ticket_id=TicketId(ticket_id), subject="Printer on fire", body="Help",
        requester=Requester(email="ann@example.com", name="Ann"), actor=CUSTOMER, at=at,
    )
    args.update(kw)
    return OpenTicket(**args)  # type: ignore[arg-type]


async def jobs_of(store, tenant_id):  # type: ignore[no-untyped-def]
    """The tenant's SLA timers (not its periodic jobs)."""
    async with store.unit_of_work(tenant_id) as s:
        rows = await s.conn.fetch("SELECT dedupe_key, run_at, payload FROM jobs "
                                  "WHERE kind = 'sla.check' ORDER BY 1")
    return {r["dedupe_key"]: (r["run_at"], r["payload"]) for r in rows}


async def test_open_then_commands_keep_inline_row_and_timers_in_step(store, make_tenant):
    tenant = (await make_tenant("Acme")).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        result = await execute(s, tid, opening(tid, priority=Priority.URGENT))
    assert result.ticket.version == 1 and [e.version for e in result.events] == [1]
    jobs = await jobs_of(store, tenant)
    assert jobs[sla_job_key(tid, "first_response")][0] == T0 + timedelta(hours=1)
    assert jobs[sla_job_key(tid, "resolution")][0] == T0 + timedelta(hours=8)
    assert sla_job_key(tid, "next_reply") not in jobs

    async with store.unit_of_work(tenant, KEY) as s:
        reply = AddMessage(message_id=MessageId(uuid.uuid4()), body="On it", actor=AGENT,
                           at=T0 + timedelta(minutes=5))
        await execute(s, tid, reply)
        await execute(s, tid, ChangeTags(add=("vip",), actor=AGENT, at=T0))
        await execute(s, tid, ChangeState(to=TicketState.PENDING, actor=AGENT, at=T0))
        result = await execute(s, tid, ChangePriority(priority=Priority.LOW, actor=AGENT, at=T0))
    assert result.ticket.version == 5
    jobs = await jobs_of(store, tenant)
    # Answered: no first-response timer; pending: resolution paused, no timer.
    assert jobs == {}
    async with store.unit_of_work(tenant, readonly=True) as s:
        folded = await load_ticket(s.conn, tenant, tid)
        row = await s.conn.fetchrow("SELECT state, priority, tags, version FROM tickets")
        n_messages = await s.conn.fetchval("SELECT count(*) FROM messages")
    assert folded == result.ticket
    assert dict(row) == {"state": "pending", "priority": "low", "tags": ["vip"], "version": 5}
    assert n_messages == 2


async def test_stale_expected_version_and_unknown_agent(store, make_tenant):
    tenant = (await make_tenant("Acme")).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, opening(tid))
    with pytest.raises(ConcurrencyError):
        async with store.unit_of_work(tenant, KEY) as s:
            await execute(s, tid, ChangeTags(add=("a",), actor=AGENT, at=T0),
                          expected_version=3)
    with pytest.raises(ValidationFailed):
        async with store.unit_of_work(tenant, KEY) as s:
            await execute(s, tid, Assign(agent_id=uuid.uuid4(), actor=AGENT, at=T0))


async def test_customer_message_on_closed_ticket_opens_follow_up(store, make_tenant):
    tenant = (await make_tenant("Acme")).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, opening(tid))
        await execute(s, tid, ChangeState(to=TicketState.SOLVED, actor=AGENT, at=T0))
        await execute(s, tid, ChangeState(to=TicketState.CLOSED, actor=AGENT, at=T0))
        msg = AddMessage(message_id=MessageId(uuid.uuid4()), body="Again!", actor=CUSTOMER,
                         at=T0 + timedelta(days=1))
        result = await execute(s, tid, msg)
    assert result.follow_up is not None
    assert result.follow_up.follow_up_of == tid
    assert result.ticket.follow_up_ids == (result.follow_up.id,)
    assert {e.stream_id for e in result.events} == {tid, result.follow_up.id}


async def test_concurrent_commands_queue_on_the_ticket_row(store, make_tenant):
    tenant = (await make_tenant("Acme")).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, opening(tid))

    async def tag(i: int) -> None:
        async with store.unit_of_work(tenant, KEY) as s:
            await execute(s, tid, ChangeTags(add=(f"t{i}",), actor=AGENT, at=T0))

    await asyncio.gather(*(tag(i) for i in range(15)))
    async with store.unit_of_work(tenant, readonly=True) as s:
        versions = [e.version for e in await s.read_stream(tid)]
        ticket = await load_ticket(s.conn, tenant, tid)
    assert versions == list(range(1, 17))
    assert ticket is not None and len(ticket.tags) == 15


async def test_tenant_settings_drive_the_policy(store, make_tenant):
    tenant = (await make_tenant("Acme")).tenant_id
    doc = {"sla_targets": {"normal": {"first_response_ms": 60_000}}}
    async with store.unit_of_work(tenant, KEY) as s:
        await s.conn.execute(
            "INSERT INTO tenant_settings (tenant_id, settings, updated_at) VALUES ($1, $2, now())",
            tenant, doc)
        tid = uuid.uuid4()
        result = await execute(s, tid, opening(tid))
    fr = result.ticket.clocks["first_response"]  # type: ignore[index]
    assert fr.due_at == T0 + timedelta(minutes=1)
    # The priority's other target, and every other priority, keep their defaults.
    targets = read_document(doc).settings().policy.targets
    assert targets[Priority.NORMAL].resolution_ms == 72 * 3600_000
    assert targets[Priority.URGENT] == DEFAULT_TARGETS[Priority.URGENT]


async def test_purge_expired_idempotency_records(store, make_tenant):
    from scheduler.idempotency import purge_expired

    tenant = (await make_tenant("Acme")).tenant_id
    async with store.unit_of_work(tenant) as s:
        for key, ttl in (("old", "-1 hour"), ("new", "1 hour")):
            await s.conn.execute(
                "INSERT INTO idempotency_keys (tenant_id, api_key_id, route, key, fingerprint,"
                " response_status, response_body, expires_at)"
                " VALUES ($1, $1, 'POST /v1/tickets', $2, '\\x00', 201, '{}',"
                " now() + $3::text::interval)", tenant, key, ttl)
        assert await purge_expired(s.conn, tenant) == 1
        assert await s.conn.fetchval("SELECT array_agg(key) FROM idempotency_keys") == ["new"]
