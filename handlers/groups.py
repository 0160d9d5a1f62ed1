"""Groups (teams of agents): creating and changing them.

Each group is an aggregate with its own stream; its ``groups`` row is written in the
same transaction as its events. The aggregate (``domain.group``) keeps its own rules;
here are the ones that need the tenant's read models: a name is unique in the tenant
(case aside), and every member added is an active agent of the tenant.

Removing an agent from a group changes no ticket: the tickets of the group they hold
stay assigned to them, and the answer says which (``GroupChange.still_assigned``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from domain.events import Event, GroupMembersChanged
from domain.group import ChangeGroup, CreateGroup, Group, decide_group, evolve_group
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, Missing, expect_version
from handlers.records import append_events
from projections import groups as read_model

MOST_TICKET_IDS = 100
"""How many ticket ids the answer names per agent who left the group (all are counted)."""


@dataclass(frozen=True, slots=True)
class GroupChange:
    """A group after a command, and the agents who left it while still holding some of
    its tickets (``agent_id``, ``tickets``: how many, ``ticket_ids``: the newest ones)."""

    group: Group
    still_assigned: list[dict[str, Any]] = field(default_factory=list)


def _name_taken(name: str, existing: UUID | None) -> Conflict:
    extra = {} if existing is None else {"group_id": str(existing)}
    return Conflict("group_exists", f"a group named {name!r} exists", **extra)


async def _check_members(uow: UnitOfWork, agent_ids: Sequence[UUID]) -> None:
    unknown = await read_model.not_active_agents(uow.conn, uow.tenant_id, agent_ids)
    if unknown:
        names = ", ".join(str(a) for a in unknown)
        raise Invalid("unknown_agent", f"not an active agent of this tenant: {names}",
                      field="members", kind="unknown_agent")


def _fold(state: Group | None, events: list[Event]) -> Group:
    for event in events:
        state = evolve_group(state, event)
    assert state is not None
    return state


async def create_group(uow: UnitOfWork, command: CreateGroup) -> Group:
    """Create a group; ``group_exists`` (with the existing group's id) if the name is
    taken, ``unknown_agent`` if a member is not an active agent."""
    events = decide_group(command, None)
    group = _fold(None, events)
    await _check_members(uow, group.members)
    if not await read_model.insert_group(uow.conn, uow.tenant_id, group):
        raise _name_taken(group.name, await read_model.group_named(uow.conn, uow.tenant_id,
                                                                    group.name))
    await append_events(uow, group.id, 0, events)
    return group


async def change_group(uow: UnitOfWork, group_id: UUID, command: ChangeGroup, *,
                       expected_version: int | None = None) -> GroupChange:
    """Rename a group and/or replace its members. A change to nothing records nothing."""
    state = await read_model.load_group(uow.conn, uow.tenant_id, group_id, for_update=True)
    if state is None:
        raise Missing("not_found", f"no group {group_id}")
    expect_version("group", state.version, expected_version)
    events = decide_group(command, state)
    if not events:
        return GroupChange(state)
    after = _fold(state, events)
    added = [a for a in after.members if a not in state.members]
    await _check_members(uow, added)
    if after.name != state.name:
        owner = await read_model.group_named(uow.conn, uow.tenant_id, after.name)
        if owner is not None and owner != group_id:
            raise _name_taken(after.name, owner)
    try:
        async with uow.conn.transaction():  # a savepoint: a lost name race is a 409
            await read_model.update_group(uow.conn, uow.tenant_id, after)
    except asyncpg.UniqueViolationError as exc:
        raise _name_taken(after.name, None) from exc
    await append_events(uow, group_id, state.version, events)
    removed = [a for e in events if isinstance(e, GroupMembersChanged) for a in e.removed]
    held = await read_model.tickets_held(uow.conn, uow.tenant_id, group_id, removed,
                                         MOST_TICKET_IDS)
    return GroupChange(after, [{"agent_id": r["agent_id"], "tickets": r["tickets"],
                                "ticket_ids": list(r["ticket_ids"])} for r in held])


async def get_group(uow: UnitOfWork, group_id: UUID) -> Group | None:
    return await read_model.load_group(uow.conn, uow.tenant_id, group_id)


__all__ = ["MOST_TICKET_IDS", "GroupChange", "change_group", "create_group", "get_group"]
