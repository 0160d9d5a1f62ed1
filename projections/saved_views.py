"""The inline read model of saved view streams: ``saved_views``, one row per view.

Written by ``handlers.saved_views`` next to the events; every read names the reading
agent, and another agent's personal view is not found, as if it did not exist.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from domain.saved_view import SavedView
from eventstore.sqlfile import load_queries
from eventstore.types import Write

Q = load_queries(Path(__file__).with_name("saved_views.sql"))


def _view(row: asyncpg.Record) -> SavedView:
    return SavedView.model_validate(dict(row))


async def load_view(conn: asyncpg.Connection, tenant_id: TenantId, view_id: UUID,
                    reader: UUID | None) -> SavedView | None:
    row = await conn.fetchrow(Q["get_view"], tenant_id, view_id, reader)
    return None if row is None else _view(row)


async def view_for_update(conn: asyncpg.Connection, tenant_id: TenantId, view_id: UUID
                          ) -> SavedView | None:
    """The view whoever owns it, its row locked until commit (a change's state)."""
    row = await conn.fetchrow(Q["view_for_update"], tenant_id, view_id)
    return None if row is None else _view(row)


async def update_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["update_view"], tenant_id, view.id, view.name, view.filters, view.version,
                view.updated_at)


async def delete_view(write: Write, tenant_id: TenantId, view_id: UUID) -> None:
    await write(Q["delete_view"], tenant_id, view_id)


async def insert_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["insert_view"], tenant_id, view.id, view.owner_id, view.name, view.filters,
                view.version, view.created_at, view.updated_at)


async def list_views(conn: asyncpg.Connection, tenant_id: TenantId, reader: UUID | None,
                     after: tuple[datetime, UUID] | None, limit: int) -> list[SavedView]:
    """The shared views and the reader's own, in ``(created_at, id)`` order."""
    at, last = after if after is not None else (None, None)
    return [_view(r) for r in await conn.fetch(Q["list_views"], tenant_id, reader, at, last,
                                               limit)]


__all__ = ["delete_view", "insert_view", "list_views", "load_view", "update_view",
           "view_for_update"]
