"""What a demo tenant holds, as plain data: its people, its customers and the stories
its tickets live through.

A story is a ticket's script: what the customer wrote and what happened after, each
step some time after the previous one. A placement puts a story on the calendar for
one customer, some time before the moment of seeding; the seed (``handlers.demo.seed``)
plays every placement's steps in time order through the command handlers, and a step
still in the future at that moment is not played: the ticket is then where a real one
opened that long ago would be.

Teams and organisations are already part of the cast: a team decides which agent
picks a ticket up, an organisation gives its people their e-mail domain. Groups and
organisations as records of their own, contacts, and agents who sign in with a
password come later and slot in here (each plan already names them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from domain.values import Priority, Role, Source, TicketState

StepKind = Literal["reply", "note", "customer", "assign", "state", "priority", "tags"]

_SPAN = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?$")


def span(text: str) -> timedelta:
    """``"1d2h30m"`` (any of the parts, in that order) as a timedelta."""
    match = _SPAN.match(text)
    if match is None or not text:
        raise ValueError(f"not a span like 1d2h30m: {text!r}")
    days, hours, minutes = (int(g) if g else 0 for g in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes)


DEMO_SITE = "http://127.0.0.1:8001"
"""The origin of the demo's web site (``helpdesk demo site``, api/cli/demo_site.py),
which embeds each demo tenant's widget: listed in their ``widget_origins``."""


@dataclass(frozen=True, slots=True)
class Step:
    """One thing that happens to a ticket, ``after`` the previous step (or the opening).

    ``by`` is an agent's handle; None means whoever has the ticket (its assignee, else
    the agent on duty for the story's team)."""

    after: timedelta
    kind: StepKind
    text: str = ""
    value: str | None = None
    by: str | None = None
    add: tuple[str, ...] = ()
    remove: tuple[str, ...] = ()


def reply(after: str, text: str, by: str | None = None) -> Step:
    return Step(span(after), "reply", text, by=by)


def note(after: str, text: str, by: str | None = None) -> Step:
    return Step(span(after), "note", text, by=by)


def customer(after: str, text: str) -> Step:
    return Step(span(after), "customer", text)


def assign(after: str, to: str | None = None) -> Step:
    """Assign to the agent ``to`` (None: the agent on duty for the team)."""
    return Step(span(after), "assign", value=to)


def move(after: str, state: TicketState, reason: str | None = None,
         by: str | None = None) -> Step:
    return Step(span(after), "state", reason or "", value=state.value, by=by)


def reprioritise(after: str, priority: Priority, by: str | None = None) -> Step:
    return Step(span(after), "priority", value=priority.value, by=by)


def retag(after: str, add: tuple[str, ...] = (), remove: tuple[str, ...] = (),
          by: str | None = None) -> Step:
    return Step(span(after), "tags", add=add, remove=remove, by=by)


@dataclass(frozen=True, slots=True)
class Story:
    """A ticket's script: opened by the customer (or, on the phone, by an agent taking
    the call) with ``subject`` and ``body``, then ``steps``."""

    subject: str
    body: str
    team: str
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    steps: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class Placement:
    """A story opened ``ago`` (a span) before the moment of seeding, for ``customer``;
    priority and source may differ from the story's."""

    story: str
    customer: str
    ago: str
    priority: Priority | None = None
    source: Source | None = None


@dataclass(frozen=True, slots=True)
class Agent:
    """A person of the support team. ``teams`` become groups; today they decide who
    picks up a story of the team. A password login comes with staff sign-in."""

    handle: str
    name: str
    email: str
    role: Role
    teams: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Organization:
    """A customer company; its people write from its ``domain``."""

    name: str
    domain: str


@dataclass(frozen=True, slots=True)
class Customer:
    name: str
    email: str
    organization: str | None = None


@dataclass(frozen=True, slots=True)
class MachineKey:
    """An API key that belongs to no person: ``intake`` (the mail and portal
    integration, which writes for customers), ``analyst`` or ``auditor``."""

    role: Role
    name: str


@dataclass(frozen=True, slots=True)
class Plan:
    """One demo tenant."""

    name: str
    agents: tuple[Agent, ...]
    keys: tuple[MachineKey, ...]
    organizations: tuple[Organization, ...]
    customers: dict[str, Customer]
    stories: dict[str, Story]
    placements: tuple[Placement, ...]
    history: timedelta = field(default_factory=lambda: timedelta(days=43))
    """How long before the moment of seeding the tenant, its people and keys begin."""
    colour: str = "#1f4e79"
    """The tenant's ``brand_colour``: its portal and widget are drawn in it."""

    def agent(self, handle: str) -> Agent:
        return next(a for a in self.agents if a.handle == handle)


__all__ = ["DEMO_SITE", "Agent", "Customer", "MachineKey", "Organization", "Placement", "Plan",
           "Step", "Story", "assign", "customer", "move", "note", "reply", "reprioritise", "retag",
           "span"]
