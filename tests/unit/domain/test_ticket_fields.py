"""Given events, when a command, then events: ticket field values and definitions."""

from __future__ import annotations

from typing import Any

import pytest

from domain.errors import AlreadyExists, NotFound, TicketClosed, ValidationFailed
from domain.events import TicketFieldDefined, TicketFieldUpdated
from domain.field_definitions import DefineField, UpdateField, decide_field, fold_field
from domain.fields import FieldCatalog, FieldDefinition, FieldOption, FieldType, RequiredOn
from domain.ticket import fold
from domain.ticket.commands import ChangeFields, ChangeState
from domain.ticket.decide import decide, decide_follow_up
from domain.ticket.events import FieldValuesChanged, TicketOpened
from domain.values import TicketState
from tests.unit.domain.support import AGENT, CUSTOMER, POLICY, SYSTEM, T0, at, mid, open_cmd, reply

PLAN_OPTIONS = (FieldOption(value="free", title="Free"), FieldOption(value="pro", title="Pro"))


def field(key: str, type_: FieldType, **kw: Any) -> FieldDefinition:
    """A definition as its stream folds it, decided from ``DefineField``."""
    events = decide_field(DefineField(key=key, title=key.title(), type=type_, at=T0, **kw), None)
    state = fold_field(events)
    assert state is not None
    return state


def catalog(*fields: FieldDefinition) -> FieldCatalog:
    return {f.key: f for f in fields}


PLAN = field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS)
AREAS = field("areas", FieldType.MULTISELECT, options=(
    FieldOption(value="billing", title="Billing"), FieldOption(value="login", title="Login"),
    FieldOption(value="api", title="API")))
ORDER = field("order_no", FieldType.NUMBER)
URGENT = field("vip", FieldType.CHECKBOX, intake=True)
DUE = field("due", FieldType.DATE)
NOTE = field("note", FieldType.TEXT)
ALL = catalog(PLAN, AREAS, ORDER, URGENT, DUE, NOTE)


def given(*commands: Any, fields: FieldCatalog = ALL) -> list[Any]:
    events: list[Any] = []
    for command in commands:
        events += decide(command, fold(events), POLICY, fields)
    return events


def when(history: list[Any], command: Any, fields: FieldCatalog = ALL) -> list[Any]:
    return decide(command, fold(history), POLICY, fields)


def state(events: list[Any]) -> Any:
    ticket = fold(events)
    assert ticket is not None
    return ticket


def set_(values: dict[str, Any], actor: Any = AGENT, hours: float = 1) -> ChangeFields:
    return ChangeFields(values=values, actor=actor, at=at(hours))


def solve(actor: Any = AGENT, hours: float = 2) -> ChangeState:
    return ChangeState(to=TicketState.SOLVED, actor=actor, at=at(hours))


# --- values on opening ------------------------------------------------------------------


def test_opening_records_checked_values_by_key() -> None:
    [opened] = when([], open_cmd(actor=AGENT, fields={
        "plan": "pro", "areas": ["login", "billing", "login"], "order_no": 42, "vip": True,
        "due": "2026-07-01", "note": "call back"}))
    assert opened.fields == {"areas": ("billing", "login"), "due": "2026-07-01",
                             "note": "call back", "order_no": 42, "plan": "pro", "vip": True}
    assert state([opened]).fields == opened.fields


def test_null_on_opening_means_no_value() -> None:
    [opened] = when([], open_cmd(actor=AGENT, fields={"plan": None, "areas": []}))
    assert opened.fields == {}


@pytest.mark.parametrize(("key", "value"), [
    ("plan", "gold"), ("plan", 1), ("plan", ["pro"]),
    ("areas", "login"), ("areas", ["login", "nope"]), ("areas", [1]),
    ("order_no", "42"), ("order_no", 4.5), ("order_no", True), ("order_no", 2**53),
    ("vip", "yes"), ("vip", 1),
    ("due", "2026-02-30"), ("due", "01/07/2026"), ("due", 20260701), ("due", "0000-01-01"),
    ("note", ""), ("note", "   "), ("note", "x" * 1001), ("note", 5),
])
def test_a_value_that_does_not_fit_its_type_is_refused_naming_the_field(
        key: Any, value: Any) -> None:
    with pytest.raises(ValidationFailed) as exc:
        when([], open_cmd(actor=AGENT, fields={key: value}))
    assert exc.value.field == f"fields.{key}"


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(ValidationFailed) as exc:
        when([], open_cmd(actor=AGENT, fields={"colour": "red"}))
    assert exc.value.field == "fields.colour"


