"""Saved views: creating them and finding the one a reader may see.

Whether the filters are the ticket list's is asked of the list itself, by the caller,
before the view is created (``api.http.ticket_list``): here the view's shape is the
aggregate's (``domain.saved_view``) and its row and event are written together.
"""

from __future__ import annotations

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
from handlers.owned import Caller, OwnedRecords
from projections import saved_views as read_model

_VIEWS = OwnedRecords(read_model.VIEWS, evolve_view, decide_delete_view)

delete_view = _VIEWS.delete
"""Delete a view: its row goes, its stream ends with ``ViewDeleted``."""
visible_view = _VIEWS.visible


async def create_view(uow: UnitOfWork, command: CreateView) -> SavedView:
    async def write(uow: UnitOfWork, view: SavedView) -> None:
        await read_model.insert_view(uow.write, uow.tenant_id, view)

    return await _VIEWS.create(uow, decide=lambda: decide_view(command, None), write=write)


async def change_view(uow: UnitOfWork, view_id: UUID, command: ChangeView, caller: Caller, *,
                      expected_version: int | None = None) -> SavedView:
    """Change a view's name or filters (``handlers.owned``); the caller has had the
    ticket list check the filters."""

    async def write(uow: UnitOfWork, before: SavedView, after: SavedView) -> None:
        await read_model.update_view(uow.write, uow.tenant_id, after)

    return await _VIEWS.change(uow, view_id, caller, expected_version, write=write,
                               decide=lambda state: decide_change_view(command, state))


__all__ = ["change_view", "create_view", "delete_view", "visible_view"]
