"""SLA policy and the per-metric clock.

A ``SlaClock`` is a plain, frozen record; the functions here move it between
not-started, running, paused, fulfilled and breached. Which of them to call when is the
ticket's business (``domain.ticket.decide``); the arithmetic lives here.

Budget accounting: a running clock's remaining budget is the business time from now to
``due_at`` (negative once overdue). Pausing stores it in ``remaining_ms``; resuming sets
``due_at = add_business_time(now, remaining_ms)``. A priority change keeps the business
time already elapsed and swaps the target, so the new budget is
``new_target - elapsed = remaining + (new_target - old_target)``. A budget already
spent under the new target makes the clock due at once (``due_at = now``), so the next
check breaches it: breaches are never back-dated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from pydantic import (
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from domain.business_hours import Calendar, CALENDAR_24x7, add_business_time, business_ms_between
from domain.frozen import Frozen
from domain.rule_parts import Condition, Facts, holds
from domain.values import Priority, SlaMetric, Source, TicketState, UtcDatetime

HOUR_MS = 3_600_000


class SlaTarget(NamedTuple):
    """Targets for one priority, in business milliseconds."""

    first_response_ms: int
    resolution_ms: int


SlaTargets = dict[Priority, SlaTarget]

DEFAULT_TARGETS: SlaTargets = {
    Priority.URGENT: SlaTarget(1 * HOUR_MS, 8 * HOUR_MS),
    Priority.HIGH: SlaTarget(2 * HOUR_MS, 24 * HOUR_MS),
    Priority.NORMAL: SlaTarget(8 * HOUR_MS, 72 * HOUR_MS),
    Priority.LOW: SlaTarget(24 * HOUR_MS, 120 * HOUR_MS),
}

DEFAULT_PAUSED_STATES = frozenset({TicketState.PENDING, TicketState.SOLVED})


class ClockBasis(Frozen):
    """What a clock runs on: the SLA policy (and its version) it started or was last
    retargeted under, and that policy's calendar then (None: calendar time). Recorded
    on the clock, so its verdicts are computed on these, never on the policy or the
    calendar as they are now. ``policy_name`` is the name the policy had at that
    version (None on clocks recorded before names were), so a ticket names its policy
    with no look-up, and still does after the policy is renamed or deleted."""

    policy_id: UUID
    policy_version: int
    calendar_id: UUID | None = None
    calendar_version: int | None = None
    policy_name: str | None = None

    def runs_as(self, other: ClockBasis | None) -> bool:
        """Whether a clock on ``other`` runs on the same policy version and calendar
        version as one on this (the name, a label of the version, aside)."""
        return other is not None and (
            self.policy_id, self.policy_version, self.calendar_id, self.calendar_version
        ) == (other.policy_id, other.policy_version, other.calendar_id,
              other.calendar_version)

    @property
    def calendar_key(self) -> tuple[UUID, int] | None:
        if self.calendar_id is None or self.calendar_version is None:
            return None
        return self.calendar_id, self.calendar_version


class PolicyChoice(NamedTuple):
    """A policy as clocks start on it: its basis, a target per metric (None: the
    metric is not measured) and the calendar."""

    basis: ClockBasis
    targets: Mapping[SlaMetric, int | None]
    calendar: Calendar


@dataclass(frozen=True)
class PolicyMatcher:
    """A tenant's SLA policies in the order they are tried (the default last, so one
    always matches), each with its conditions, and the calendar versions its tickets'
    clocks run on."""

    ordered: tuple[tuple[tuple[Condition, ...], PolicyChoice], ...]
    calendars: Mapping[tuple[UUID, int], Calendar] = field(default_factory=dict)
    organization_id: UUID | None = None
    """The ticket's requester's organization, for conditions on it."""

    def choose(self, priority: Priority, group: UUID | None, channel: Source,
               tags: tuple[str, ...], fields: Mapping[str, Any]) -> PolicyChoice:
        facts = Facts(event_type="", state=TicketState.OPEN, priority=priority,
                      channel=channel, group_id=group, assignee_id=None,
                      organization_id=self.organization_id,  # type: ignore[arg-type]
                      tags=frozenset(tags), fields=dict(fields),
                      public_customer_reply=False, business_hours=False)
        for conditions, choice in self.ordered:
            if holds(conditions, facts):
                return choice
        return self.ordered[-1][1]

    def calendar_of(self, basis: ClockBasis) -> Calendar:
        key = basis.calendar_key
        return CALENDAR_24x7 if key is None else self.calendars[key]


class SlaPolicy(Frozen):
    """A tenant's SLA settings: targets per priority (and, for some groups, per group
    and priority), calendar, and the states in which the next-reply and resolution
    clocks pause."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    targets: SlaTargets = Field(default_factory=lambda: dict(DEFAULT_TARGETS))
    calendar: Calendar = CALENDAR_24x7
    paused_states: frozenset[TicketState] = DEFAULT_PAUSED_STATES
    group_targets: dict[UUID, dict[Priority, SlaTarget]] = Field(default_factory=dict)
    """Targets of a group's tickets, for the priorities the group names; any other
    (group, priority) falls back to ``targets``."""

    @field_validator("targets")
    @classmethod
    def _complete(cls, value: SlaTargets) -> SlaTargets:
        missing = set(Priority) - set(value)
        if missing:
            raise ValueError(f"targets missing for {sorted(missing)}")
        for target in value.values():
            if target.first_response_ms <= 0 or target.resolution_ms <= 0:
                raise ValueError("targets must be positive")
        return value

    @field_validator("paused_states")
    @classmethod
    def _not_closed(cls, value: frozenset[TicketState]) -> frozenset[TicketState]:
        # Closed stops every clock anyway; open must keep them running.
        if TicketState.CLOSED in value or TicketState.OPEN in value:
            raise ValueError("paused_states may hold only pending, on_hold and solved")
        return value

    @field_validator("group_targets")
    @classmethod
    def _positive(cls, value: dict[UUID, dict[Priority, SlaTarget]]
                  ) -> dict[UUID, dict[Priority, SlaTarget]]:
        for targets in value.values():
            for target in targets.values():
                if target.first_response_ms <= 0 or target.resolution_ms <= 0:
                    raise ValueError("targets must be positive")
        return value

    matcher: PolicyMatcher | None = None
    """The tenant's SLA policies (None: it has none, and the targets above serve)."""

    def calendar_of(self, clock: SlaClock) -> Calendar:
        """The calendar ``clock`` runs on: its policy's, as recorded on it."""
        if clock.basis is not None and self.matcher is not None:
            return self.matcher.calendar_of(clock.basis)
        return self.calendar

    def target_ms(self, metric: SlaMetric, priority: Priority,
                  group: UUID | None = None) -> int:
        """The target of ``metric`` at ``priority`` in ``group`` (the group's own
        target if it has one for the priority, else the priority's); next reply uses
        the first-response target."""
        target = self.targets[priority]
        if group is not None:
            target = self.group_targets.get(group, {}).get(priority, target)
        if metric is SlaMetric.RESOLUTION:
            return target.resolution_ms
        return target.first_response_ms


