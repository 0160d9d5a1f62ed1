"""The rule aggregate: a tenant's automation that acts on tickets after events.

A rule has its own stream (the stream id is the rule id): ``RuleCreated``, then
``RuleChanged`` with the parts that changed. Rules are ordered per tenant by
``position`` (then by creation) and run in that order; an inactive rule is kept and
never fires. The conditions and actions and their own rules are in
``domain.rule_parts``; what the aggregate cannot see (a ticket field's type, that an
agent is active and in the group the rule routes to, how many rules the tenant has)
the handler checks (``handlers.rules``).
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.aggregate import BaseCommand, ChangedParts, NamedState
from domain.errors import AlreadyExists, NotFound, ValidationFailed
from domain.events import Event
from domain.evolution import StreamSteps
from domain.rule_parts import (
    Action,
    Condition,
    TimeTrigger,
    check_actions,
    check_conditions,
    check_time_rule,
)
from domain.validation import POSITION_MAX, check_name, check_position
from domain.values import UtcDatetime
from domain.workflow_events import NewRule, RuleChanged, RuleChanges, RuleCreated

RULE_NAME_MAX = 100
RULES_MAX = 500
"""How many rules (active or not) a tenant may have."""
CHAIN_DEPTH_MAX = 5
"""How many rules may act in a row, each on the events of the one before; the next
one does not fire, and ``RuleChainStopped`` says so."""


class Rule(NamedState):
    """A rule as of ``version`` events."""

    position: int
    active: bool
    conditions: tuple[Condition, ...]
    actions: tuple[Action, ...]
    time: TimeTrigger | None = None
    """A time rule's trigger (None: the rule fires on events); fixed at creation."""
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateRule(NewRule, BaseCommand):
    """Create a rule: first in order, active and on every ticket unless told."""

    position: int = 0
    active: bool = True
    conditions: tuple[Condition, ...] = ()


class ChangeRule(RuleChanges, BaseCommand):
    """Change some parts of a rule; None leaves that part as it is."""


RuleCommand = CreateRule | ChangeRule


def check_rule_name(name: str) -> str:
    return check_name(name, RULE_NAME_MAX)


def decide_rule(command: RuleCommand, state: Rule | None) -> list[Event]:
    """The events a command produces on a rule (None: the stream is empty); a change
    to nothing returns ``[]``."""
    if isinstance(command, CreateRule):
        if state is not None:
            raise AlreadyExists("the rule already exists")
        conditions = check_conditions(command.conditions)
        actions = check_actions(command.actions)
        if command.time is not None:
            check_time_rule(command.time, conditions, actions)
        return [RuleCreated(rule_id=command.rule_id, name=check_rule_name(command.name),
                            position=check_position(command.position), active=command.active,
                            conditions=conditions, actions=actions, time=command.time,
                            at=command.at)]
    if state is None:
        raise NotFound("the rule does not exist")
    changes = ChangedParts(state)
    changes.given("name", command.name, check_rule_name)
    changes.given("position", command.position, check_position)
    changes.given("active", command.active)
    changes.given("conditions", command.conditions, check_conditions)
    changes.given("actions", command.actions, check_actions)
    if command.time is not None and state.time is None:
        raise ValidationFailed("a rule on events stays one", field="time")
    changes.given("time", command.time)
    time = command.time or state.time
    if time is not None:
        check_time_rule(time, command.conditions or state.conditions,
                        command.actions or state.actions)
    return changes.events(RuleChanged, command.at)


def in_order(rules: Sequence[Rule]) -> list[Rule]:
    """The order rules run in: by position, then oldest first."""
    return sorted(rules, key=lambda r: (r.position, r.created_at, r.id))


_STEPS = StreamSteps("a rule stream", Rule, RuleCreated, "rule_id", (RuleChanged,))
evolve_rule = _STEPS.evolve
fold_rule = _STEPS.fold


__all__ = [
    "CHAIN_DEPTH_MAX",
    "POSITION_MAX",
    "RULES_MAX",
    "RULE_NAME_MAX",
    "ChangeRule",
    "CreateRule",
    "Rule",
    "RuleCommand",
    "check_rule_name",
    "decide_rule",
    "evolve_rule",
    "fold_rule",
    "in_order",
]
