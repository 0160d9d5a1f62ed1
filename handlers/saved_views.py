"""Saved views: creating them and finding the one a reader may see.

Whether the filters are the ticket list's is asked of the list itself, by the caller,
before the view is created (``api.http.ticket_list``): here the view's shape is the
aggregate's (``domain.saved_view``) and its row and event are written together.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from domain.errors import ValidationFailed
from domain.mapper import to_stored
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
from eventstore.types import NewEvent
from handlers.errors import Invalid, Missing
from handlers.owned import Caller, changed
from projections import saved_views as read_model


async def create_view(uow: UnitOfWork, command: CreateView) -> SavedView:
    try:
        [event] = decide_view(command, None)
    except ValidationFailed as exc:
        raise Invalid("invalid_view", f"{exc.field}: {exc.message}", field=exc.field,
                      reason=exc.message) from exc
    view = evolve_view(None, event)
    await read_model.insert_view(uow.write, uow.tenant_id, view)
    type_, version, data = to_stored(event)
    await uow.append(view.id, 0, [NewEvent(type_, data, version)])
    return view


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

    async def write(uow: UnitOfWork, before: SavedView, after: SavedView) -> None:
        await read_model.delete_view(uow.write, uow.tenant_id, view_id)

    return await changed(uow, "view", view_id, caller, expected_version, load=_locked,
                         decide=lambda state: decide_delete_view(state, at),
                         evolve=evolve_view, write=write)


async def visible_view(uow: UnitOfWork, view_id: UUID, reader: UUID | None) -> SavedView:
    view = await read_model.load_view(uow.conn, uow.tenant_id, view_id, reader)
    if view is None:
        raise Missing("not_found", f"no view {view_id}")
    return view


__all__ = ["change_view", "create_view", "delete_view", "visible_view"]
