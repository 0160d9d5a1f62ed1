"""The agent aggregate: a person of the tenant who works tickets, with a role.

An agent's events are on the tenant stream (``AgentAdded``, then ``AgentUpdated``
with only the fields that changed), so the tenant's feed is its audit trail; the
agent's own state is its row, which the write side locks while it decides
(docs/architecture.md). ``decide_agent`` is pure and ``evolve_agent`` only applies
facts. What the aggregate cannot see (that an e-mail is free in the tenant) the
caller checks against its rows.
"""

from __future__ import annotations

import uuid

from pydantic import Field

from domain.aggregate import AggregateState, BaseCommand
from domain.errors import AlreadyExists, CorruptStream, NotFound
from domain.events import AgentAdded, AgentChanges, AgentUpdated, Event
from domain.evolution import first_version, fold_onto, one_version_on, stream_start
from domain.ids import AgentId
from domain.values import Role, UtcDatetime

AGENT_FIELDS = ("email", "name", "role", "active")
"""What ``UpdateAgent`` may change."""


class Agent(AggregateState):
    """An agent as of ``version`` changes (1: as added)."""

    id: AgentId
    email: str
    name: str
    role: Role
    active: bool = True
    created_at: UtcDatetime
    updated_at: UtcDatetime


class AddAgent(BaseCommand):
    email: str
    name: str
    role: Role
    agent_id: AgentId = Field(default_factory=lambda: AgentId(uuid.uuid4()))


class UpdateAgent(AgentChanges, BaseCommand):
    """Change the fields given; None leaves that field as it is."""


AgentCommand = AddAgent | UpdateAgent


def decide_agent(command: AgentCommand, state: Agent | None) -> list[Event]:
    """The events a command produces on an agent (None: no such agent). A change to
    nothing returns ``[]``."""
    if isinstance(command, AddAgent):
        if state is not None:
            raise AlreadyExists("the agent already exists")
        return [AgentAdded(agent_id=command.agent_id, email=command.email, name=command.name,
                           role=command.role, at=command.at)]
    if state is None:
        raise NotFound("the agent does not exist")
    changed = {k: getattr(command, k) for k in AGENT_FIELDS
               if getattr(command, k) is not None and getattr(command, k) != getattr(state, k)}
    if not changed:
        return []
    return [AgentUpdated(agent_id=state.id, at=command.at, **changed)]


def evolve_agent(state: Agent | None, event: Event) -> Agent:
    """Apply one event to an agent (None before it was added)."""
    if state is None:
        added = stream_start(event, AgentAdded, "an agent")
        return first_version(Agent, added, id=added.agent_id)
    match event:
        case AgentUpdated(agent_id=agent_id) if agent_id == state.id:
            return one_version_on(state, event, AGENT_FIELDS)
    raise CorruptStream(f"{event.TYPE} does not apply to agent {state.id}")


fold_agent = fold_onto(evolve_agent)


__all__ = [
    "AGENT_FIELDS",
    "AddAgent",
    "Agent",
    "AgentCommand",
    "UpdateAgent",
    "decide_agent",
    "evolve_agent",
    "fold_agent",
]
