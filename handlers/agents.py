"""The tenant's agents: adding and changing them.

Each agent is an aggregate (``domain.agent``) whose events are on the tenant stream;
its ``agents`` row is its state, locked while a change is decided and written in the
same transaction as the events. Here is the rule that needs the tenant's rows: an
e-mail belongs to at most one agent of a tenant.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.agent import AddAgent, Agent, UpdateAgent, decide_agent, fold_agent
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Missing
from handlers.tenant_events import record_all

Q = load_queries(Path(__file__).with_name("queries.sql"))


def _taken(email: str) -> Conflict:
    return Conflict("agent_exists", f"an agent with e-mail {email} exists")


def agent_of_row(row: Any) -> Agent:
    """An agent's state from its row."""
    return Agent.model_validate({k: row[k] for k in Agent.model_fields})


async def add_agent(uow: UnitOfWork, command: AddAgent) -> dict[str, Any]:
    """Add an agent; ``agent_exists`` if the e-mail is taken. Returns its row."""
    events = decide_agent(command, None)
    agent = fold_agent(None, events)
    assert agent is not None
    row = await uow.conn.fetchrow(Q["insert_agent"], uow.tenant_id, agent.id, agent.email,
                                  agent.name, agent.role.value, command.at)
    if row is None:
        raise _taken(command.email)
    await record_all(uow, events)
    return dict(row)


async def update_agent(uow: UnitOfWork, command: UpdateAgent) -> dict[str, Any]:
    """Change an agent; a change to nothing records nothing. Returns its row."""
    row = await uow.conn.fetchrow(Q["get_agent_for_update"], uow.tenant_id, command.agent_id)
    if row is None:
        raise Missing("not_found", "no such agent")
    state = agent_of_row(row)
    events = decide_agent(command, state)
    if not events:
        return dict(row)
    after = fold_agent(state, events)
    assert after is not None
    if after.email != state.email and await uow.conn.fetchval(
        Q["agent_email_taken"], uow.tenant_id, after.email, command.agent_id
    ):
        raise _taken(after.email)
    new = await uow.conn.fetchrow(Q["update_agent"], uow.tenant_id, command.agent_id,
                                  after.email, after.name, after.role.value, after.active,
                                  command.at)
    assert new is not None
    await record_all(uow, events)
    return dict(new)


async def get_agent(uow: UnitOfWork, agent_id: UUID) -> dict[str, Any] | None:
    row = await uow.conn.fetchrow(Q["get_agent"], uow.tenant_id, agent_id)
    return None if row is None else dict(row)


async def list_agents(uow: UnitOfWork, after: tuple[datetime, UUID] | None,
                      limit: int) -> Sequence[Any]:
    """The tenant's agents in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    rows: Sequence[Any] = await uow.conn.fetch(Q["list_agents"], uow.tenant_id, at, last, limit)
    return rows


__all__ = ["AddAgent", "UpdateAgent", "add_agent", "agent_of_row", "get_agent", "list_agents",
           "update_agent"]
