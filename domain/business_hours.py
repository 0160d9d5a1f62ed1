"""Business-hours calendars and business-time arithmetic.

Rules, in one place:

* Shifts are wall-clock times in the calendar's IANA zone. A day's ``09:00``-``17:00`` is
  whatever real time passes between those wall-clock readings, so on a DST change a shift
  can be an hour shorter or longer (Berlin, spring-forward day, ``01:00``-``05:00`` is
  three real hours).
* ``end <= start`` means an overnight shift ending on the next day; ``"00:00"``-``"00:00"``
  is a whole day. ``"24:00"`` is accepted as an end meaning midnight. New settings may
  not say so (``inverted_shifts``: an end before its start is more often a mistake than
  a night shift, so the API refuses it and asks for two shifts, one ending at
  ``"24:00"``, one starting at ``"00:00"``); the arithmetic keeps reading documents
  stored before that rule as it always did.
* A wall-clock time that does not exist (inside a spring-forward gap) is taken as the
  instant the clocks jump; an ambiguous one (repeated in a fall-back) as its first
  occurrence.
* A holiday removes business time whose *local date* is that date: for an overnight
  shift that crosses into a holiday, the part after midnight is removed and the part
  before midnight kept (and the other way round when the shift starts on a holiday).
* Time is walked interval by interval, day by day, never minute by minute, and the walk
  is capped at ``MAX_SEARCH_DAYS``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import field_validator, model_validator

from domain.errors import ValidationFailed
from domain.frozen import Frozen

MAX_SEARCH_DAYS = 3 * 366
"""How far ``add_business_time`` walks before concluding there is no business time."""

_HHMM = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_DAY = timedelta(days=1)
_MS = timedelta(milliseconds=1)

# A parsed shift: start wall time, end wall time (None meaning midnight), overnight flag.
_Shift = tuple[time, time | None, bool]


class Calendar(Frozen):
    """When SLA clocks run: weekly wall-clock shifts in a time zone, minus holidays.

    ``weekly`` maps a weekday (0 = Monday .. 6 = Sunday) to ``(start, end)`` pairs in
    ``"HH:MM"``. A calendar without any shift is rejected: no clock could ever run.
    """

    timezone: str
    weekly: dict[int, list[tuple[str, str]]]
    holidays: list[date] = []

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value

    @field_validator("weekly")
    @classmethod
    def _valid_week(
        cls, value: dict[int, list[tuple[str, str]]]
    ) -> dict[int, list[tuple[str, str]]]:
        for weekday, shifts in value.items():
            if not 0 <= weekday <= 6:
                raise ValueError(f"weekday must be 0 (Monday) to 6 (Sunday), got {weekday}")
            for start, end in shifts:
                _parse(start, allow_24=False)
                _parse(end, allow_24=True)
        if not any(value.values()):
            raise ValueError("a calendar needs at least one shift")
        return value

    @model_validator(mode="after")
    def _sorted_holidays(self) -> Calendar:
        # Order does not matter to the arithmetic; a canonical order keeps events stable.
        object.__setattr__(self, "holidays", sorted(set(self.holidays)))
        return self

    @property
    def is_continuous(self) -> bool:
        """True when every instant is business time (no holidays, every day whole)."""
        if self.holidays:
            return False
        return all(
            any(_parse(s, False) == time(0) and _parse(e, True) in (time(0), None)
                for s, e in self.weekly.get(day, []))
            for day in range(7)
        )


def _parse(text: str, allow_24: bool) -> time | None:
    if allow_24 and text == "24:00":
        return None
    match = _HHMM.match(text)
    if match is None:
        raise ValueError(f"expected HH:MM, got {text!r}")
    return time(int(match[1]), int(match[2]))


def inverted_shifts(calendar: Calendar) -> list[tuple[int, int]]:
    """``(weekday, index)`` of every shift that does not end after it starts on its own
    day (``"24:00"`` is the end of the day), in weekday order."""
    out = []
    for weekday in sorted(calendar.weekly):
        for index, (start_text, end_text) in enumerate(calendar.weekly[weekday]):
            start, end = _parse(start_text, allow_24=False), _parse(end_text, allow_24=True)
            assert start is not None  # allow_24=False never yields None
            if end is not None and end <= start:
                out.append((weekday, index))
    return out


CALENDAR_24x7 = Calendar(timezone="UTC", weekly={d: [("00:00", "00:00")] for d in range(7)})
"""Calendar time: every instant counts. The default for tenants without business hours."""


def add_business_time(calendar: Calendar, start: datetime, ms: int) -> datetime:
    """Return the instant at which ``ms`` of business time has passed since ``start``.

    ``start`` must be aware; the result is in UTC. If ``start`` is outside business
    hours the clock starts at the next opening, so ``ms == 0`` yields that opening.
    Raises ``ValidationFailed`` if the budget is not used up within ``MAX_SEARCH_DAYS``.
    """
    start = _aware_utc(start)
    if ms < 0:
        raise ValidationFailed("business time to add must not be negative", field="ms")
    if calendar.is_continuous:
        return start + ms * _MS
    limit = start + MAX_SEARCH_DAYS * _DAY
    remaining = timedelta(milliseconds=ms)
    for begin, end in _intervals(calendar, start, limit):
        begin = max(begin, start)
        if end <= begin:
            continue
        if remaining <= end - begin:
            return begin + remaining
        remaining -= end - begin
    raise ValidationFailed(
        f"no business time within {MAX_SEARCH_DAYS} days of {start.isoformat()}",
        field="calendar",
    )


def business_ms_between(calendar: Calendar, a: datetime, b: datetime) -> int:
    """Milliseconds of business time in ``[a, b)``; 0 when ``b <= a``."""
    a, b = _aware_utc(a), _aware_utc(b)
    if b <= a:
        return 0
    if calendar.is_continuous:
        return (b - a) // _MS
    total = timedelta(0)
    for begin, end in _intervals(calendar, a, b):
        if begin >= b:
            break
        lo, hi = max(begin, a), min(end, b)
        if hi > lo:
            total += hi - lo
    return total // _MS


def _aware_utc(value: datetime) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationFailed("datetime must be timezone-aware")
    return value.astimezone(UTC)


def _intervals(
    calendar: Calendar, start: datetime, until: datetime
) -> Iterator[tuple[datetime, datetime]]:
    """Yield merged business intervals in UTC, in order, from the local day before
    ``start`` (an overnight shift of the previous day may cover ``start``) through the
    local day of ``until``; the last interval may reach past ``until``.

    Each local date contributes its own shifts clipped to
    midnight plus the after-midnight tails of the previous date's overnight shifts, so
    holidays can drop exactly the pieces dated on them.
    """
    zone = ZoneInfo(calendar.timezone)
    shifts = _parsed(calendar)
    holidays = set(calendar.holidays)
    day = start.astimezone(zone).date() - _DAY
    last = until.astimezone(zone).date()
    pending: tuple[datetime, datetime] | None = None
    while day <= last:
        pieces: list[tuple[datetime, datetime]] = []
        if day not in holidays:
            midnight_next = _to_utc(zone, day + _DAY, time(0))
            for opens, closes, overnight in shifts.get(day.weekday(), []):
                to_midnight = overnight or closes is None
                stop = midnight_next if to_midnight else _to_utc(zone, day, closes or time(0))
                pieces.append((_to_utc(zone, day, opens), stop))
            for _, closes, overnight in shifts.get((day - _DAY).weekday(), []):
                if overnight and closes is not None and closes != time(0):
                    pieces.append((_to_utc(zone, day, time(0)), _to_utc(zone, day, closes)))
        for begin, end in sorted(pieces):
            if end <= begin:
                continue
            if pending is None:
                pending = (begin, end)
            elif begin <= pending[1]:
                pending = (pending[0], max(pending[1], end))
            else:
                yield pending
                pending = (begin, end)
        day += _DAY
        # Flush once no later piece can touch it: everything from here starts at or
        # after the coming local midnight.
        if pending is not None and pending[1] < _to_utc(zone, day, time(0)):
            yield pending
            pending = None
    if pending is not None:
        yield pending


def _parsed(calendar: Calendar) -> dict[int, list[_Shift]]:
    out: dict[int, list[_Shift]] = {}
    for weekday, pairs in calendar.weekly.items():
        for start_text, end_text in pairs:
            begin = _parse(start_text, allow_24=False)
            end = _parse(end_text, allow_24=True)
            assert begin is not None  # allow_24=False never yields None
            overnight = end is not None and end <= begin
            out.setdefault(weekday, []).append((begin, end, overnight))
    return out


def _to_utc(zone: ZoneInfo, day: date, wall: time) -> datetime:
    """Convert a local wall-clock reading to UTC (first occurrence if repeated, the
    jump instant if skipped)."""
    local = datetime.combine(day, wall, tzinfo=zone)
    utc = local.astimezone(UTC)
    if utc.astimezone(zone).replace(tzinfo=None) == local.replace(tzinfo=None):
        return utc
    # Inside a spring-forward gap. fold=1 reads it with the offset after the jump and
    # lands before the transition; fold=0 lands after it. Bisect seconds between them
    # for the first instant whose offset is the post-jump one.
    lo = local.replace(fold=1).astimezone(UTC)
    hi = local.replace(fold=0).astimezone(UTC)
    lo, hi = min(lo, hi), max(lo, hi)
    after = hi.astimezone(zone).utcoffset()
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) // 2
        if mid.astimezone(zone).utcoffset() == after:
            hi = mid
        else:
            lo = mid
    return hi


__all__ = [
    "MAX_SEARCH_DAYS",
    "CALENDAR_24x7",
    "Calendar",
    "add_business_time",
    "business_ms_between",
    "inverted_shifts",
]
