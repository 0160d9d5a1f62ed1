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

VIEWS = OwnedRows(Q, "view", SavedView)
list_views = VIEWS.page


async def update_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["update_view"], tenant_id, view.id, view.name, view.filters, view.version,
                view.updated_at)


async def insert_view(write: Write, tenant_id: TenantId, view: SavedView) -> None:
    await write(Q["insert_view"], tenant_id, view.id, view.owner_id, view.name, view.filters,
                view.version, view.created_at, view.updated_at)


__all__ = ["VIEWS", "insert_view", "list_views", "update_view"]
