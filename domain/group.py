"""The group aggregate: a team of agents that tickets can be routed to.

A group has its own stream (the stream id is the group id): ``GroupCreated``, then
``GroupRenamed`` and ``GroupMembersChanged``. Like the ticket, ``decide_group`` is
pure and ``evolve_group`` only applies facts. What the aggregate cannot see (that a
name is free in the tenant, that every member is an active agent) the caller checks
against its read models.
"""

from __future__ import annotations

from collections.abc import Iterable

from domain.aggregate import BaseCommand, NamedState
from domain.errors import AlreadyExists, NotFound, ValidationFailed
from domain.events import Event, GroupCreated, GroupMembersChanged, GroupRenamed, NewGroup
from domain.evolution import StreamSteps
from domain.ids import AgentId, GroupId
from domain.validation import check_text
from domain.values import UtcDatetime

GROUP_NAME_MAX = 100
GROUP_MEMBERS_MAX = 500


class Group(NamedState):
    """A group as of ``version`` events; ``members`` sorted."""

    id: GroupId
    members: tuple[AgentId, ...] = ()
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateGroup(NewGroup, BaseCommand):
    """Create a group with its name and first members."""


class ChangeGroup(BaseCommand):
    """Rename and/or replace the membership; None leaves that part as it is."""

    name: str | None = None
    members: tuple[AgentId, ...] | None = None


GroupCommand = CreateGroup | ChangeGroup


def check_group_name(name: str) -> str:
    """A group's name, trimmed: 1 to ``GROUP_NAME_MAX`` characters."""
    return check_text(name.strip(), "name", GROUP_NAME_MAX)


def _members(members: Iterable[AgentId]) -> tuple[AgentId, ...]:
    out = tuple(sorted(set(members)))
    if len(out) > GROUP_MEMBERS_MAX:
        raise ValidationFailed(f"a group has at most {GROUP_MEMBERS_MAX} members",
                               field="members")
    return out


def decide_group(command: GroupCommand, state: Group | None) -> list[Event]:
    """The events a command produces on a group (None: the stream is empty). A change
    to nothing returns ``[]``."""
    if isinstance(command, CreateGroup):
        if state is not None:
            raise AlreadyExists("the group already exists")
        return [GroupCreated(group_id=command.group_id, name=check_group_name(command.name),
                             members=_members(command.members), at=command.at)]
    if state is None:
        raise NotFound("the group does not exist")
    events: list[Event] = []
    if command.name is not None:
        name = check_group_name(command.name)
        if name != state.name:
            events.append(GroupRenamed(name=name, at=command.at))
    if command.members is not None:
        members = _members(command.members)
        added = tuple(sorted(set(members) - set(state.members)))
        removed = tuple(sorted(set(state.members) - set(members)))
        if added or removed:
            events.append(GroupMembersChanged(added=added, removed=removed, members=members,
                                              at=command.at))
    return events


_STEPS = StreamSteps("a group stream", Group, GroupCreated, "group_id",
                     (GroupRenamed, GroupMembersChanged))
evolve_group = _STEPS.evolve
fold_group = _STEPS.fold


__all__ = [
    "GROUP_MEMBERS_MAX",
    "GROUP_NAME_MAX",
    "ChangeGroup",
    "CreateGroup",
    "Group",
    "GroupCommand",
    "check_group_name",
    "decide_group",
    "evolve_group",
    "fold_group",
]
