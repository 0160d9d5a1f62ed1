"""The events of how the desk works: its rules, macros, saved views, SLA calendars and
SLA policies, each on a stream of its own (the stream id is the thing's id).

As in domain/events.py, which holds the base class and the other aggregates' events,
where a command asks for exactly what its event records the payload is declared once
(``NewRule``, ``RuleChanges``, ``NewPolicy``...) and both are made of it.
"""

from __future__ import annotations

from uuid import UUID

from domain.business_hours import Calendar
from domain.events import Event
from domain.frozen import Frozen
from domain.ids import AgentId
from domain.rule_parts import Action, Condition, TimeTrigger
from domain.values import Visibility

# --- rule stream (domain/rule.py) -------------------------------------------------------


class NewRule(Frozen):
    """A new rule: what ``CreateRule`` asks for (which gives it defaults) and
    ``RuleCreated`` records."""

    rule_id: UUID
    name: str
    position: int
    active: bool
    conditions: tuple[Condition, ...]
    actions: tuple[Action, ...]
    time: TimeTrigger | None = None
    """A time rule's trigger (None: the rule fires on events)."""


class RuleCreated(NewRule, Event):
    TYPE = "RuleCreated"


class RuleChanges(Frozen):
    """The parts of a rule a change names, each as it is to be (None: as it was):
    what ``ChangeRule`` asks for and ``RuleChanged`` records of what differed."""

    name: str | None = None
    position: int | None = None
    active: bool | None = None
    conditions: tuple[Condition, ...] | None = None
    actions: tuple[Action, ...] | None = None
    time: TimeTrigger | None = None
    """A time rule's new trigger (refused for a rule on events)."""


class RuleChanged(RuleChanges, Event):
    """The parts of a rule that changed, each as it is now (None: as it was)."""

    TYPE = "RuleChanged"




# --- macro stream (domain/macro.py) -----------------------------------------------------


class NewMacro(Frozen):
    """A new macro: what ``CreateMacro`` asks for (which gives it defaults) and
    ``MacroCreated`` records."""

    macro_id: UUID
    name: str
    owner_id: AgentId | None
    """The agent whose personal macro it is; None: shared by the tenant."""
    text: str | None
    visibility: Visibility
    actions: tuple[Action, ...]


class MacroCreated(NewMacro, Event):
    TYPE = "MacroCreated"


class MacroChanges(Frozen):
    """The parts of a macro a change names, each as it is to be (None: as it was;
    ``actions`` replaces the list): what ``ChangeMacro`` asks for and ``MacroChanged``
    records of what differed."""

    name: str | None = None
    text: str | None = None
    visibility: Visibility | None = None
    actions: tuple[Action, ...] | None = None


class MacroChanged(MacroChanges, Event):
    """The parts of a macro that changed, each as it is now (None: as it was)."""

    TYPE = "MacroChanged"


class MacroDeleted(Event):
    """The macro is gone from the desk; its stream keeps what it was."""

    TYPE = "MacroDeleted"


# --- saved view stream (domain/saved_view.py) -------------------------------------------


Filters = dict[str, str | list[str]]
"""A saved view's filters: the ticket list's query parameters as given."""


class NewView(Frozen):
    """A new saved view: what ``CreateView`` asks for (which gives it defaults) and
    ``ViewCreated`` records."""

    view_id: UUID
    name: str
    owner_id: AgentId | None
    filters: Filters


class ViewCreated(NewView, Event):
    """A saved view: its name and the ticket list's filters, as query parameters."""

    TYPE = "ViewCreated"


class ViewChanges(Frozen):
    """The parts of a view a change names (None: as it was; ``filters`` replaces them
    all): what ``ChangeView`` asks for and ``ViewChanged`` records of what differed."""

    name: str | None = None
    filters: Filters | None = None


class ViewChanged(ViewChanges, Event):
    """The parts of a view that changed, each as it is now (None: as it was)."""

    TYPE = "ViewChanged"


class ViewDeleted(Event):
    """The view is gone from the desk; its stream keeps what it was."""

    TYPE = "ViewDeleted"


# --- calendar stream (domain/sla_calendar.py) -------------------------------------------


class NewCalendar(Frozen):
    """A new calendar: what ``CreateCalendar`` asks for and ``CalendarCreated``
    records."""

    calendar_id: UUID
    name: str
    hours: Calendar


