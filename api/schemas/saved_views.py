"""Request and response bodies of the saved view routes (``/v1/views``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody, SharedIn
from domain.saved_view import FILTERS_MAX, VIEW_NAME_MAX, SavedView

_IN = ConfigDict(extra="forbid")


class ViewIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=VIEW_NAME_MAX)
    shared: SharedIn = False
    filters: dict[str, str | list[str]] = Field(
        default_factory=dict, max_length=FILTERS_MAX,
        description="The ticket list's query parameters (GET /v1/tickets), as it takes "
                    "them: a list repeats the parameter. Checked by the list itself.")


class ViewPatch(PatchBody):
    """Only the parts given change; ``filters`` replaces them all (checked by the
    ticket list as a new view's are). Who owns the view does not change."""

    name: str | None = Field(default=None, min_length=1, max_length=VIEW_NAME_MAX)
    filters: dict[str, str | list[str]] | None = Field(default=None, max_length=FILTERS_MAX)


class ViewOut(BaseModel):
    id: UUID
    name: str
    owner_id: UUID | None
    filters: dict[str, str | list[str]]
    version: int
    created_at: datetime
    updated_at: datetime


class ViewPage(BaseModel):
    data: list[ViewOut]
    next_cursor: str | None


def view_document(view: SavedView) -> dict[str, Any]:
    return view.model_dump(mode="json")