def test_an_inactive_field_is_refused() -> None:
    off = field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS, active=False)
    with pytest.raises(ValidationFailed, match="inactive"):
        when([], open_cmd(actor=AGENT, fields={"plan": "pro"}), fields=catalog(off))


def test_intake_sets_only_fields_open_to_intake() -> None:
    [opened] = when([], open_cmd(actor=CUSTOMER, fields={"vip": True}))
    assert opened.fields == {"vip": True}
    with pytest.raises(ValidationFailed, match="agents only") as exc:
        when([], open_cmd(actor=CUSTOMER, fields={"plan": "pro"}))
    assert exc.value.field == "fields.plan"


def test_a_customer_may_not_set_a_field_shown_to_them_read_only() -> None:
    shown = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS, intake=True,
                          customer_read_only=True, required_on=RequiredOn.OPEN))
    with pytest.raises(ValidationFailed, match="read-only") as exc:
        when([], open_cmd(actor=CUSTOMER, fields={"plan": "pro"}), fields=shown)
    assert exc.value.field == "fields.plan"
    # Required on open, but not of a customer, who cannot give it; agents can.
    [opened] = when([], open_cmd(actor=CUSTOMER), fields=shown)
    assert opened.fields == {}
    history = given(open_cmd(actor=CUSTOMER), fields=shown)
    with pytest.raises(ValidationFailed) as exc:
        when(history, set_({"plan": "pro"}, actor=CUSTOMER), fields=shown)
    assert exc.value.field == "fields.plan"
    [changed] = when(history, set_({"plan": "pro"}), fields=shown)
    assert isinstance(changed, FieldValuesChanged)


def test_read_only_for_customers_needs_the_field_open_to_them() -> None:
    with pytest.raises(ValidationFailed) as exc:
        field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS, customer_read_only=True)
    assert exc.value.field == "customer_read_only"
    shown = field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS, intake=True,
                  customer_read_only=True)
    with pytest.raises(ValidationFailed) as exc:
        decide_field(UpdateField(changes={"intake": False}, at=at(1)), shown)
    assert exc.value.field == "customer_read_only"
    [closed] = decide_field(UpdateField(changes={"intake": False, "customer_read_only": False},
                                        at=at(1)), shown)
    assert isinstance(closed, TicketFieldUpdated)
    assert (closed.intake, closed.customer_read_only) == (False, False)


def test_a_field_required_on_open_must_be_given() -> None:
    required = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                             required_on=RequiredOn.OPEN))
    with pytest.raises(ValidationFailed, match="opening needs a value for plan") as exc:
        when([], open_cmd(actor=AGENT), fields=required)
    assert exc.value.field == "fields.plan"
    assert when([], open_cmd(actor=AGENT, fields={"plan": "free"}), fields=required)


def test_a_customer_is_not_asked_for_a_required_field_only_agents_set() -> None:
    required = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                             required_on=RequiredOn.OPEN))
    [opened] = when([], open_cmd(actor=CUSTOMER), fields=required)
    assert opened.fields == {}


def test_an_inactive_required_field_is_not_required() -> None:
    off = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                        required_on=RequiredOn.OPEN, active=False))
    assert when([], open_cmd(actor=AGENT), fields=off)


# --- changing values --------------------------------------------------------------------


def test_changing_fields_records_only_what_changed() -> None:
    history = given(open_cmd(actor=AGENT, fields={"plan": "free", "vip": True}))
    [changed] = when(history, set_({"plan": "pro", "vip": True, "order_no": 7}))
    assert changed == FieldValuesChanged(values={"order_no": 7, "plan": "pro"}, at=at(1))
    assert state([*history, changed]).fields == {"order_no": 7, "plan": "pro", "vip": True}


def test_null_clears_a_value() -> None:
    history = given(open_cmd(actor=AGENT, fields={"plan": "free"}))
    [cleared] = when(history, set_({"plan": None}))
    assert cleared.values == {"plan": None}
    assert state([*history, cleared]).fields == {}


def test_setting_the_same_values_changes_nothing() -> None:
    history = given(open_cmd(actor=AGENT, fields={"areas": ["api", "login"]}))
    assert when(history, set_({"areas": ["login", "api"]})) == []
    assert when(history, set_({"plan": None})) == []


def test_no_values_at_all_is_refused() -> None:
    with pytest.raises(ValidationFailed):
        when(given(open_cmd()), set_({}))


def test_a_required_on_open_field_cannot_be_cleared() -> None:
    required = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                             required_on=RequiredOn.OPEN))
    history = given(open_cmd(actor=AGENT, fields={"plan": "pro"}), fields=required)
    with pytest.raises(ValidationFailed, match="cannot be cleared"):
        when(history, set_({"plan": None}), fields=required)


