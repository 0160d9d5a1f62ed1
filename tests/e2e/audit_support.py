"""Drive a ticket through many changes with the domain and the store, as the write path
does, recording the state after every version."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from domain.mapper import from_stored, to_stored
from domain.sla import SlaPolicy
from domain.ticket import Ticket, evolve, fold
from domain.ticket import commands as c
from domain.ticket.decide import decide
from domain.values import Actor, ActorKind, Priority, Requester, SlaMetric, TicketState
from eventstore.store import EventStore
from eventstore.types import SYSTEM, NewEvent, StoreActor
from projections.views import ticket_json

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass
class Recorded:
    ticket_id: uuid.UUID
    views: dict[int, dict[str, Any]] = field(default_factory=dict)
    """version -> the ticket as rendered right after that version was written."""
    actors: dict[int, tuple[str, str]] = field(default_factory=dict)
    """version -> (actor kind, actor id) the store must have stamped."""


async def apply(store: EventStore, tenant, actor: StoreActor, ticket_id: uuid.UUID,
                command: Any, rec: Recorded) -> Ticket:
    async with store.unit_of_work(tenant, actor) as s:
        stored = await s.read_stream(ticket_id)
        state = fold(from_stored(e.type, e.schema_version, e.data) for e in stored)
        events = decide(command, state, SlaPolicy())
        assert events, f"{type(command).__name__} changed nothing"
        new = []
        for event in events:
            type_, version, data = to_stored(event)
            new.append(NewEvent(type_, data, version))
        await s.append(ticket_id, state.version if state else 0, new)
    for event in events:
        state = evolve(state, event)
        rec.views[state.version] = orjson.loads(ticket_json(state))
        rec.actors[state.version] = (actor.kind, actor.id)
    assert state is not None
    return state


async def ticket_with_history(store: EventStore, tenant, agent_key: uuid.UUID,
                              intake_key: uuid.UUID) -> Recorded:
    """A ticket with 22 versions: replies, notes, moves, tags, priority, an SLA breach."""
    tid = uuid.uuid4()
    rec = Recorded(tid)
    agent = StoreActor("api_key", str(agent_key))
    intake = StoreActor("api_key", str(intake_key))
    me = Actor(kind=ActorKind.AGENT, id=str(agent_key))
    customer = Actor(kind=ActorKind.CUSTOMER, id=str(intake_key))
    someone = uuid.uuid4()
    minute = [0]

    def at() -> datetime:
        minute[0] += 10
        return T0 + timedelta(minutes=minute[0])

    def msg(actor: Actor, visibility: str = "public") -> c.AddMessage:
        return c.AddMessage(message_id=uuid.uuid4(), body="text", visibility=visibility,
                            actor=actor, at=at())

    steps: list[tuple[StoreActor, Any]] = [
        (agent, c.OpenTicket(ticket_id=tid, subject="Printer on fire", body="help",
                             requester=Requester(email="c@example.com", name="C"),
                             actor=me, at=T0)),
        (agent, c.ChangeTags(add=("billing",), actor=me, at=at())),
        (agent, c.Assign(agent_id=someone, actor=me, at=at())),
        (agent, c.ChangePriority(priority=Priority.HIGH, actor=me, at=at())),
        (agent, msg(me, "internal")),
        (SYSTEM, c.CheckSla(metric=SlaMetric.FIRST_RESPONSE, at=T0 + timedelta(hours=3))),
        (agent, msg(me)),
        (agent, c.ChangeState(to=TicketState.PENDING, actor=me, at=at())),
        (intake, msg(customer)),
        (agent, c.ChangePriority(priority=Priority.URGENT, actor=me, at=at())),
        (agent, c.ChangeState(to=TicketState.ON_HOLD, actor=me, at=at())),
        (agent, c.ChangeState(to=TicketState.OPEN, actor=me, at=at())),
        (agent, c.ChangeTags(add=("vip",), remove=("billing",), actor=me, at=at())),
        (agent, c.Assign(agent_id=None, actor=me, at=at())),
        (agent, msg(me)),
        (agent, c.ChangeState(to=TicketState.SOLVED, actor=me, at=at())),
        (agent, c.ChangeState(to=TicketState.OPEN, reason="not fixed", actor=me, at=at())),
        (agent, c.ChangePriority(priority=Priority.LOW, actor=me, at=at())),
        (agent, msg(me, "internal")),
        (agent, c.ChangeState(to=TicketState.SOLVED, actor=me, at=at())),
        (agent, c.ChangeState(to=TicketState.CLOSED, actor=me, at=at())),
    ]
    for actor, command in steps:
        if isinstance(command, c.CheckSla):
            minute[0] = 200  # business time moves on past the breach
        await apply(store, tenant, actor, tid, command, rec)
    return rec
