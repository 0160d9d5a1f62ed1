"""What a rule is made of: conditions over a ticket after an event, and actions.

A condition is ``{field, op, value}`` and an action ``{type, value}``; both are
values with their rules kept here, pure. The checks that need the tenant's rows (a
ticket field's type, a group's members, an active agent) are the handler's
(``handlers.rules``). ``evaluate`` says, for a ticket after an event, which
conditions fail and why: the engine fires a rule when none does, and the dry run
shows the reasons.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from domain.errors import ValidationFailed
from domain.frozen import Frozen
from domain.ids import OrganizationId
from domain.mail_templates import RULE_KIND, MailTemplate, TemplateInvalid
from domain.mail_templates import check_template as check_mail_template
from domain.templates import check_template
from domain.validation import normalize_tags
from domain.values import Priority, Source, TicketState

CONDITIONS_MAX = 50
ACTIONS_MAX = 20

TICKET_EVENT_TYPES = frozenset({
    "TicketOpened", "MessageAdded", "TicketAssigned", "PriorityChanged", "StateChanged",
    "TagsChanged", "SlaBreached", "SlaWarning", "FieldValuesChanged", "TicketGroupChanged",
    "RequesterChanged", "TicketSplitFrom",
})
"""The events a rule may be conditioned on (``event``): those of the ticket stream."""
OPENED = "TicketOpened"
SPLIT_OFF = "TicketSplitFrom"
"""A ticket split off another opens with ``TicketSplitFrom``: to a rule it is an opening
like any other, so ``event is TicketOpened`` holds on it too, and ``event is
TicketSplitFrom`` (or ``is_not``) tells the two apart."""

_SET = frozenset({"is_set", "not_set"})
_IDS = frozenset({"is", "is_not"}) | _SET
_CHOICES = frozenset({"is", "is_not", "in"})
OPS: dict[str, frozenset[str]] = {
    "event": frozenset({"is", "is_not", "in"}),
    "state": _CHOICES,
    "priority": _CHOICES | {"at_least"},
    "channel": _CHOICES,
    "group_id": _IDS,
    "assignee_id": _IDS,
    "organization_id": _IDS,
    "tags": frozenset({"contains", "not_contains"}),
    "public_customer_reply": frozenset({"is"}),
    "business_hours": frozenset({"is"}),
}
"""The condition fields and the operators each takes; ``fields.<key>`` takes
``is``, ``is_not``, ``is_set`` and ``not_set``."""
FIELD_OPS = _IDS

ACTION_TYPES = frozenset({
    "set_state", "set_priority", "set_group", "assign", "add_tags", "remove_tags",
    "set_fields", "add_note", "send_mail", "call_webhook",
})
"""Every action a rule may name."""
MAIL_TO = frozenset({"requester", "assignee", "group"})
"""Whom a ``send_mail`` action mails: the ticket's requester, its assignee, or the
active members of a group."""

_PRIORITY_RANK = {p: i for i, p in enumerate(Priority)}

TIME_HOURS_MIN = 1
TIME_HOURS_MAX = 24 * 365
Since = Literal["created", "updated", "pending", "customer_reply", "agent_reply"]
EVENT_BOUND = frozenset({"event", "public_customer_reply"})
"""Conditions that speak of the event a rule fires on: a time rule has none."""
TIME_ACTIONS = ACTION_TYPES - {"call_webhook"}
"""What a time rule may do: the webhook gets events, and a time rule fires on none. A
time rule may send mail: its job queues it with the episode it claims."""


class Condition(Frozen):
    """One test of the ticket after an event; all of a rule's must hold."""

    field: str
    op: str
    value: Any = None


class Action(Frozen):
    """One change a rule makes to the ticket (or a call it makes)."""

    type: str
    value: Any = None


class TimeTrigger(Frozen):
    """A time rule's trigger: ``hours`` since the ticket was created, last updated, put
    pending, or last replied to in public by the customer or an agent, counted in
    calendar time or in the tenant's business hours."""

    since: Since
    hours: int
    business: bool = False


