"""The rule aggregate and its parts: given these events, when this command, then these
events; and what conditions say of a ticket after an event."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from domain.errors import CorruptStream, ValidationFailed
from domain.events import GroupRenamed
from domain.rule import ChangeRule, CreateRule, decide_rule, evolve_rule, fold_rule
from domain.rule_parts import Action, Condition, Facts, event_types, failing
from domain.templates import check_template, render
from domain.values import Priority, Source, TicketState
from domain.workflow_events import RuleChanged, RuleCreated

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
RULE = uuid.UUID(int=1)
HIGH = (Action(type="set_priority", value="high"),)


def created(**kw: object) -> RuleCreated:
    base: dict[str, object] = {"rule_id": RULE, "name": "R", "position": 0, "active": True,
                               "conditions": (), "actions": HIGH, "at": AT}
    return RuleCreated.model_validate(base | kw)


def test_create_normalises_and_a_change_to_nothing_records_nothing() -> None:
    [event] = decide_rule(CreateRule(rule_id=RULE, name="  R ", conditions=(
        Condition(field="tags", op="contains", value="VIP"),), actions=HIGH, at=AT), None)
    assert isinstance(event, RuleCreated) and event.name == "R"
    assert event.conditions[0].value == "vip"
    state = fold_rule([event])
    assert state is not None
    assert decide_rule(ChangeRule(name="R", actions=HIGH, at=AT), state) == []
    [change] = decide_rule(ChangeRule(active=False, at=AT), state)
    assert change == RuleChanged(active=False, at=AT)
    after = evolve_rule(state, change)
    assert not after.active and after.version == 2 and after.actions == HIGH


@pytest.mark.parametrize(("condition", "where"), [
    (Condition(field="colour", op="is", value="red"), "conditions.0.field"),
    (Condition(field="priority", op="contains", value="high"), "conditions.0.op"),
    (Condition(field="priority", op="is", value="huge"), "conditions.0.value"),
    (Condition(field="event", op="is", value="GroupRenamed"), "conditions.0.value"),
    (Condition(field="business_hours", op="is", value="yes"), "conditions.0.value"),
    (Condition(field="group_id", op="is_set", value="x"), "conditions.0.value"),
])
def test_a_bad_condition_is_refused_naming_its_part(condition: Condition, where: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        decide_rule(CreateRule(rule_id=RULE, name="R", conditions=(condition,), actions=HIGH,
                               at=AT), None)
    assert caught.value.field == where


MAIL = {"subject": "Re: {{ subject }}", "body": "Hello {{ name }}"}


@pytest.mark.parametrize(("action", "where"), [
    (Action(type="explode"), "actions.0.type"),
    (Action(type="send_mail", value={"to": "requester"}), "actions.0.value.template"),
    (Action(type="send_mail", value={"to": "someone", "template": MAIL}), "actions.0.value.to"),
    (Action(type="send_mail", value={"to": "group", "template": MAIL}),
     "actions.0.value.group_id"),
    (Action(type="send_mail", value={"to": "requester", "template": {
        "subject": "Re: {{ subject }}", "body": "Hi {{ shoe_size }}"}}),
     "actions.0.value.template.body"),
    (Action(type="send_mail", value={"to": "requester", "template": {
        "subject": "{% if %}", "body": "x"}}), "actions.0.value.template.subject"),
    (Action(type="set_state", value="closed"), "actions.0.value"),
    (Action(type="add_note", value="Hi {{ticket.colour}}"), "actions.0.value"),
    (Action(type="assign", value="not-an-id"), "actions.0.value"),
])
def test_an_action_that_cannot_work_is_refused(action: Action, where: str) -> None:
    with pytest.raises(ValidationFailed) as caught:
        decide_rule(CreateRule(rule_id=RULE, name="R", actions=(action,), at=AT), None)
    assert caught.value.field == where


def test_a_rule_stream_starts_with_its_creation_and_holds_nothing_else() -> None:
    with pytest.raises(CorruptStream):
        evolve_rule(None, RuleChanged(active=False, at=AT))
    with pytest.raises(CorruptStream):
        evolve_rule(evolve_rule(None, created()), GroupRenamed(name="x", at=AT))


def facts(**kw: object) -> Facts:
    base: dict[str, object] = dict(
        event_type="TicketOpened", state=TicketState.OPEN, priority=Priority.NORMAL,
        channel=Source.EMAIL, group_id=None, assignee_id=None, organization_id=None,
        tags=frozenset({"vip"}), fields={"plan": "gold"}, public_customer_reply=False,
        business_hours=True)
    return Facts(**(base | kw))  # type: ignore[arg-type]


def test_conditions_say_which_of_them_fail() -> None:
    conditions = (Condition(field="event", op="in", value=["TicketOpened", "MessageAdded"]),
                  Condition(field="priority", op="at_least", value="high"),
                  Condition(field="tags", op="contains", value="vip"),
                  Condition(field="fields.plan", op="is", value="gold"),
                  Condition(field="assignee_id", op="not_set"))
    assert failing(conditions, facts(priority=Priority.URGENT)) == []
    assert failing(conditions, facts()) == ["conditions.1: priority at_least high does not hold"]
    # An opening's condition names a split-off's opening too.
    assert event_types(conditions) == {"TicketOpened", "TicketSplitFrom", "MessageAdded"}
    assert event_types(conditions[1:]) is None


def test_a_split_off_opening_is_an_opening_unless_a_rule_tells_them_apart() -> None:
    opened = Condition(field="event", op="is", value="TicketOpened")
    split = Condition(field="event", op="is", value="TicketSplitFrom")
    not_split = Condition(field="event", op="is_not", value="TicketSplitFrom")
    split_off, ordinary = facts(event_type="TicketSplitFrom"), facts()
    assert failing((opened,), split_off) == [] and failing((opened,), ordinary) == []
    assert failing((split,), split_off) == []
    assert failing((split,), ordinary) == [
        "conditions.0: event is TicketSplitFrom does not hold"]
    assert failing((opened, not_split), ordinary) == []
    assert failing((opened, not_split), split_off) == [
        "conditions.1: event is_not TicketSplitFrom does not hold"]
    # is_not is the opposite of is: not an opening is neither kind of opening.
    not_opened = Condition(field="event", op="is_not", value="TicketOpened")
    assert failing((not_opened,), split_off) and failing((not_opened,), ordinary)
    assert failing((not_opened,), facts(event_type="MessageAdded")) == []
    assert failing((not_split,), facts(event_type="")) != []  # the dry run: no event
    assert event_types((opened, not_split)) == {"TicketOpened"}
    assert event_types((split,)) == {"TicketSplitFrom"}
    assert event_types((not_split,)) is None
    # The channel a split-off ticket has is its source's: the requester's channel.
    email = Condition(field="channel", op="is", value="email")
    assert failing((opened, email), split_off) == []


def test_templates_know_their_placeholders() -> None:
    assert check_template("Hi {{requester.name}}, {{fields.plan}}", "t") == {"plan"}
    with pytest.raises(ValidationFailed):
        check_template("{{ nope }}", "t")
    assert render("Hi {{ requester.name }}!{{agent.name}}", {"requester.name": "Ann"}) == "Hi Ann!"
