"""Business-time arithmetic: DST, holidays, overnight shifts, long spans."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest
from pydantic import ValidationError

from domain.business_hours import (
    Calendar,
    CALENDAR_24x7,
    add_business_time,
    business_ms_between,
    inverted_shifts,
)
from domain.errors import ValidationFailed

H = 3_600_000
M = 60_000


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def weekdays(zone: str, start: str = "09:00", end: str = "17:00") -> Calendar:
    return Calendar(timezone=zone, weekly={d: [(start, end)] for d in range(5)})


def every_day(zone: str, start: str, end: str) -> Calendar:
    return Calendar(timezone=zone, weekly={d: [(start, end)] for d in range(7)})


def test_24x7_is_plain_elapsed_time() -> None:
    start = utc(2026, 3, 28, 23, 30)
    assert add_business_time(CALENDAR_24x7, start, 5 * H) == start + timedelta(hours=5)
    assert business_ms_between(CALENDAR_24x7, start, start + timedelta(days=40)) == 40 * 24 * H


def test_whole_days_in_a_dst_zone_equal_elapsed_time() -> None:
    cal = every_day("Europe/Berlin", "00:00", "24:00")
    a, b = utc(2026, 3, 28), utc(2026, 3, 30)
    assert business_ms_between(cal, a, b) == 48 * H


def test_inside_hours_adds_directly() -> None:
    cal = weekdays("UTC")
    assert add_business_time(cal, utc(2026, 6, 1, 10), 2 * H) == utc(2026, 6, 1, 12)


def test_start_outside_hours_waits_for_next_opening() -> None:
    cal = weekdays("UTC")
    # Saturday evening: the clock starts Monday 09:00.
    assert add_business_time(cal, utc(2026, 6, 6, 20), 0) == utc(2026, 6, 8, 9)
    assert add_business_time(cal, utc(2026, 6, 6, 20), 30 * M) == utc(2026, 6, 8, 9, 30)
    # Before opening on a weekday.
    assert add_business_time(cal, utc(2026, 6, 1, 7), H) == utc(2026, 6, 1, 10)


def test_spills_over_to_next_business_day_and_weekend() -> None:
    cal = weekdays("UTC")
    # Friday 16:00 + 2h -> Monday 10:00.
    assert add_business_time(cal, utc(2026, 6, 5, 16), 2 * H) == utc(2026, 6, 8, 10)
    assert business_ms_between(cal, utc(2026, 6, 5, 16), utc(2026, 6, 8, 10)) == 2 * H


def test_multi_week_span() -> None:
    cal = weekdays("Europe/Berlin")
    # 120 business hours = 15 business days = 3 weeks from Monday 09:00 local.
    start = utc(2026, 6, 1, 7)  # 09:00 CEST
    due = add_business_time(cal, start, 120 * H)
    assert due == utc(2026, 6, 19, 15)  # Friday 17:00 CEST of week three
    assert business_ms_between(cal, start, due) == 120 * H
    assert business_ms_between(cal, start, start + timedelta(weeks=10)) == 10 * 40 * H


def test_berlin_spring_forward_night_shift_is_three_real_hours() -> None:
    cal = every_day("Europe/Berlin", "01:00", "05:00")
    day_start, day_end = utc(2026, 3, 28, 22), utc(2026, 3, 29, 22)
    assert business_ms_between(cal, day_start, day_end) == 3 * H
    # 01:00 CET is 00:00 UTC; three real hours later is 05:00 CEST.
    assert add_business_time(cal, day_start, 3 * H) == utc(2026, 3, 29, 3)


def test_berlin_fall_back_night_shift_is_five_real_hours() -> None:
    cal = every_day("Europe/Berlin", "01:00", "05:00")
    assert business_ms_between(cal, utc(2026, 10, 24, 22), utc(2026, 10, 25, 23)) == 5 * H


def test_shift_starting_in_the_spring_gap_starts_when_clocks_jump() -> None:
    cal = every_day("Europe/Berlin", "02:30", "04:00")
    # 02:30 does not exist on 29 March; the shift runs from the jump (03:00 CEST).
    assert business_ms_between(cal, utc(2026, 3, 28, 22), utc(2026, 3, 29, 22)) == H
    assert add_business_time(cal, utc(2026, 3, 28, 22), 0) == utc(2026, 3, 29, 1)


def test_new_york_dst_changes_on_an_office_day() -> None:
    cal = every_day("America/New_York", "00:00", "12:00")
    # 8 March 2026: clocks jump 02:00 -> 03:00, so the morning has 11 real hours.
    assert business_ms_between(cal, utc(2026, 3, 8, 5), utc(2026, 3, 9, 4)) == 11 * H
    # 1 November 2026: 01:00-02:00 happens twice, 13 real hours.
    assert business_ms_between(cal, utc(2026, 11, 1, 4), utc(2026, 11, 2, 5)) == 13 * H
    # 09:00-17:00 is unaffected by the night-time jump and sits at the new offset.
    office = weekdays("America/New_York")
    assert add_business_time(office, utc(2026, 3, 6, 22), 0) == utc(2026, 3, 9, 13)


def test_holiday_removes_the_whole_day() -> None:
    cal = Calendar(
        timezone="Europe/Berlin",
        weekly={d: [("09:00", "17:00")] for d in range(5)},
        holidays=[date(2026, 12, 25)],
    )
    # Thursday 24 Dec 16:00 CET + 2h: Friday is a holiday, so Monday 10:00 CET.
    assert add_business_time(cal, utc(2026, 12, 24, 15), 2 * H) == utc(2026, 12, 28, 9)


def test_overnight_shift_spans_midnight() -> None:
    cal = every_day("UTC", "22:00", "06:00")
    assert business_ms_between(cal, utc(2026, 6, 1, 12), utc(2026, 6, 2, 12)) == 8 * H
    assert add_business_time(cal, utc(2026, 6, 1, 23), 2 * H) == utc(2026, 6, 2, 1)
    assert add_business_time(cal, utc(2026, 6, 1, 5), 2 * H) == utc(2026, 6, 1, 23)


def test_overnight_shift_only_on_friday_runs_into_saturday() -> None:
    cal = Calendar(timezone="UTC", weekly={4: [("22:00", "06:00")]})
    # Friday 5 June 2026 22:00 to Saturday 06:00.
    assert business_ms_between(cal, utc(2026, 6, 1), utc(2026, 6, 8)) == 8 * H
    assert add_business_time(cal, utc(2026, 6, 6, 5), 2 * H) == utc(2026, 6, 12, 23)


def test_overnight_shift_into_a_holiday_keeps_only_the_part_before_midnight() -> None:
    cal = Calendar(
        timezone="UTC",
        weekly={d: [("22:00", "06:00")] for d in range(7)},
        holidays=[date(2026, 6, 2)],
    )
    # 1 June 22:00-24:00 counts, 2 June 00:00-06:00 and 22:00-24:00 do not,
    # 3 June 00:00-06:00 (tail of the holiday's shift, dated 3 June) does.
    assert business_ms_between(cal, utc(2026, 6, 1, 12), utc(2026, 6, 3, 12)) == 8 * H


def test_overlapping_shifts_are_not_counted_twice() -> None:
    cal = Calendar(timezone="UTC", weekly={0: [("09:00", "13:00"), ("12:00", "17:00")]})
    assert business_ms_between(cal, utc(2026, 6, 1), utc(2026, 6, 2)) == 8 * H


def test_between_is_zero_for_reversed_or_empty_ranges() -> None:
    cal = weekdays("UTC")
    assert business_ms_between(cal, utc(2026, 6, 2), utc(2026, 6, 1)) == 0
    assert business_ms_between(cal, utc(2026, 6, 6), utc(2026, 6, 7)) == 0


def test_add_and_between_agree() -> None:
    cal = Calendar(
        timezone="America/New_York",
        weekly={0: [("08:00", "12:00"), ("13:00", "18:00")], 3: [("20:00", "02:00")]},
        holidays=[date(2026, 3, 12)],
    )
    start = utc(2026, 3, 1, 15, 17)
    for ms in (0, 1, 59 * M, 9 * H, 20 * H + 123, 100 * H):
        assert business_ms_between(cal, start, add_business_time(cal, start, ms)) == ms


def test_no_business_time_within_the_search_cap_fails() -> None:
    # Only Mondays, and every Monday for years is a holiday.
    mondays = [date(2026, 6, 1) + timedelta(weeks=w) for w in range(200)]
    cal = Calendar(timezone="UTC", weekly={0: [("09:00", "17:00")]}, holidays=mondays)
    with pytest.raises(ValidationFailed):
        add_business_time(cal, utc(2026, 5, 30), H)


def test_naive_datetimes_are_rejected() -> None:
    with pytest.raises(ValidationFailed):
        add_business_time(CALENDAR_24x7, datetime(2026, 6, 1), H)
    with pytest.raises(ValidationFailed):
        add_business_time(CALENDAR_24x7, utc(2026, 6, 1), -1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timezone": "UTC", "weekly": {}},
        {"timezone": "UTC", "weekly": {0: [], 1: []}},
        {"timezone": "Mars/Olympus", "weekly": {0: [("09:00", "17:00")]}},
        {"timezone": "UTC", "weekly": {7: [("09:00", "17:00")]}},
        {"timezone": "UTC", "weekly": {0: [("9:00", "17:00")]}},
        {"timezone": "UTC", "weekly": {0: [("09:00", "25:00")]}},
        {"timezone": "UTC", "weekly": {0: [("24:00", "17:00")]}},
    ],
)
def test_invalid_calendars_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Calendar.model_validate(kwargs)


def test_calendar_accepts_json_shaped_input() -> None:
    cal = Calendar.model_validate(
        {"timezone": "UTC", "weekly": {"0": [["09:00", "17:00"]]}, "holidays": ["2026-06-01"]}
    )
    assert cal.weekly == {0: [("09:00", "17:00")]}
    assert cal.holidays == [date(2026, 6, 1)]


def test_inverted_shifts_are_those_that_do_not_end_after_they_start() -> None:
    cal = Calendar(timezone="UTC", weekly={
        0: [("09:00", "17:00"), ("22:00", "06:00")], 2: [("00:00", "24:00")],
        5: [("12:00", "12:00")], 6: [("00:00", "00:00")]})
    assert inverted_shifts(cal) == [(0, 1), (5, 0), (6, 0)]
