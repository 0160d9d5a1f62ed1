"""A tenant's settings as the domain holds them: SLA targets, business hours, paused
states, sweep windows, the text-search configuration and the widget's origins.

``TenantSettings`` is the value; its rules are checked when one is made, whatever it
is made from (a request body in ``api.schemas.settings``, a stored document in
``projections.tenant_settings``), so a value that exists keeps them. The rule
functions raise ``ValueError`` with the message a person reads, so the wire model can
run the same ones as validators.

The JSON document (the stored row, the ``SettingsChanged`` payload, the API body) is
not this module's: ``projections.tenant_settings`` maps it to and from the value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar
from uuid import UUID

from domain.business_hours import Calendar
from domain.sla import DEFAULT_PAUSED_STATES, DEFAULT_TARGETS, SlaPolicy, SlaTarget
from domain.values import Priority, TicketState

DEFAULT_PENDING_DAYS = 7
DEFAULT_SOLVED_DAYS = 4
DAY_MS = 86_400_000
MAX_TARGET_MS = 366 * DAY_MS
MAX_SWEEP_DAYS = 365
PAUSABLE = frozenset({TicketState.PENDING, TicketState.ON_HOLD, TicketState.SOLVED})
MAX_WIDGET_ORIGINS = 50
DEFAULT_TEXT_SEARCH = "simple"

_ORIGIN = re.compile(
    r"^(?P<scheme>https?)://"
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?$")
_DEFAULT_PORTS = {"http": 80, "https": 443}

T = TypeVar("T")


def widget_origin(value: str) -> str:
    """A web origin as a browser sends it in ``Origin``: ``http`` or ``https``, a host
    (a DNS name in ASCII, punycode for others, or an IP literal) and an optional port,
    and nothing else: no path (not even ``/``), query, user or wildcard. Returned in
    the form browsers send (scheme and host in lower case, a default port left out),
    so it compares equal to the header; anything else raises ``ValueError``."""
    match = _ORIGIN.match(value.lower()) if len(value) <= 300 else None
    if match is None:
        raise ValueError(f"{value!r} is not an origin: write scheme://host or "
                         "scheme://host:port (http or https; no path, not even a "
                         "trailing /, no wildcard)")
    scheme, host, port = match.group("scheme", "host", "port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r} has a port out of range")
    keep = port is not None and int(port) != _DEFAULT_PORTS[scheme]
    return f"{scheme}://{host}" + (f":{int(port)}" if keep else "")


def widget_origins(values: Iterable[str]) -> list[str]:
    """Origins in their browser form (``widget_origin``), each once, in a canonical
    order (so equal settings make equal events)."""
    origins = [widget_origin(v) for v in values]
    if len(set(origins)) != len(origins):
        raise ValueError("widget_origins lists an origin twice")
    if len(origins) > MAX_WIDGET_ORIGINS:
        raise ValueError(f"widget_origins lists at most {MAX_WIDGET_ORIGINS} origins")
    return sorted(origins)


def paused_states(states: Iterable[TicketState]) -> list[TicketState]:
    """States that pause clocks (pending, on_hold, solved), each once, in state order."""
    value = list(states)
    wrong = [s.value for s in value if s not in PAUSABLE]
    if wrong:
        raise ValueError("only pending, on_hold and solved can pause clocks; not "
                         + ", ".join(wrong))
    if len(set(value)) != len(value):
        raise ValueError("paused_states lists a state twice")
    return sorted(value, key=list(TicketState).index)


def every_priority(targets: Mapping[Priority, T]) -> dict[Priority, T]:
    """Targets for every priority, in priority order."""
    missing = [p.value for p in Priority if p not in targets]
    if missing:
        raise ValueError("targets are required for every priority; missing: "
                         + ", ".join(missing))
    return {p: targets[p] for p in Priority}


def by_group(targets: Mapping[UUID, Mapping[Priority, T]]) -> dict[UUID, dict[Priority, T]]:
    """Group targets in a canonical order (groups by id, then priority order)."""
    return {g: {p: targets[g][p] for p in Priority if p in targets[g]}
            for g in sorted(targets, key=str)}


def check_target(first_response_ms: int, resolution_ms: int) -> None:
    """One priority's targets: whole milliseconds above 0, at most ``MAX_TARGET_MS``,
    the first response no later than the resolution."""
    for ms in (first_response_ms, resolution_ms):
        if type(ms) is not int or not 0 < ms <= MAX_TARGET_MS:
            raise ValueError(f"a target is a whole number of milliseconds from 1 to "
                             f"{MAX_TARGET_MS}")
    if first_response_ms > resolution_ms:
        raise ValueError("first_response_ms must not exceed resolution_ms")


@dataclass(frozen=True, slots=True)
class SweepWindows:
    """After how many days untouched a pending ticket is solved, a solved one closed."""

    pending_days: int = DEFAULT_PENDING_DAYS
    solved_days: int = DEFAULT_SOLVED_DAYS

    def __post_init__(self) -> None:
        for days in (self.pending_days, self.solved_days):
            if type(days) is not int or not 1 <= days <= MAX_SWEEP_DAYS:
                raise ValueError(f"sweep days are whole numbers from 1 to {MAX_SWEEP_DAYS}")


@dataclass(frozen=True)
class TenantSettings:
    """A tenant's settings, their rules kept: targets for every priority, states that
    may pause, origins in their canonical form. ``policy`` is the SLA view the write
    path decides with; ``business_hours`` None is calendar time."""

    targets: Mapping[Priority, SlaTarget] = field(default_factory=lambda: dict(DEFAULT_TARGETS))
    business_hours: Calendar | None = None
    paused_states: tuple[TicketState, ...] = tuple(paused_states(DEFAULT_PAUSED_STATES))
    sweep: SweepWindows = field(default_factory=SweepWindows)
    group_targets: Mapping[UUID, Mapping[Priority, SlaTarget]] = field(default_factory=dict)
    text_search: str = DEFAULT_TEXT_SEARCH
    widget_origins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Canonical forms, so equal settings compare (and record) equal.
        set_ = object.__setattr__
        set_(self, "targets", every_priority(self.targets))
        set_(self, "group_targets", by_group(self.group_targets))
        set_(self, "paused_states", tuple(paused_states(self.paused_states)))
        set_(self, "widget_origins", tuple(widget_origins(self.widget_origins)))
        for target in [*self.targets.values(),
                       *(t for g in self.group_targets.values() for t in g.values())]:
            check_target(target.first_response_ms, target.resolution_ms)

    @cached_property
    def policy(self) -> SlaPolicy:
        """The SLA policy to decide with."""
        return SlaPolicy(
            targets=dict(self.targets), paused_states=frozenset(self.paused_states),
            group_targets={g: dict(t) for g, t in self.group_targets.items()},
            # No business hours: the clocks run on calendar time.
            **({} if self.business_hours is None else {"calendar": self.business_hours}))


DEFAULT_SETTINGS = TenantSettings()
"""What a tenant that never set anything runs on."""


__all__ = [
    "DAY_MS",
    "DEFAULT_PENDING_DAYS",
    "DEFAULT_SETTINGS",
    "DEFAULT_SOLVED_DAYS",
    "DEFAULT_TEXT_SEARCH",
    "MAX_SWEEP_DAYS",
    "MAX_TARGET_MS",
    "MAX_WIDGET_ORIGINS",
    "PAUSABLE",
    "SweepWindows",
    "TenantSettings",
    "by_group",
    "check_target",
    "every_priority",
    "paused_states",
    "widget_origin",
    "widget_origins",
]
