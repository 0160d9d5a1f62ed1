"""The groups read model under row-level security, as the runtime role: one tenant
never reads, writes or references another's groups; and its rows match the group's
stream."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from domain.errors import ValidationFailed
from domain.group import ChangeGroup, CreateGroup, fold_group
from domain.ids import AgentId, GroupId, TicketId
from domain.mapper import from_stored
from domain.ticket.commands import Assign, OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.store import EventStore
from handlers import groups
from handlers.errors import Missing
from handlers.tickets import run_command
from projections.groups import load_group
from tests.support.desk import ACTOR

AT = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")


async def _agent(store: EventStore, tenant_id: uuid.UUID) -> AgentId:
    agent = AgentId(uuid.uuid4())
    async with store.unit_of_work(tenant_id, ACTOR) as s:
        await s.conn.execute(
            "INSERT INTO agents (tenant_id, id, email, name, role, created_at, updated_at) "
            "VALUES ($1, $2, $3, 'A', 'agent', $4, $4)", tenant_id, agent,
            f"{agent}@example.com", AT)
    return agent


async def test_groups_rows_are_the_tenants_own(store: EventStore, make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    ann = await _agent(store, a)
    gid = GroupId(uuid.uuid4())
    async with store.unit_of_work(a, ACTOR) as s:
        await groups.create_group(s, CreateGroup(group_id=gid, name="Billing", members=(ann,),
                                                 at=AT))
    async with store.unit_of_work(b, ACTOR, readonly=True) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM groups") == 0
        assert await load_group(s.conn, b, gid) is None
        # Even naming the other tenant's id in the statement finds nothing.
        assert await load_group(s.conn, a, gid) is None
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(Missing):
            await groups.change_group(s, gid, ChangeGroup(name="Mine", at=AT))
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # the policy's WITH CHECK
            await s.conn.execute(
                "INSERT INTO groups (tenant_id, id, name, version, created_at, updated_at) "
                "VALUES ($1, $2, 'x', 1, $3, $3)", a, uuid.uuid4(), AT)
    async with store.unit_of_work(b, ACTOR) as s:
        assert await s.conn.execute("UPDATE groups SET name = 'x'") == "UPDATE 0"
    # The same name is free in another tenant.
    async with store.unit_of_work(b, ACTOR) as s:
        await groups.create_group(s, CreateGroup(group_id=GroupId(uuid.uuid4()),
                                                 name="Billing", at=AT))
    async with store.unit_of_work(a, ACTOR, readonly=True) as s:
        row = await load_group(s.conn, a, gid)
        folded = fold_group(from_stored(e.type, e.schema_version, e.data)
                            for e in await s.read_stream(gid))
    assert row == folded and row is not None and row.members == (ann,)


async def test_a_ticket_cannot_be_routed_to_another_tenants_group(store: EventStore,
                                                                   make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    gid = GroupId(uuid.uuid4())
    async with store.unit_of_work(a, ACTOR) as s:
        await groups.create_group(s, CreateGroup(group_id=gid, name="Billing", at=AT))
    tid = TicketId(uuid.uuid4())
    opened = OpenTicket(ticket_id=tid, subject="s", body="b",
                        requester=Requester(email="c@example.com"), actor=AGENT, at=AT,
                        group_id=gid)
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(ValidationFailed) as err:
            await run_command(s, tid, opened)
    assert str(gid) in err.value.message
    async with store.unit_of_work(b, ACTOR) as s:
        await run_command(s, tid, opened.model_copy(update={"group_id": None}))
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(ValidationFailed):
            await run_command(s, tid, Assign(group_id=gid, set_group=True, set_agent=False,
                                             actor=AGENT, at=AT))
    # And the database would refuse it too: the ticket's group must be the tenant's.
    async with store.unit_of_work(b, ACTOR) as s:
        with pytest.raises(asyncpg.ForeignKeyViolationError):
            await s.conn.execute(
                "UPDATE tickets SET state_json = jsonb_set(state_json, '{group_id}', "
                "to_jsonb($2::text)) WHERE tenant_id = $1", b, str(gid))
