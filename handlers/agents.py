"""The tenant's agents: an inline read model (``agents``) plus tenant-stream events.

Adding and changing an agent records ``AgentAdded`` / ``AgentUpdated`` in the same
transaction. An e-mail belongs to at most one agent of a tenant.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.events import AgentAdded, AgentUpdated
from domain.ids import AgentId
from domain.values import Role
from eventstore.sqlfile import load_queries
from eventstore.store import Session
from handlers.errors import Conflict, Missing
from handlers.tenant_events import record

Q = load_queries(Path(__file__).with_name("queries.sql"))

AGENT_FIELDS = ("email", "name", "role", "active")


@dataclass(frozen=True, slots=True)
class AddAgent:
    email: str
    name: str
    role: Role
    at: datetime
    agent_id: UUID = field(default_factory=uuid.uuid4)


@dataclass(frozen=True, slots=True)
class UpdateAgent:
    """Change the given fields (``email``, ``name``, ``role``, ``active``) only."""

    agent_id: UUID
    changes: Mapping[str, Any]
    at: datetime


def _taken(email: str) -> Conflict:
    return Conflict("agent_exists", f"an agent with e-mail {email} exists")


async def add_agent(uow: Session, command: AddAgent) -> dict[str, Any]:
    """Add an agent; ``agent_exists`` if the e-mail is taken. Returns its row."""
    row = await uow.conn.fetchrow(Q["insert_agent"], uow.tenant_id, command.agent_id,
                                  command.email, command.name, command.role.value, command.at)
    if row is None:
        raise _taken(command.email)
    await record(uow, AgentAdded(agent_id=AgentId(command.agent_id), email=command.email,
                                 name=command.name, role=command.role, at=command.at))
    return dict(row)


async def update_agent(uow: Session, command: UpdateAgent) -> dict[str, Any]:
    """Change an agent; a change to nothing records nothing. Returns its row."""
    unknown = set(command.changes) - set(AGENT_FIELDS)
    if unknown:
        raise ValueError(f"not agent fields: {sorted(unknown)}")
    row = await uow.conn.fetchrow(Q["get_agent_for_update"], uow.tenant_id, command.agent_id)
    if row is None:
        raise Missing("not_found", "no such agent")
    changed = {k: v for k, v in command.changes.items() if row[k] != v}
    if not changed:
        return dict(row)
    if "email" in changed and await uow.conn.fetchval(
        Q["agent_email_taken"], uow.tenant_id, changed["email"], command.agent_id
    ):
        raise _taken(changed["email"])
    merged = {**dict(row), **changed}
    new = await uow.conn.fetchrow(Q["update_agent"], uow.tenant_id, command.agent_id,
                                  merged["email"], merged["name"], merged["role"],
                                  merged["active"], command.at)
    assert new is not None
    await record(uow, AgentUpdated(agent_id=AgentId(command.agent_id), at=command.at,
                                   **changed))
    return dict(new)


async def get_agent(uow: Session, agent_id: UUID) -> dict[str, Any] | None:
    row = await uow.conn.fetchrow(Q["get_agent"], uow.tenant_id, agent_id)
    return None if row is None else dict(row)


async def list_agents(uow: Session, after: tuple[datetime, UUID] | None,
                      limit: int) -> Sequence[Any]:
    """The tenant's agents in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    rows: Sequence[Any] = await uow.conn.fetch(Q["list_agents"], uow.tenant_id, at, last, limit)
    return rows


__all__ = ["AddAgent", "UpdateAgent", "add_agent", "get_agent", "list_agents", "update_agent"]
