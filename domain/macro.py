"""The macro aggregate: a named set of ticket actions plus a reply or note text, shared
by the tenant or personal to one agent; a canned reply is a macro with text only.

A macro has its own stream (the stream id is the macro id): ``MacroCreated``, then
``MacroChanged``, and ``MacroDeleted`` at its end (the stream keeps what it was).
Its actions are a rule's ticket actions (``domain.rule_parts``:
state, priority, group, assignee, tags, fields); its text takes the placeholders of
``domain.templates``. Applying it is the ticket's business (``handlers.macros``).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from domain.aggregate import BaseCommand, ChangedParts, NamedState
from domain.errors import AlreadyExists, ValidationFailed
from domain.events import Event
from domain.evolution import StreamSteps
from domain.ids import AgentId
from domain.rule_parts import ACTIONS_MAX, Action, check_action
from domain.templates import check_template
from domain.validation import check_name
from domain.values import UtcDatetime, Visibility
from domain.workflow_events import MacroChanged, MacroChanges, MacroCreated, MacroDeleted, NewMacro

MACRO_NAME_MAX = 100
MACRO_ACTIONS = frozenset({"set_state", "set_priority", "set_group", "assign", "add_tags",
                           "remove_tags", "set_fields"})
"""What a macro may do to a ticket besides its text (a rule's note and webhook are its
text and nothing)."""


class Macro(NamedState):
    owner_id: AgentId | None
    """The agent whose personal macro it is; None: shared by the tenant."""
    text: str | None
    visibility: Visibility
    actions: tuple[Action, ...]
    created_at: UtcDatetime
    updated_at: UtcDatetime

    @property
    def canned(self) -> bool:
        """A canned reply: text and nothing else."""
        return not self.actions


class CreateMacro(NewMacro, BaseCommand):
    """Create a macro: shared, with a public text and no actions unless told."""

    owner_id: AgentId | None = None
    text: str | None = None
    visibility: Visibility = Visibility.PUBLIC
    actions: tuple[Action, ...] = ()


class ChangeMacro(MacroChanges, BaseCommand):
    """Change the parts given (None: as it is); ``actions`` replaces the list."""


def check_macro_name(name: str) -> str:
    return check_name(name, MACRO_NAME_MAX)


def check_macro_actions(actions: Sequence[Action]) -> tuple[Action, ...]:
    if len(actions) > ACTIONS_MAX:
        raise ValidationFailed(f"a macro has at most {ACTIONS_MAX} actions", field="actions")
    out = []
    for i, a in enumerate(actions):
        if a.type not in MACRO_ACTIONS:
            raise ValidationFailed(f"a macro does not {a.type!r}; give its text instead",
                                   field=f"actions.{i}.type")
        out.append(check_action(a, f"actions.{i}"))
    return tuple(out)


def _checked_text(text: str) -> str:
    check_template(text, "text")
    return text


def decide_macro(command: CreateMacro, state: Macro | None) -> list[Event]:
    """The events that create a macro: text or actions, or both."""
    if state is not None:
        raise AlreadyExists("the macro already exists")
    if command.text is not None:
        _checked_text(command.text)
    actions = check_macro_actions(command.actions)
    if command.text is None and not actions:
        raise ValidationFailed("a macro has a text, actions or both", field="text")
    return [MacroCreated(macro_id=command.macro_id, name=check_macro_name(command.name),
                         owner_id=command.owner_id, text=command.text,
                         visibility=command.visibility, actions=actions, at=command.at)]


def decide_change_macro(command: ChangeMacro, state: Macro) -> list[Event]:
    """The ``MacroChanged`` of the parts that differ (none: no event); a macro keeps a
    text, actions or both."""
    changes = ChangedParts(state)
    changes.given("name", command.name, check_macro_name)
    changes.given("text", command.text, _checked_text)
    changes.given("visibility", command.visibility)
    changes.given("actions", command.actions, check_macro_actions)
    if state.text is None and command.actions is not None and not command.actions:
        raise ValidationFailed("a macro has a text, actions or both", field="actions")
    return changes.events(MacroChanged, command.at)


def decide_delete_macro(state: Macro, at: UtcDatetime) -> list[Event]:
    return [MacroDeleted(at=at)]


def visible_to(macro: Macro, agent_id: UUID | None) -> bool:
    """A shared macro is every agent's; a personal one its owner's only."""
    return macro.owner_id is None or macro.owner_id == agent_id


_STEPS = StreamSteps("a macro stream", Macro, MacroCreated, "macro_id",
                     (MacroChanged, MacroDeleted))
evolve_macro = _STEPS.evolve
fold_macro = _STEPS.fold


__all__ = ["MACRO_ACTIONS", "MACRO_NAME_MAX", "ChangeMacro", "CreateMacro", "Macro",
           "check_macro_actions", "check_macro_name", "decide_change_macro",
           "decide_delete_macro", "decide_macro", "evolve_macro", "fold_macro", "visible_to"]
