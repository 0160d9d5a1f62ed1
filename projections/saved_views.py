"""The inline read model of saved view streams: ``saved_views``, one row per view.

Written by ``handlers.saved_views`` next to the events; every read names the reading
agent, and another agent's personal view is not found, as if it did not exist.
"""

from __future__ import annotations

from pathlib import Path

from domain.ids import TenantId
from domain.saved_view import SavedView
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.owned import OwnedRows

Q = load_queries(Path(__file__).with_name("saved_views.sql"))


_ROWS = OwnedRows(Q, "view", SavedView)

load_view = _ROWS.load
view_for_update = _ROWS.for_update
delete_view = _ROWS.delete
list_views = _ROWS.page


async def update_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["update_view"], tenant_id, view.id, view.name, view.filters, view.version,
                view.updated_at)


async def insert_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["insert_view"], tenant_id, view.id, view.owner_id, view.name, view.filters,
                view.version, view.created_at, view.updated_at)


__all__ = ["delete_view", "insert_view", "list_views", "load_view", "update_view",
           "view_for_update"]
