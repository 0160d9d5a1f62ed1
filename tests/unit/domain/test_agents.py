"""Given events, when a command, then events: the agent aggregate."""

from __future__ import annotations

import uuid

import pytest

from domain.agent import AddAgent, UpdateAgent, decide_agent, evolve_agent, fold_agent
from domain.errors import AlreadyExists, CorruptStream, NotFound
from domain.events import AgentAdded, AgentUpdated, Event, GroupRenamed
from domain.ids import AgentId
from domain.values import Role
from tests.unit.domain.support import at

ANN = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000b1"))
BOB = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000b2"))


def added(role: Role = Role.AGENT) -> list[Event]:
    return decide_agent(AddAgent(agent_id=ANN, email="ann@example.com", name="Ann", role=role,
                                 at=at()), None)


def when_agent(history: list[Event], command: AddAgent | UpdateAgent) -> list[Event]:
    return decide_agent(command, fold_agent(None, history))


def test_adding_an_agent_records_who_they_are():
    assert added() == [AgentAdded(agent_id=ANN, email="ann@example.com", name="Ann",
                                  role=Role.AGENT, at=at())]
    agent = fold_agent(None, added())
    assert agent is not None
    assert (agent.version, agent.role, agent.active) == (1, Role.AGENT, True)


def test_an_agent_is_added_once():
    with pytest.raises(AlreadyExists):
        when_agent(added(), AddAgent(agent_id=ANN, email="ann@example.com", name="Ann",
                                     role=Role.AGENT, at=at(1)))


def test_an_update_records_only_the_fields_that_change():
    then = when_agent(added(), UpdateAgent(agent_id=ANN, email="ann@example.com",
                                           name="Ann Lee", role=Role.ADMIN, at=at(1)))
    assert then == [AgentUpdated(agent_id=ANN, name="Ann Lee", role=Role.ADMIN, at=at(1))]
    agent = fold_agent(None, added() + then)
    assert agent is not None
    assert (agent.version, agent.name, agent.role, agent.email) == \
        (2, "Ann Lee", Role.ADMIN, "ann@example.com")
    assert agent.updated_at == at(1) and agent.created_at == at()


def test_deactivating_and_an_update_to_nothing():
    off = when_agent(added(), UpdateAgent(agent_id=ANN, active=False, at=at(1)))
    assert off == [AgentUpdated(agent_id=ANN, active=False, at=at(1))]
    history = added() + off
    assert when_agent(history, UpdateAgent(agent_id=ANN, active=False, at=at(2))) == []
    assert when_agent(history, UpdateAgent(agent_id=ANN, at=at(2))) == []
    agent = fold_agent(None, history)
    assert agent is not None and agent.active is False


def test_no_agent_no_update():
    with pytest.raises(NotFound):
        when_agent([], UpdateAgent(agent_id=ANN, name="Ann", at=at()))


def test_an_agent_evolves_only_from_its_own_events():
    with pytest.raises(CorruptStream):
        evolve_agent(None, AgentUpdated(agent_id=ANN, name="x", at=at()))
    agent = fold_agent(None, added())
    with pytest.raises(CorruptStream):
        evolve_agent(agent, AgentUpdated(agent_id=BOB, name="x", at=at()))
    with pytest.raises(CorruptStream):
        evolve_agent(agent, GroupRenamed(name="x", at=at()))
