"""The calendar aggregate: named business hours in a time zone, with holidays, shared
by SLA policies (``domain.target_policy``).

A calendar has its own stream (the stream id is the calendar id): ``CalendarCreated``
then ``CalendarChanged`` with the parts that changed, and ``CalendarDeleted`` at its
end (once no policy runs on it). Its hours at every version stay
readable (``sla_calendar_versions``), because a clock records the calendar version it
runs on and its verdicts are computed on that one, never on the calendar as it is now.
The arithmetic is ``domain.business_hours``'s; here are the rules of new hours: a
known zone, weekdays 0-6, shifts that end after they start and do not overlap, and
holidays that are real dates of the years 1-9999. Each refusal names its part
(``hours.weekly.0.1``, ``hours.holidays.2``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from pydantic import ValidationError

from domain.aggregate import BaseCommand, ChangedParts, NamedState
from domain.business_hours import Calendar
from domain.errors import AlreadyExists, NotFound, ValidationFailed
from domain.events import Event
from domain.evolution import StreamSteps
from domain.validation import check_name
from domain.values import UtcDatetime
from domain.workflow_events import (
    CalendarChanged,
    CalendarChanges,
    CalendarCreated,
    CalendarDeleted,
    NewCalendar,
)

CALENDAR_NAME_MAX = 100
HOLIDAYS_MAX = 1000
CALENDARS_MAX = 100
_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DATE = re.compile(r"^(-?\d+)-(\d{2})-(\d{2})$")


class SlaCalendar(NamedState):
    """A calendar as of ``version`` events."""

    hours: Calendar
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateCalendar(NewCalendar, BaseCommand):
    """Create a calendar: its name and business hours."""


class ChangeCalendar(CalendarChanges, BaseCommand):
    """Change the name or the hours; None leaves that part as it is."""


def _minutes(text: str, where: str, *, end: bool) -> int:
    if end and text == "24:00":
        return 24 * 60
    match = _HHMM.match(text)
    if match is None:
        raise ValidationFailed(f"expected HH:MM, got {text!r}", field=where)
    return int(match[1]) * 60 + int(match[2])


def _holiday(text: str, where: str) -> date:
    match = _DATE.match(text)
    if match is None:
        raise ValidationFailed(f"a holiday is a date YYYY-MM-DD, not {text!r}", field=where)
    year = int(match[1])
    if not 1 <= year <= 9999:
        raise ValidationFailed(f"a holiday's year is 1 to 9999, not {year}", field=where)
    try:
        return date(year, int(match[2]), int(match[3]))
    except ValueError:
        raise ValidationFailed(f"{text!r} is not a date", field=where) from None


def make_hours(timezone: str, weekly: Mapping[str, Sequence[Sequence[str]]],
               holidays: Iterable[str], where: str = "hours") -> Calendar:
    """Business hours from their wire parts, every rule checked; ``ValidationFailed``
    names the part (``hours.weekly.2.0``: Wednesday's first shift)."""
    days: dict[int, list[tuple[str, str]]] = {}
    for key, shifts in weekly.items():
        if key not in {str(d) for d in range(7)}:
            raise ValidationFailed("a weekday is 0 (Monday) to 6 (Sunday)",
                                   field=f"{where}.weekly.{key}")
        spans: list[tuple[int, int, int]] = []
        for i, shift in enumerate(shifts):
            at = f"{where}.weekly.{key}.{i}"
            if len(shift) != 2:
                raise ValidationFailed("a shift is [start, end]", field=at)
            start = _minutes(shift[0], at, end=False)
            stop = _minutes(shift[1], at, end=True)
            if stop <= start:
                raise ValidationFailed(f"a shift must end after it starts, not "
                                       f"{shift[0]}-{shift[1]}; a shift across midnight is "
                                       "two shifts, one ending at 24:00", field=at)
            spans.append((start, stop, i))
        spans.sort()
        for (_, stop, _), (start, _, j) in itertools.pairwise(spans):
            if start < stop:
                raise ValidationFailed("this shift overlaps another of the same day",
                                       field=f"{where}.weekly.{key}.{j}")
        if shifts:
            days[int(key)] = [(s[0], s[1]) for s in shifts]
    if not days:
        raise ValidationFailed("a calendar needs at least one shift", field=f"{where}.weekly")
    given = list(holidays)
    if len(given) > HOLIDAYS_MAX:
        raise ValidationFailed(f"at most {HOLIDAYS_MAX} holidays", field=f"{where}.holidays")
    dates = [_holiday(h, f"{where}.holidays.{i}") for i, h in enumerate(given)]
    try:
        return Calendar(timezone=timezone, weekly=days, holidays=dates)
    except ValidationError as exc:
        # Only the zone is left to refuse: every other part was checked above.
        raise ValidationFailed(f"unknown time zone {timezone!r}",
                               field=f"{where}.timezone") from exc


def check_calendar_name(name: str) -> str:
    return check_name(name, CALENDAR_NAME_MAX)


def decide_calendar(command: CreateCalendar | ChangeCalendar,
                    state: SlaCalendar | None) -> list[Event]:
    """The events of a command on a calendar; a change to nothing returns ``[]``."""
    if isinstance(command, CreateCalendar):
        if state is not None:
            raise AlreadyExists("the calendar already exists")
        return [CalendarCreated(calendar_id=command.calendar_id,
                                name=check_calendar_name(command.name), hours=command.hours,
                                at=command.at)]
    if state is None:
        raise NotFound("the calendar does not exist")
    changes = ChangedParts(state)
    changes.given("name", command.name, check_calendar_name)
    changes.given("hours", command.hours)
    return changes.events(CalendarChanged, command.at)


def decide_delete_calendar(state: SlaCalendar, at: UtcDatetime) -> list[Event]:
    """Delete a calendar (the handler refuses one a policy runs on); its hours at every
    version stay, for the clocks that ran on them."""
    return [CalendarDeleted(at=at)]


_STEPS = StreamSteps("a calendar stream", SlaCalendar, CalendarCreated, "calendar_id",
                     (CalendarChanged, CalendarDeleted))
evolve_calendar = _STEPS.evolve
fold_calendar = _STEPS.fold


__all__ = [
    "CALENDARS_MAX",
    "CALENDAR_NAME_MAX",
    "ChangeCalendar",
    "CreateCalendar",
    "SlaCalendar",
    "check_calendar_name",
    "decide_calendar",
    "decide_delete_calendar",
    "evolve_calendar",
    "fold_calendar",
    "make_hours",
]
