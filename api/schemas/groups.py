"""Request and response bodies of the group routes (``/v1/groups`` and the group
audit endpoints). Requests forbid unknown fields (422)."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody
from domain.group import GROUP_MEMBERS_MAX, GROUP_NAME_MAX
from handlers.groups import MOST_TICKET_IDS

_IN = ConfigDict(extra="forbid")


class GroupIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=GROUP_NAME_MAX,
                      description="Unique in the tenant, case aside.")
    members: list[UUID] = Field(default_factory=list, max_length=GROUP_MEMBERS_MAX,
                                description="Active agents of the tenant.")


class GroupPatch(PatchBody):
    """Only the fields given change; ``members`` replaces the whole membership."""

    name: str | None = Field(default=None, min_length=1, max_length=GROUP_NAME_MAX)
    members: list[UUID] | None = Field(default=None, max_length=GROUP_MEMBERS_MAX)


class GroupOut(BaseModel):
    id: UUID
    name: str
    members: list[UUID]
    version: int
    created_at: datetime
    updated_at: datetime


class StillAssignedOut(BaseModel):
    """An agent who left the group and still holds some of its tickets."""

    agent_id: UUID
    tickets: int = Field(description="How many of the group's tickets (closed ones aside) "
                                     "are still assigned to the agent.")
    ticket_ids: list[UUID] = Field(description="The newest of them, at most "
                                               f"{MOST_TICKET_IDS}.")


class GroupChangedOut(GroupOut):
    still_assigned: list[StillAssignedOut] = Field(
        description="Agents this change removed who still hold tickets of the group: the "
                    "tickets stay assigned to them until someone reassigns them.")


class GroupPage(BaseModel):
    data: list[GroupOut]
    next_cursor: str | None
