"""Drive tickets through the same handlers as the API (``handlers.tickets``), at a
clock the test moves: every command decides on the inline state, updates the read
models and appends its events in one unit of work."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from domain.clock import ManualClock
from domain.errors import DomainError
from domain.ids import AgentId, MessageId, TenantId, TicketId
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangePriority,
    ChangeState,
    CheckSla,
    OpenTicket,
)
from domain.values import (
    Actor,
    ActorKind,
    Priority,
    Requester,
    Role,
    SlaMetric,
    Source,
    TicketState,
    Visibility,
)
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers.agents import AddAgent, add_agent, get_agent
from handlers.tickets import run_command

CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="intake")
ACTOR = StoreActor("api_key", "test")


def agent(agent_id: uuid.UUID) -> Actor:
    return Actor(kind=ActorKind.AGENT, id=str(agent_id))


class Desk:
    """One tenant's tickets, moved by commands at the clock's time."""

    def __init__(self, store: EventStore, tenant_id: TenantId, clock: ManualClock) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.clock = clock

    async def run(self, ticket_id: uuid.UUID, command: Any) -> int:
        """Run ``command`` through the write path; returns the number of events appended.
        The SLA policy is the tenant's, from its settings, as for the API."""
        async with self.store.unit_of_work(self.tenant_id, ACTOR) as s:
            result = await run_command(s, ticket_id, command)
        return len(result.events)

    async def hire(self, *agent_ids: uuid.UUID) -> None:
        """Add active agents with these ids (assignees must be agents of the tenant);
        those already hired are left as they are."""
        async with self.store.unit_of_work(self.tenant_id, ACTOR) as s:
            for agent_id in agent_ids:
                if await get_agent(s, agent_id) is not None:
                    continue
                await add_agent(s, AddAgent(email=f"{agent_id}@example.com", name="Agent",
                                            role=Role.AGENT, at=self.clock.now(),
                                            agent_id=agent_id))

    def _at(self) -> datetime:
        return self.clock.now()

    async def open(self, priority: Priority = Priority.NORMAL,
                   source: Source = Source.EMAIL) -> uuid.UUID:
        tid = TicketId(uuid.uuid4())
        await self.run(tid, OpenTicket(
            ticket_id=tid, subject="Help", body="It broke",
            requester=Requester(email="c@example.com"), priority=priority, source=source,
            actor=CUSTOMER, at=self._at()))
        return tid

    async def reply(self, tid: uuid.UUID, by: uuid.UUID,
                    visibility: Visibility = Visibility.PUBLIC) -> None:
        await self.run(tid, AddMessage(message_id=MessageId(uuid.uuid4()), body="Answer",
                                       visibility=visibility, actor=agent(by), at=self._at()))

    async def customer(self, tid: uuid.UUID) -> None:
        await self.run(tid, AddMessage(message_id=MessageId(uuid.uuid4()), body="More",
                                       actor=CUSTOMER, at=self._at()))

    async def assign(self, tid: uuid.UUID, to: uuid.UUID, by: uuid.UUID) -> None:
        await self.run(tid, Assign(agent_id=AgentId(to), actor=agent(by), at=self._at()))

    async def state(self, tid: uuid.UUID, to: TicketState, by: uuid.UUID) -> None:
        await self.run(tid, ChangeState(to=to, actor=agent(by), at=self._at()))

    async def priority(self, tid: uuid.UUID, to: Priority, by: uuid.UUID) -> None:
        await self.run(tid, ChangePriority(priority=to, actor=agent(by), at=self._at()))

    async def check(self, tid: uuid.UUID, metric: SlaMetric) -> int:
        return await self.run(tid, CheckSla(metric=metric, at=self._at()))


async def random_traffic(desk: Desk, rng: random.Random, commands: int,
                         agents: tuple[uuid.UUID, ...]) -> None:
    """``commands`` random ticket commands (refused ones included) at a moving clock,
    by ``agents`` (hired first)."""
    await desk.hire(*agents)
    tickets: list[uuid.UUID] = []
    for _ in range(commands):
        desk.clock.advance(minutes=rng.randint(1, 240))
        roll = rng.random()
        if not tickets or roll < 0.2:
            tickets.append(await desk.open(rng.choice(list(Priority)), rng.choice(list(Source))))
            continue
        tid = rng.choice(tickets)
        who = rng.choice(agents)
        try:
            if roll < 0.4:
                await desk.reply(tid, who, rng.choice(list(Visibility)))
            elif roll < 0.5:
                await desk.customer(tid)
            elif roll < 0.6:
                await desk.assign(tid, rng.choice(agents), who)
            elif roll < 0.7:
                await desk.priority(tid, rng.choice(list(Priority)), who)
            elif roll < 0.9:
                await desk.state(tid, rng.choice(list(TicketState)), who)
            else:
                await desk.check(tid, rng.choice(list(SlaMetric)))
        except DomainError:
            pass  # a refused command appends nothing, as over the API


async def seed_tickets(runtime_url: str, tenant_id: Any, count: int) -> list[str]:
    """Open ``count`` tickets through the write path, 500 per unit of work."""
    from eventstore.pool import create_pool
    from handlers.tickets import execute

    pool = await create_pool(runtime_url, min_size=1, max_size=2)
    store = EventStore(pool)
    t0 = datetime.now(UTC) - timedelta(days=30)
    customer = Actor(kind=ActorKind.CUSTOMER, id="bench@example.com")
    ids: list[str] = []
    try:
        for start in range(0, count, 500):
            async with store.unit_of_work(tenant_id, StoreActor("api_key", "bench")) as s:
                for i in range(start, min(count, start + 500)):
                    tid = TicketId(uuid.uuid4())
                    await execute(s, tid, OpenTicket(
                        ticket_id=tid, subject=f"bench {i}", body="b",
                        requester=Requester(email="bench@example.com"), actor=customer,
                        at=t0 + timedelta(seconds=i)))
                    ids.append(str(tid))
        await store.notifier.flush()
    finally:
        await pool.close()
    return ids