def check_time_rule(time: TimeTrigger, conditions: Sequence[Condition],
                    actions: Sequence[Action]) -> None:
    """A time rule waits at least an hour, and names no event or webhook."""
    if not TIME_HOURS_MIN <= time.hours <= TIME_HOURS_MAX:
        raise ValidationFailed(f"a time rule waits {TIME_HOURS_MIN} to {TIME_HOURS_MAX} hours",
                               field="time.hours")
    for i, c in enumerate(conditions):
        if c.field in EVENT_BOUND:
            raise ValidationFailed(f"a time rule fires on no event: {c.field} cannot hold",
                                   field=f"conditions.{i}.field")
    for i, a in enumerate(actions):
        if a.type == "call_webhook":
            raise ValidationFailed(f"a time rule fires on no event: it cannot {a.type}",
                                   field=f"actions.{i}.type")


def field_key(field: str) -> str | None:
    """The ticket field key of a ``fields.<key>`` condition field, else None."""
    return field[len("fields."):] if field.startswith("fields.") else None


def _choice(kind: type[Any], value: Any, where: str) -> Any:
    try:
        return kind(value)
    except (ValueError, TypeError):
        allowed = ", ".join(str(v.value) for v in kind)
        raise ValidationFailed(f"{value!r} is not one of {allowed}", field=where) from None


