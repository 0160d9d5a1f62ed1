"""The time pass's two shortcuts agree with the slow way: ``latest_start`` with
``elapsed`` at every start, and ``allowed_values`` with ``holds`` on every ticket
state, priority and channel."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, date, datetime, timedelta

from domain.business_hours import Calendar, CALENDAR_24x7
from domain.rule_parts import Condition, Facts, TimeTrigger, allowed_values, holds
from domain.values import Priority, Source, TicketState
from handlers.rule_timers import elapsed, latest_start

WEEK = Calendar(timezone="Europe/Berlin", weekly={d: [("09:00", "17:00")] for d in range(5)},
                holidays=[date(2026, 6, 8)])
NOW = datetime(2026, 6, 9, 15, 1, tzinfo=UTC)


def test_latest_start_is_the_last_start_whose_clock_has_run() -> None:
    rng = random.Random(7)
    for hours, business, calendar in [(8, True, WEEK), (40, True, WEEK), (30, False, WEEK),
                                      (3, True, CALENDAR_24x7)]:
        time = TimeTrigger(since="pending", hours=hours, business=business)
        last = latest_start(time, calendar, NOW)
        assert last is not None
        assert elapsed(time, calendar, last, NOW)
        assert not elapsed(time, calendar, last + timedelta(microseconds=1), NOW)
        for _ in range(50):
            start = NOW - timedelta(minutes=rng.randrange(0, 60 * 24 * 20))
            assert elapsed(time, calendar, start, NOW) == (start <= last), (hours, start)


def test_allowed_values_leave_out_only_tickets_that_cannot_match() -> None:
    conditions = (Condition(field="priority", op="at_least", value="high"),
                  Condition(field="state", op="is_not", value="pending"),
                  Condition(field="channel", op="in", value=["email", "portal"]))
    allowed = allowed_values(conditions)
    for state, priority, channel in itertools.product(TicketState, Priority, Source):
        facts = Facts(event_type="", state=state, priority=priority, channel=channel,
                      group_id=None, assignee_id=None, organization_id=None,
                      tags=frozenset(), fields={}, public_customer_reply=False,
                      business_hours=False)
        kept = all(values is None or getattr(facts, name).value in values
                   for name, values in allowed.items())
        assert kept == holds(conditions, facts), (state, priority, channel)
    assert allowed_values(()) == {"state": None, "priority": None, "channel": None}