def test_changing_fields_runs_every_value_rule() -> None:
    history = given(open_cmd())
    with pytest.raises(ValidationFailed):
        when(history, set_({"plan": "gold"}))
    with pytest.raises(ValidationFailed, match="agents only"):
        when(history, set_({"order_no": 1}, actor=CUSTOMER))
    assert when(history, set_({"vip": False}, actor=CUSTOMER))


def test_a_closed_ticket_takes_no_field_change() -> None:
    history = given(open_cmd(), solve(), ChangeState(to=TicketState.CLOSED, actor=AGENT,
                                                     at=at(3)))
    with pytest.raises(TicketClosed):
        when(history, set_({"plan": "pro"}, hours=4))


def test_a_change_on_no_ticket_is_not_found() -> None:
    with pytest.raises(NotFound):
        when([], set_({"plan": "pro"}))


# --- solving ----------------------------------------------------------------------------


def test_solving_without_a_required_field_names_it() -> None:
    required = catalog(PLAN, field("order_no", FieldType.NUMBER, required_on=RequiredOn.SOLVE))
    history = given(open_cmd(), fields=required)
    with pytest.raises(ValidationFailed, match="solving needs a value for order_no") as exc:
        when(history, solve(), fields=required)
    assert exc.value.field == "fields.order_no"
    history += when(history, set_({"order_no": 12}), fields=required)
    assert when(history, solve(), fields=required)[0].to_state is TicketState.SOLVED


def test_a_definition_changed_between_opening_and_solving_applies_when_solving() -> None:
    at_open = catalog(PLAN)
    history = given(open_cmd(), fields=at_open)  # plan was optional then
    [updated] = decide_field(UpdateField(changes={"required_on": "solve"}, at=at(1)), PLAN)
    changed = fold_field([*decide_field(DefineField(
        key="plan", title="Plan", type=FieldType.DROPDOWN, options=PLAN_OPTIONS, at=T0), None),
        updated])
    assert changed is not None and changed.required_on is RequiredOn.SOLVE
    at_solve = catalog(changed)
    with pytest.raises(ValidationFailed, match="plan") as exc:
        when(history, solve(), fields=at_solve)
    assert exc.value.field == "fields.plan"


def test_solving_also_needs_fields_required_on_open_added_since() -> None:
    history = given(open_cmd(), fields={})
    later = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                          required_on=RequiredOn.OPEN))
    with pytest.raises(ValidationFailed, match="plan"):
        when(history, solve(), fields=later)


def test_the_sweep_solves_whatever_is_missing() -> None:
    required = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                             required_on=RequiredOn.SOLVE))
    history = given(open_cmd(), ChangeState(to=TicketState.PENDING, actor=AGENT, at=at(1)),
                    fields=required)
    assert when(history, solve(actor=SYSTEM), fields=required)


def test_other_moves_do_not_check_required_fields() -> None:
    required = catalog(field("plan", FieldType.DROPDOWN, options=PLAN_OPTIONS,
                             required_on=RequiredOn.SOLVE))
    history = given(open_cmd(), fields=required)
    assert when(history, ChangeState(to=TicketState.PENDING, actor=AGENT, at=at(1)),
                fields=required)


# --- options taken out of use -----------------------------------------------------------


def _without_free(d: FieldDefinition) -> FieldDefinition:
    [updated] = decide_field(UpdateField(changes={"options": [{"value": "pro", "title": "Pro"}]},
                                         at=at(1)), d)
    assert isinstance(updated, TicketFieldUpdated)
    return d.model_copy(update={"options": updated.options, "version": 2})


def test_deleting_an_option_keeps_it_inactive_and_old_values_readable() -> None:
    history = given(open_cmd(actor=AGENT, fields={"plan": "free"}))
    later = catalog(_without_free(PLAN))
    assert later["plan"].options == (FieldOption(value="pro", title="Pro"),
                                     FieldOption(value="free", title="Free", active=False))
    assert state(history).fields == {"plan": "free"}
    with pytest.raises(ValidationFailed, match="not an option"):
        when([], open_cmd(actor=AGENT, fields={"plan": "free"}), fields=later)


def test_a_ticket_may_keep_an_inactive_choice_it_holds() -> None:
    history = given(open_cmd(actor=AGENT, fields={"areas": ["billing", "login"]}))
    [updated] = decide_field(UpdateField(changes={"options": [
        {"value": "login", "title": "Login"}, {"value": "api", "title": "API"}]}, at=at(1)),
        AREAS)
    assert isinstance(updated, TicketFieldUpdated)
    later = catalog(AREAS.model_copy(update={"options": updated.options}))
    [changed] = when(history, set_({"areas": ["billing", "login", "api"]}), fields=later)
    assert changed.values == {"areas": ("login", "api", "billing")}
    with pytest.raises(ValidationFailed):
        when([], open_cmd(actor=AGENT, fields={"areas": ["billing"]}), fields=later)