def _uuid(value: Any, where: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise ValidationFailed(f"{value!r} is not an id", field=where) from None


def _listed(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list) or not value or len(value) > 50:
        raise ValidationFailed("give a list of 1 to 50 values", field=where)
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValidationFailed("give true or false", field=where)
    return value


def check_condition(c: Condition, where: str) -> Condition:
    """``c`` with its value normalised; ``ValidationFailed`` naming ``where.<part>``."""
    key = field_key(c.field)
    ops = FIELD_OPS if key is not None else OPS.get(c.field)
    if ops is None or (key is not None and not key):
        raise ValidationFailed(f"{c.field!r} is not a condition field", field=f"{where}.field")
    if c.op not in ops:
        raise ValidationFailed(f"{c.field} takes {', '.join(sorted(ops))}, not {c.op!r}",
                               field=f"{where}.op")
    at = f"{where}.value"
    if c.op in _SET:
        if c.value is not None:
            raise ValidationFailed(f"{c.op} takes no value", field=at)
        return c
    value: Any = c.value
    kinds: dict[str, type[Any]] = {"state": TicketState, "priority": Priority,
                                   "channel": Source}
    if c.field == "event":
        names = _listed(value, at) if c.op == "in" else [value]
        for name in names:
            if name not in TICKET_EVENT_TYPES:
                raise ValidationFailed(f"{name!r} is not a ticket event", field=at)
    elif c.field in kinds:
        if c.op == "in":
            value = [_choice(kinds[c.field], v, at).value for v in _listed(value, at)]
        else:
            value = _choice(kinds[c.field], value, at).value
    elif c.field in ("group_id", "assignee_id", "organization_id"):
        value = _uuid(value, at)
    elif c.field == "tags":
        if not isinstance(value, str):
            raise ValidationFailed("give one tag", field=at)
        tags = normalize_tags((value,))
        if len(tags) != 1:
            raise ValidationFailed("give one tag", field=at)
        value = tags[0]
    elif c.field in ("public_customer_reply", "business_hours"):
        value = _bool(value, at)
    # A ticket field's value is checked against its definition by the handler.
    return c.model_copy(update={"value": value})


def check_action(a: Action, where: str) -> Action:
    """``a`` with its value normalised; refuses what no role may do by a rule."""
    at = f"{where}.value"
    if a.type not in ACTION_TYPES:
        raise ValidationFailed(f"{a.type!r} is not an action", field=f"{where}.type")
    value: Any = a.value
    match a.type:
        case "send_mail":
            value = check_send_mail(value, at)
        case "set_state":
            state = _choice(TicketState, value, at)
            if state is TicketState.CLOSED:
                # Closing is the sweep's, after the solved window: nobody closes by hand.
                raise ValidationFailed("no role closes a ticket; solve it", field=at)
            value = state.value
        case "set_priority":
            value = _choice(Priority, value, at).value
        case "set_group":
            value = _uuid(value, at)
        case "assign":
            value = None if value is None else _uuid(value, at)
        case "add_tags" | "remove_tags":
            if not isinstance(value, list) or not value or not all(
                    isinstance(t, str) for t in value):
                raise ValidationFailed("give a list of tags", field=at)
            value = list(normalize_tags(value))
        case "set_fields":
            if not isinstance(value, dict) or not value:
                raise ValidationFailed("give the field values by key", field=at)
        case "add_note":
            if not isinstance(value, str):
                raise ValidationFailed("give the note's text", field=at)
            check_template(value, at)
        case "call_webhook":
            if value is not None:
                raise ValidationFailed("call_webhook takes no value", field=at)
    return a.model_copy(update={"value": value})


def check_send_mail(value: Any, at: str) -> dict[str, Any]:
    """A ``send_mail`` value: ``{to, group_id (to a group only), template: {subject,
    body}}``, the template checked as a tenant's mail template is (it compiles, names
    only the placeholders of rule mail, renders in the sandbox)."""
    if not isinstance(value, dict) or set(value) - {"to", "group_id", "template"}:
        raise ValidationFailed("give {to, template: {subject, body}} (and group_id "
                               "to mail a group)", field=at)
    to = value.get("to")
    if to not in MAIL_TO:
        raise ValidationFailed(f"to is one of {', '.join(sorted(MAIL_TO))}", field=f"{at}.to")
    out: dict[str, Any] = {"to": to}
    if to == "group":
        out["group_id"] = _uuid(value.get("group_id"), f"{at}.group_id")
    elif value.get("group_id") is not None:
        raise ValidationFailed("group_id is for mail to a group", field=f"{at}.group_id")
    template = value.get("template")
    if not isinstance(template, dict) or set(template) != {"subject", "body"}:
        raise ValidationFailed("give the template's subject and body", field=f"{at}.template")
    try:
        check_mail_template(RULE_KIND, MailTemplate(template["subject"], template["body"]))
    except TemplateInvalid as exc:
        raise ValidationFailed(exc.message, field=f"{at}.template.{exc.field}") from exc
    out["template"] = {"subject": template["subject"], "body": template["body"]}
    return out


def check_conditions(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
    if len(conditions) > CONDITIONS_MAX:
        raise ValidationFailed(f"a rule has at most {CONDITIONS_MAX} conditions",
                               field="conditions")
    return tuple(check_condition(c, f"conditions.{i}") for i, c in enumerate(conditions))


def check_actions(actions: Sequence[Action]) -> tuple[Action, ...]:
    if not actions or len(actions) > ACTIONS_MAX:
        raise ValidationFailed(f"a rule has 1 to {ACTIONS_MAX} actions", field="actions")
    return tuple(check_action(a, f"actions.{i}") for i, a in enumerate(actions))


# --- evaluation ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Facts:
    """A ticket after an event, as the conditions see it."""

    event_type: str
    state: TicketState
    priority: Priority
    channel: Source
    group_id: uuid.UUID | None
    assignee_id: uuid.UUID | None
    organization_id: OrganizationId | None
    tags: frozenset[str]
    fields: dict[str, Any]
    public_customer_reply: bool
    business_hours: bool


def _id_matches(op: str, have: uuid.UUID | None, want: Any) -> bool:
    if op == "is_set":
        return have is not None
    if op == "not_set":
        return have is None
    same = have is not None and str(have) == want
    return same if op == "is" else not same


def _names(c: Condition) -> frozenset[str]:
    """The event types an ``event`` condition names, an opening naming a split-off's
    opening too (``OPENED``)."""
    named = frozenset(c.value if c.op == "in" else [c.value])
    return named | {SPLIT_OFF} if OPENED in named else named


def _holds(c: Condition, f: Facts) -> bool:
    key = field_key(c.field)
    if key is not None:
        have = f.fields.get(key)
        if c.op == "is_set":
            return have is not None
        if c.op == "not_set":
            return have is None
        return bool(have == c.value) == (c.op == "is")
    match c.field:
        case "event":
            # No event (the dry run's "now") meets no event condition, is_not included.
            return bool(f.event_type) and (f.event_type in _names(c)) == (c.op != "is_not")
        case "state" | "priority" | "channel":
            have_value = getattr(f, c.field).value
            if c.op == "in":
                return bool(have_value in c.value)
            if c.op == "at_least":
                return _PRIORITY_RANK[f.priority] >= _PRIORITY_RANK[Priority(c.value)]
            return bool(have_value == c.value) == (c.op == "is")
        case "group_id" | "assignee_id" | "organization_id":
            return _id_matches(c.op, getattr(f, c.field), c.value)
        case "tags":
            return (c.value in f.tags) == (c.op == "contains")
        case "public_customer_reply" | "business_hours":
            return bool(getattr(f, c.field) == c.value)
    return False  # pragma: no cover: check_condition admits nothing else


def failing(conditions: Sequence[Condition], facts: Facts) -> list[str]:
    """Why the conditions do not all hold, one line per failing condition (empty: the
    rule matches)."""
    return [f"conditions.{i}: {c.field} {c.op}{'' if c.value is None else f' {c.value}'}"
            " does not hold" for i, c in enumerate(conditions) if not _holds(c, facts)]


def holds(conditions: Sequence[Condition], facts: Facts) -> bool:
    """Whether every condition holds: ``not failing(...)``, stopping at the first that
    fails and saying nothing of why (what the engine asks of each rule on each event)."""
    return all(_holds(c, facts) for c in conditions)


_KINDS: dict[str, type[TicketState] | type[Priority] | type[Source]] = {
    "state": TicketState, "priority": Priority, "channel": Source}


def allowed_values(conditions: Sequence[Condition]) -> dict[str, list[str] | None]:
    """The ``state``, ``priority`` and ``channel`` values a ticket may have for the
    conditions to hold (None: any), so a query can leave out the tickets that cannot
    match before their other conditions are asked (``holds``)."""
    out: dict[str, list[str] | None] = {}
    for name, kind in _KINDS.items():
        allowed = {m.value for m in kind}
        for c in conditions:
            if c.field != name:
                continue
            if c.op == "in":
                allowed &= set(c.value)
            elif c.op == "is":
                allowed &= {c.value}
            elif c.op == "is_not":
                allowed -= {c.value}
            elif c.op == "at_least":
                allowed &= {p.value for p in Priority
                            if _PRIORITY_RANK[p] >= _PRIORITY_RANK[Priority(c.value)]}
        out[name] = None if len(allowed) == len(kind) else sorted(allowed)
    return out


def event_types(conditions: Sequence[Condition]) -> frozenset[str] | None:
    """The event types a rule can fire on (None: any): its ``event`` conditions, so the
    engine skips the others without loading the ticket."""
    types: frozenset[str] | None = None
    for c in conditions:
        if c.field == "event" and c.op != "is_not":
            named = _names(c)
            types = named if types is None else types & named
    for c in conditions:
        if c.field == "event" and c.op == "is_not" and types is not None:
            types -= _names(c)
    return types


__all__ = [
    "ACTIONS_MAX",
    "ACTION_TYPES",
    "CONDITIONS_MAX",
    "FIELD_OPS",
    "MAIL_TO",
    "OPENED",
    "OPS",
    "SPLIT_OFF",
    "TICKET_EVENT_TYPES",
    "TIME_ACTIONS",
    "TIME_HOURS_MIN",
    "Action",
    "Condition",
    "Facts",
    "Since",
    "TimeTrigger",
    "allowed_values",
    "check_action",
    "check_actions",
    "check_condition",
    "check_conditions",
    "check_send_mail",
    "check_time_rule",
    "event_types",
    "failing",
    "field_key",
    "holds",
]
