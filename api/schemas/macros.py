"""Request and response bodies of the macro routes (``/v1/macros`` and applying one)."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody, SharedIn
from api.schemas.rules import ActionIn, ActionOut
from domain.macro import MACRO_NAME_MAX, Macro
from domain.rule_parts import ACTIONS_MAX
from domain.validation import BODY_MAX
from domain.values import Visibility

_IN = ConfigDict(extra="forbid")


class MacroIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=MACRO_NAME_MAX)
    shared: SharedIn = False
    text: str | None = Field(default=None, max_length=BODY_MAX,
                             description="The reply or note, with placeholders.")
    visibility: Visibility = Field(default=Visibility.PUBLIC,
                                   description="public: a reply; internal: a note.")
    actions: list[ActionIn] = Field(default_factory=list, max_length=ACTIONS_MAX)


class MacroPatch(PatchBody):
    """Only the parts given change; ``actions`` replaces the list. Who owns the macro
    does not change; a macro keeps a text, actions or both."""

    name: str | None = Field(default=None, min_length=1, max_length=MACRO_NAME_MAX)
    text: str | None = Field(default=None, max_length=BODY_MAX)
    visibility: Visibility | None = None
    actions: list[ActionIn] | None = Field(default=None, max_length=ACTIONS_MAX)


class MacroOut(BaseModel):
    id: UUID
    name: str
    owner_id: UUID | None
    text: str | None
    visibility: Visibility
    actions: list[ActionOut]
    canned: bool = Field(description="Text only: offered as a canned reply.")
    version: int
    created_at: datetime
    updated_at: datetime


class MacroPage(BaseModel):
    data: list[MacroOut]
    next_cursor: str | None


class AppliedOut(BaseModel):
    preview: bool = Field(description="true: nothing was applied; this is what would be.")
    ticket: dict[str, Any] = Field(description="The ticket after the macro (a Ticket).")
    body: str | None = Field(description="The text posted, rendered.")
    message_id: UUID | None
    events: int = Field(description="How many events the macro appends.")


def macro_document(macro: Macro) -> dict[str, Any]:
    return macro.model_dump(mode="json") | {"canned": macro.canned}