def test_a_follow_up_carries_the_closed_tickets_values_as_they_were() -> None:
    history = given(open_cmd(actor=AGENT, fields={"plan": "free"}), solve(),
                    ChangeState(to=TicketState.CLOSED, actor=AGENT, at=at(3)))
    closed = fold(history)
    assert closed is not None
    _old, [opened] = decide_follow_up(reply(at(4), actor=CUSTOMER, n=9), closed,
                                      open_cmd().ticket_id, POLICY)
    assert isinstance(opened, TicketOpened)
    assert opened.fields == {"plan": "free"}
    assert mid(9) == opened.message_id


# --- definitions ------------------------------------------------------------------------


def test_defining_a_field_records_it_whole() -> None:
    [defined] = decide_field(DefineField(key="plan", title="Plan", type=FieldType.DROPDOWN,
                                         options=PLAN_OPTIONS, at=T0), None)
    assert defined == TicketFieldDefined(key="plan", title="Plan", type=FieldType.DROPDOWN,
                                         options=PLAN_OPTIONS, at=T0)


def test_a_key_is_never_reused() -> None:
    with pytest.raises(AlreadyExists):
        decide_field(DefineField(key="plan", title="Other", type=FieldType.TEXT, at=at(1)), PLAN)
    inactive = PLAN.model_copy(update={"active": False})
    with pytest.raises(AlreadyExists):
        decide_field(DefineField(key="plan", title="Other", type=FieldType.TEXT, at=at(1)),
                     inactive)


@pytest.mark.parametrize(("kw", "where"), [
    ({"key": "Plan"}, "key"), ({"key": "1plan"}, "key"), ({"key": "p" * 41}, "key"),
    ({"title": " "}, "title"), ({"title": "t" * 101}, "title"),
    ({"options": ()}, "options"),
    ({"options": (FieldOption(value="a", title="A"), FieldOption(value="a", title="B"))},
     "options"),
    ({"options": (FieldOption(value="a b", title="A"),)}, "options"),
    ({"options": (FieldOption(value="a", title=""),)}, "options"),
    ({"options": (FieldOption(value="a", title="A", active=False),)}, "options"),
    ({"type": FieldType.TEXT, "options": PLAN_OPTIONS}, "options"),
    ({"personal": True}, "personal"),
])
def test_a_bad_definition_is_refused_naming_the_attribute(kw: Any, where: Any) -> None:
    data: dict[str, Any] = {"key": "plan", "title": "Plan", "type": FieldType.DROPDOWN,
                            "options": PLAN_OPTIONS, "at": T0, **kw}
    with pytest.raises(ValidationFailed) as exc:
        decide_field(DefineField(**data), None)
    assert exc.value.field == where


def test_only_text_holds_personal_data() -> None:
    [defined] = decide_field(DefineField(key="email2", title="Other e-mail",
                                         type=FieldType.TEXT, personal=True, at=T0), None)
    assert isinstance(defined, TicketFieldDefined) and defined.personal


def test_an_update_records_the_whole_definition_after_it() -> None:
    [updated] = decide_field(UpdateField(changes={"title": "Subscription", "intake": True},
                                         at=at(1)), PLAN)
    assert updated == TicketFieldUpdated(key="plan", title="Subscription", options=PLAN_OPTIONS,
                                         intake=True, at=at(1))
    after = fold_field([TicketFieldDefined(key="plan", title="Plan", type=FieldType.DROPDOWN,
                                           options=PLAN_OPTIONS, at=T0), updated])
    assert after is not None
    assert (after.title, after.version, after.intake, after.type) == (
        "Subscription", 2, True, FieldType.DROPDOWN)


def test_an_update_to_nothing_records_nothing() -> None:
    assert decide_field(UpdateField(changes={"title": "Plan", "active": True}, at=at(1)),
                        PLAN) == []


def test_key_and_type_never_change() -> None:
    for changes in ({"key": "plan2"}, {"type": "text"}):
        with pytest.raises(ValidationFailed):
            decide_field(UpdateField(changes=changes, at=at(1)), PLAN)


def test_updating_a_field_that_is_not_defined_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_field(UpdateField(changes={"title": "x"}, at=at(1)), None)


def test_an_update_cannot_leave_a_choice_field_without_active_options() -> None:
    with pytest.raises(ValidationFailed):
        decide_field(UpdateField(changes={"options": []}, at=at(1)), PLAN)
