"""The inline read model of group streams: ``groups``, one row per group.

Written by the group handlers in the command's own transaction, next to the events
(``handlers.groups``); read by the ticket write path (is the group known, who are its
members), the ticket list's ``group_id`` filter, analytics and the group routes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.group import Group
from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from projections.rows import record_of_row, records_of_rows

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def load_group(conn: asyncpg.Connection, tenant_id: TenantId, group_id: UUID, *,
                     for_update: bool = False, for_share: bool = False) -> Group | None:
    """The group as its row holds it; ``for_update`` locks the row until commit
    (``for_share``: against changes only)."""
    query = "group_for_update" if for_update else "group_for_share" if for_share else "get_group"
    return await record_of_row(conn, Group, Q[query], tenant_id, group_id)


async def insert_group(conn: asyncpg.Connection, tenant_id: TenantId, group: Group) -> bool:
    """Write a new group's row; False when its name is taken in the tenant."""
    row = await conn.fetchrow(Q["insert_group"], tenant_id, group.id, group.name,
                              list(group.members), group.created_at)
    return row is not None


async def update_group(conn: asyncpg.Connection, tenant_id: TenantId, group: Group) -> None:
    """Overwrite a group's row with its new state (the caller holds the row lock)."""
    await conn.execute(Q["update_group"], tenant_id, group.id, group.version, group.name,
                       list(group.members), group.updated_at)


async def group_named(conn: asyncpg.Connection, tenant_id: TenantId, name: str) -> UUID | None:
    """The id of the tenant's group with this name, case aside."""
    found: UUID | None = await conn.fetchval(Q["group_named"], tenant_id, name)
    return found


async def list_groups(conn: asyncpg.Connection, tenant_id: TenantId,
                      after: tuple[datetime, UUID] | None, limit: int) -> list[Group]:
    """The tenant's groups in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    return await records_of_rows(conn, Group, Q["list_groups"], tenant_id, at, last, limit)


async def unknown_groups(conn: asyncpg.Connection, tenant_id: TenantId,
                         group_ids: Sequence[UUID]) -> list[UUID]:
    """The ids among ``group_ids`` that name no group of the tenant, in order."""
    known = {r["id"] for r in await conn.fetch(Q["known_groups"], tenant_id, list(group_ids))}
    return [g for g in dict.fromkeys(group_ids) if g not in known]


async def not_active_agents(conn: asyncpg.Connection, tenant_id: TenantId,
                            agent_ids: Sequence[UUID]) -> list[UUID]:
    """The ids among ``agent_ids`` that are not active agents of the tenant, in order."""
    rows = await conn.fetch(Q["active_agents_among"], tenant_id, list(agent_ids))
    active = {r["id"] for r in rows}
    return [a for a in dict.fromkeys(agent_ids) if a not in active]


async def tickets_held(conn: asyncpg.Connection, tenant_id: TenantId, group_id: UUID,
                       agent_ids: Sequence[UUID], most: int) -> list[asyncpg.Record]:
    """Per agent: how many of the group's tickets (closed ones aside) are assigned to
    them, and the ids of the newest ``most`` of those."""
    if not agent_ids:
        return []
    rows: list[asyncpg.Record] = await conn.fetch(Q["tickets_held_in_group"], tenant_id,
                                                  group_id, list(agent_ids), most)
    return rows


__all__ = [
    "group_named",
    "insert_group",
    "list_groups",
    "load_group",
    "not_active_agents",
    "tickets_held",
    "unknown_groups",
    "update_group",
]