class CalendarCreated(NewCalendar, Event):
    """Named business hours in a time zone, with holidays, for SLA policies."""

    TYPE = "CalendarCreated"


class CalendarChanges(Frozen):
    """The parts of a calendar a change names (None: as it was): what
    ``ChangeCalendar`` asks for and ``CalendarChanged`` records of what differed."""

    name: str | None = None
    hours: Calendar | None = None


class CalendarChanged(CalendarChanges, Event):
    """The parts of a calendar that changed, each as it is now (None: as it was)."""

    TYPE = "CalendarChanged"


class CalendarDeleted(Event):
    """The calendar is gone from the desk; its stream keeps what it was, and its hours
    at every version stay readable for the clocks that ran on them."""

    TYPE = "CalendarDeleted"


# --- SLA policy stream (domain/target_policy.py) ----------------------------------------


class PolicyTargets(Frozen):
    """A policy's target per metric, in business milliseconds (None: not measured)."""

    first_reply_ms: int | None = None
    next_reply_ms: int | None = None
    periodic_update_ms: int | None = None
    requester_wait_ms: int | None = None
    resolution_ms: int | None = None
    agent_work_ms: int | None = None


class NewPolicy(Frozen):
    """A new SLA policy: what ``CreatePolicy`` asks for (which gives it defaults) and
    ``SlaPolicyCreated`` records."""

    policy_id: UUID
    name: str
    position: int
    default: bool
    conditions: tuple[Condition, ...]
    targets: PolicyTargets
    calendar_id: UUID | None
    """None: calendar time (every instant counts)."""


class SlaPolicyCreated(NewPolicy, Event):
    TYPE = "SlaPolicyCreated"


class PolicyChanges(Frozen):
    """The parts of a policy a change names (None: as it was); ``calendar_id`` only
    with ``set_calendar``, None then meaning calendar time: what ``ChangePolicy`` asks
    for and ``SlaPolicyChanged`` records of what differed."""

    name: str | None = None
    position: int | None = None
    conditions: tuple[Condition, ...] | None = None
    targets: PolicyTargets | None = None
    set_calendar: bool = False
    calendar_id: UUID | None = None


class SlaPolicyChanged(PolicyChanges, Event):
    """The parts of a policy that changed, each as it is now (None: as it was);
    ``calendar_id`` changes only with ``set_calendar`` (so a policy can go back to
    calendar time)."""

    TYPE = "SlaPolicyChanged"


class SlaPolicyDeleted(Event):
    """The policy is gone from the desk: no ticket is matched to it from now on. Clocks
    that run on it keep the targets and calendar recorded with them (verdicts never
    change after the fact) until their ticket is re-matched."""

    TYPE = "SlaPolicyDeleted"


RULE_EVENTS: tuple[type[Event], ...] = (RuleCreated, RuleChanged)
MACRO_EVENTS: tuple[type[Event], ...] = (MacroCreated, MacroChanged, MacroDeleted)
VIEW_EVENTS: tuple[type[Event], ...] = (ViewCreated, ViewChanged, ViewDeleted)
CALENDAR_EVENTS: tuple[type[Event], ...] = (CalendarCreated, CalendarChanged, CalendarDeleted)
SLA_POLICY_EVENTS: tuple[type[Event], ...] = (SlaPolicyCreated, SlaPolicyChanged,
                                               SlaPolicyDeleted)

__all__ = [
    "CALENDAR_EVENTS",
    "MACRO_EVENTS",
    "RULE_EVENTS",
    "SLA_POLICY_EVENTS",
    "VIEW_EVENTS",
    "CalendarChanged",
    "CalendarChanges",
    "CalendarCreated",
    "CalendarDeleted",
    "Filters",
    "MacroChanged",
    "MacroChanges",
    "MacroCreated",
    "MacroDeleted",
    "NewCalendar",
    "NewMacro",
    "NewPolicy",
    "NewRule",
    "NewView",
    "PolicyChanges",
    "PolicyTargets",
    "RuleChanged",
    "RuleChanges",
    "RuleCreated",
    "SlaPolicyChanged",
    "SlaPolicyCreated",
    "SlaPolicyDeleted",
    "ViewChanged",
    "ViewChanges",
    "ViewCreated",
    "ViewDeleted",
]
