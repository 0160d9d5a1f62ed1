"""Drive tickets through the domain and the event store, as the ticket API will:
fold the stream, ``decide``, map with the mapper, append at the expected version."""

from __future__ import annotations

import random
import uuid
from datetime import datetime
from typing import Any

from domain import (
    Actor,
    ActorKind,
    AddMessage,
    Assign,
    ChangePriority,
    ChangeState,
    CheckSla,
    DomainError,
    OpenTicket,
    Priority,
    Requester,
    SlaMetric,
    SlaPolicy,
    Source,
    TicketState,
    Visibility,
    decide,
    fold,
    from_stored,
    to_stored,
)
from domain.clock import ManualClock
from domain.ids import AgentId, MessageId, TenantId, TicketId
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor

CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="intake")
ACTOR = StoreActor("api_key", "test")


def agent(agent_id: uuid.UUID) -> Actor:
    return Actor(kind=ActorKind.AGENT, id=str(agent_id))


class Desk:
    """One tenant's tickets, moved by commands at the clock's time."""

    def __init__(self, store: EventStore, tenant_id: TenantId, clock: ManualClock,
                 policy: SlaPolicy | None = None) -> None:
        self.store = store
        self.tenant_id = tenant_id
        self.clock = clock
        self.policy = policy or SlaPolicy()

    async def run(self, ticket_id: uuid.UUID, command: Any) -> int:
        """Decide and append ``command``; returns the number of events appended."""
        async with self.store.session(self.tenant_id, ACTOR) as s:
            records = await s.read_stream(ticket_id)
            state = fold(from_stored(r.type, r.schema_version, r.data) for r in records)
            events = decide(command, state, self.policy)
            stored = [to_stored(e) for e in events]
            await s.append(ticket_id, len(records),
                           [NewEvent(t, d, v) for t, v, d in stored])
        return len(events)

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
    """``commands`` random ticket commands (refused ones included) at a moving clock."""
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