class SlaClock(Frozen):
    """The state of one SLA metric on one ticket.

    * not started: ``started_at`` is None;
    * running: ``due_at`` set, not paused, not fulfilled;
    * paused: ``paused`` with ``remaining_ms`` kept and ``due_at`` None (also used for
      a closed ticket's stopped clocks, and for the resolution clock while solved);
    * fulfilled: ``fulfilled_at`` set;
    * ``breached_at`` latches once set.
    """

    metric: SlaMetric
    target_ms: int
    started_at: UtcDatetime | None = None
    due_at: UtcDatetime | None = None
    paused: bool = False
    remaining_ms: int | None = None
    fulfilled_at: UtcDatetime | None = None
    breached_at: UtcDatetime | None = None
    warned_at: UtcDatetime | None = None
    """When the clock passed the tenant's warning share (``SlaWarning``); latches per
    cycle: a restarted clock is a new one."""
    basis: ClockBasis | None = None
    """The policy and calendar the clock runs on (None: the tenant's settings, as
    before policies; left out of stored payloads then, so they read as before)."""

    @model_serializer(mode="wrap")
    def _without_empty_basis(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("basis") is None:
            data.pop("basis", None)
        return data

    @property
    def running(self) -> bool:
        """True while the clock counts down towards ``due_at``."""
        return (
            self.started_at is not None
            and not self.paused
            and self.fulfilled_at is None
            and self.due_at is not None
        )

    @property
    def active(self) -> bool:
        """Started and not yet fulfilled (running or paused)."""
        return self.started_at is not None and self.fulfilled_at is None


def idle_clock(metric: SlaMetric, target_ms: int) -> SlaClock:
    """A clock that has not started (next reply before any unanswered message)."""
    return SlaClock(metric=metric, target_ms=target_ms)


def start_clock(
    calendar: Calendar, metric: SlaMetric, target_ms: int, now: datetime, *, paused: bool = False
) -> SlaClock:
    """Start a fresh clock at ``now``; ``paused`` starts it already paused with the whole
    budget kept (a message arriving while the ticket is pending)."""
    if paused:
        return SlaClock(
            metric=metric, target_ms=target_ms, started_at=now, paused=True, remaining_ms=target_ms
        )
    due = add_business_time(calendar, now, target_ms)
    return SlaClock(metric=metric, target_ms=target_ms, started_at=now, due_at=due)


def remaining_ms(calendar: Calendar, clock: SlaClock, now: datetime) -> int:
    """Business budget left at ``now``; negative once overdue."""
    if clock.paused or clock.due_at is None:
        return clock.remaining_ms if clock.remaining_ms is not None else clock.target_ms
    if now <= clock.due_at:
        return business_ms_between(calendar, now, clock.due_at)
    return -business_ms_between(calendar, clock.due_at, now)


def pause_clock(calendar: Calendar, clock: SlaClock, now: datetime) -> SlaClock:
    """Pause a running clock, keeping its remaining budget; others are returned as is."""
    if not clock.running:
        return clock
    left = remaining_ms(calendar, clock, now)
    return clock.model_copy(update={"paused": True, "due_at": None, "remaining_ms": left})


def resume_clock(calendar: Calendar, clock: SlaClock, now: datetime) -> SlaClock:
    """Resume a paused, started clock: due when the kept budget is spent from ``now``.

    Clears ``fulfilled_at`` too: the only paused-and-fulfilled clock is resolution on a
    solved ticket, and resuming it means the ticket was reopened.
    """
    if not clock.paused or clock.started_at is None:
        return clock
    budget = clock.remaining_ms if clock.remaining_ms is not None else clock.target_ms
    due = add_business_time(calendar, now, budget) if budget > 0 else now
    return clock.model_copy(
        update={"paused": False, "due_at": due, "remaining_ms": None, "fulfilled_at": None}
    )


def fulfil_clock(clock: SlaClock, now: datetime) -> SlaClock:
    """Mark an active clock fulfilled at ``now``; ``due_at`` is kept as history.

    A paused clock (an agent answering while the ticket is pending) is unpaused as it
    is fulfilled, so a later resume cannot revive it.
    """
    if not clock.active:
        return clock
    return clock.model_copy(update={"fulfilled_at": now, "paused": False, "remaining_ms": None})


def solve_resolution(calendar: Calendar, clock: SlaClock, now: datetime) -> SlaClock:
    """Solving fulfils resolution and pauses it with the budget kept, so a reopen
    resumes rather than resets it."""
    if not clock.active:
        return clock
    return pause_clock(calendar, clock, now).model_copy(update={"fulfilled_at": now})


def rebase_clock(old: Calendar, new: Calendar, clock: SlaClock, target_ms: int | None,
                 basis: ClockBasis, now: datetime) -> SlaClock:
    """Move a clock to another policy (or another version of its own) at ``now``: the
    business time already elapsed (on the calendar it ran on) is kept and the rest of
    the new target runs on the new calendar. A fulfilled clock is history and keeps its
    basis; a metric the new policy does not measure stops (not started); a budget
    already spent makes it due at once, so the next check breaches it."""
    if clock.fulfilled_at is not None and not clock.paused:
        return clock
    if target_ms is None:
        return SlaClock(metric=clock.metric, target_ms=0, basis=basis)
    if clock.started_at is None:
        return clock.model_copy(update={"target_ms": target_ms, "basis": basis})
    left = remaining_ms(old, clock, now) + (target_ms - clock.target_ms)
    update: dict[str, Any] = {"target_ms": target_ms, "basis": basis}
    if clock.paused:
        update["remaining_ms"] = left
    elif clock.running:
        update["due_at"] = add_business_time(new, now, left) if left > 0 else now
    return clock.model_copy(update=update)


def retarget_clock(
    calendar: Calendar, clock: SlaClock, new_target_ms: int, now: datetime
) -> SlaClock:
    """Swap the target after a priority change, keeping elapsed business time."""
    delta = new_target_ms - clock.target_ms
    if delta == 0:
        return clock
    if clock.started_at is None:
        return clock.model_copy(update={"target_ms": new_target_ms})
    if clock.paused:
        left = remaining_ms(calendar, clock, now) + delta
        return clock.model_copy(update={"target_ms": new_target_ms, "remaining_ms": left})
    if not clock.running:
        return clock  # fulfilled: history, not re-judged under a new target
    budget = remaining_ms(calendar, clock, now) + delta
    due = add_business_time(calendar, now, budget) if budget > 0 else now
    return clock.model_copy(update={"target_ms": new_target_ms, "due_at": due})


def breach_due(clock: SlaClock, now: datetime) -> bool:
    """True when a check at ``now`` must record a breach: running, past due, and not
    breached before (a breach latches, so it is recorded once)."""
    return (
        clock.running
        and clock.breached_at is None
        and clock.due_at is not None
        and clock.due_at <= now
    )


def warn_due(clock: SlaClock, calendar: Calendar, at: datetime, percent: int) -> bool:
    """Whether a running, unwarned, unbreached clock has used ``percent`` of its
    target by ``at`` (in the calendar the clock runs on)."""
    if not clock.running or clock.breached_at is not None or clock.warned_at is not None:
        return False
    assert clock.due_at is not None
    left = business_ms_between(calendar, at, clock.due_at) if at < clock.due_at else 0
    return (clock.target_ms - left) * 100 >= clock.target_ms * percent


def warn_clock(clock: SlaClock, at: datetime) -> SlaClock:
    """Latch the warning; a second call keeps the first instant."""
    if clock.warned_at is not None:
        return clock
    return clock.model_copy(update={"warned_at": at})


def breach_clock(clock: SlaClock, at: datetime) -> SlaClock:
    """Latch the breach; a second call keeps the first instant."""
    if clock.breached_at is not None:
        return clock
    return clock.model_copy(update={"breached_at": at})


__all__ = [
    "DEFAULT_PAUSED_STATES",
    "DEFAULT_TARGETS",
    "ClockBasis",
    "PolicyChoice",
    "PolicyMatcher",
    "SlaClock",
    "SlaPolicy",
    "SlaTarget",
    "SlaTargets",
    "breach_clock",
    "breach_due",
    "fulfil_clock",
    "idle_clock",
    "pause_clock",
    "rebase_clock",
    "remaining_ms",
    "resume_clock",
    "retarget_clock",
    "solve_resolution",
    "start_clock",
    "warn_clock",
    "warn_due",
]
