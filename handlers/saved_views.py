"""Saved views: creating them and finding the one a reader may see.

Whether the filters are the ticket list's is asked of the list itself, by the caller,
before the view is created (``api.http.ticket_list``): here the view's shape is the
aggregate's (``domain.saved_view``) and its row and event are written together.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.saved_view import (
    ChangeView,
    CreateView,
    SavedView,
    decide_change_view,
    decide_delete_view,
    decide_view,
    evolve_view,
)
from eventstore.store import UnitOfWork
from handlers.owned import Caller, changed, created, deleted, found
from projections import saved_views as read_model


async def create_view(uow: UnitOfWork, command: CreateView) -> SavedView:
    async def write(uow: UnitOfWork, view: SavedView) -> None:
        await read_model.insert_view(uow.write, uow.tenant_id, view)

    return await created(uow, "view", decide=lambda: decide_view(command, None),
                         evolve=evolve_view, write=write)


async def _locked(uow: UnitOfWork, view_id: UUID) -> SavedView | None:
    return await read_model.view_for_update(uow.conn, uow.tenant_id, view_id)


async def change_view(uow: UnitOfWork, view_id: UUID, command: ChangeView, caller: Caller, *,
                      expected_version: int | None = None) -> SavedView:
    """Change a view's name or filters (``handlers.owned``); the caller has had the
    ticket list check the filters."""

    async def write(uow: UnitOfWork, before: SavedView, after: SavedView) -> None:
        await read_model.update_view(uow.write, uow.tenant_id, after)

    return await changed(uow, "view", view_id, caller, expected_version, load=_locked,
                         decide=lambda state: decide_change_view(command, state),
                         evolve=evolve_view, write=write)


async def delete_view(uow: UnitOfWork, view_id: UUID, caller: Caller, at: datetime, *,
                      expected_version: int | None = None) -> SavedView:
    """Delete a view: its row goes, its stream ends with ``ViewDeleted``."""
    return await deleted(uow, "view", view_id, caller, expected_version, load=_locked,
                         decide=lambda state: decide_delete_view(state, at),
                         evolve=evolve_view, remove=read_model.delete_view)


async def visible_view(uow: UnitOfWork, view_id: UUID, reader: UUID | None) -> SavedView:
    return found("view", view_id,
                 await read_model.load_view(uow.conn, uow.tenant_id, view_id, reader))


__all__ = ["change_view", "create_view", "delete_view", "visible_view"]
