"""Summary cells: buckets within the stated error, covers of ranges, nearest rank."""

from __future__ import annotations

import math
import random
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace

from projections import analytics_cells as cells


def test_small_durations_are_their_own_bucket_and_larger_ones_within_the_bound() -> None:
    exact = 2 ** (cells.SUB_BITS + 1)
    assert [cells.middle(cells.bucket(v)) for v in range(exact)] == list(range(exact))
    rng = random.Random(1)
    values = [*range(exact, 5000), *(rng.randrange(1, 10**11) for _ in range(20000)),
              2**40 - 1, 2**40]
    for v in values:
        assert abs(cells.middle(cells.bucket(v)) - v) <= cells.RELATIVE_ERROR * v, v
    # Buckets follow the values' order, so ranks over buckets are ranks over values.
    ordered = sorted(values)
    assert [cells.bucket(v) for v in ordered] == sorted(cells.bucket(v) for v in ordered)


def _nearest_rank(values: list[int], fraction: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def test_percentile_is_the_nearest_rank_within_the_bound() -> None:
    rng = random.Random(2)
    for n in (1, 2, 3, 10, 11, 99, 1000):
        values = [int(rng.lognormvariate(15, 2)) for _ in range(n)]
        counted = Counter(cells.bucket(v) for v in values)
        histogram = [counted.get(b, 0) for b in range(max(counted) + 1)]
        for fraction in (0.5, 0.9):
            exact = _nearest_rank(values, fraction)
            got = cells.percentile(histogram, fraction)
            assert got is not None and abs(got - exact) <= cells.RELATIVE_ERROR * exact
    # Small values are exact: 1, 2, 18 -> median 2, p90 18 (as percentile_disc).
    small = [0, 1, 1] + [0] * 15 + [1]
    assert cells.percentile(small, 0.5) == 2
    assert cells.percentile(small, 0.9) == 18
    assert cells.percentile([], 0.5) is None and cells.percentile([0, 0], 0.9) is None


def test_a_range_is_covered_exactly_by_few_aligned_cells() -> None:
    rng = random.Random(3)
    for _ in range(300):
        first = date(2026, 1, 1) + timedelta(days=rng.randrange(800))
        last = first + timedelta(days=rng.randrange(366))
        spans, starts = cells.cover(first, last)
        days = [s + timedelta(days=i) for span, s in zip(spans, starts, strict=True)
                for i in range(span)]
        assert days == [first + timedelta(days=i) for i in range((last - first).days + 1)]
        assert all(s.toordinal() % span == 0 for span, s in zip(spans, starts, strict=True))
        assert len(spans) <= 26


def _row(**kw: object) -> SimpleNamespace:
    base: dict[str, object] = dict(
        created_at=datetime(2026, 6, 1, 23, 30, tzinfo=UTC), priority="high", source="email",
        assignee=None, first_reply_ms=5, first_reply_business_ms=None, resolution_ms=None,
        resolution_open_ms=None, solves=0, reopens=0, public_agent_replies=1,
        breaches_first_response=0, breaches_next_reply=1, breaches_resolution=0,
        staff_notes=0, requester_wait_measured=False, requester_wait_missed=False,
        requester_wait_ms=None, periodic_updates=0, periodic_updates_met=0, rating=None,
        agent_work_measured=False, agent_work_missed=False, agent_work_ms=None)
    return SimpleNamespace(**{**base, **kw})


def test_a_ticket_counts_in_its_groups_now_and_moving_it_moves_its_counts() -> None:
    keys = frozenset({"plan", "areas"})
    fields = {"plan": "pro", "areas": ["a", "b"], "order_no": 7}
    before = cells.contribution(_row(), fields, keys)
    assert set(before.groups) == {
        ("all", "all"), ("priority", "high"), ("source", "email"), ("assignee", "none"),
        ("field.plan", cells.HELD), ("field.plan", "pro"), ("field.areas", cells.HELD),
        ("field.areas", "a"), ("field.areas", "b")}
    # tickets, met first response and met resolution; first reply 5 ms.
    assert before.counters == (1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    # Deflected (the ninth counter): solved with no public agent reply and no staff note;
    # a row whose notes were never counted (None, before migration 0651) is not.
    solved = {"resolution_ms": 9, "solves": 1, "public_agent_replies": 0}
    assert [cells.contribution(_row(**solved, staff_notes=n), {}, keys).counters[8]
            for n in (0, 1, None)] == [1, 0, 0]
    assert cells.contribution(_row(**{**solved, "public_agent_replies": 1}), {},
                              keys).counters[7:9] == (1, 0)
    # Rated and rated good (before agent work's two): a rating counts on a solved
    # ticket only.
    assert [cells.contribution(_row(**kw, rating=r), {}, keys).counters[-4:-2]
            for kw in (solved, {}) for r in ("good", "bad", None)] == [
        (1, 1), (1, 0), (0, 0), (0, 0), (0, 0), (0, 0)]
    assert before.buckets == (5, None, None, None, None, None)
    # Agent work (the last two counters and the last histogram): measured, met unless
    # missed, and the time worked by the latest solve.
    worked = {"agent_work_measured": True, "agent_work_ms": 40}
    assert [cells.contribution(_row(**worked, agent_work_missed=m), {}, keys).counters[-2:]
            for m in (False, True)] == [(1, 1), (1, 0)]
    assert cells.contribution(_row(**worked), {}, keys).buckets[-1] == cells.bucket(40)
    assert before.day == date(2026, 6, 1)

    tallies = cells.Tallies()
    tallies.move(None, before)
    tallies.move(before, before)  # no change: nothing moves
    columns = tallies.columns()
    assert len(columns[0]) == len(before.groups) * len(cells.SPANS)
    assert set(columns[-6]) == {"{0,0,0,0,0,1}"} and set(columns[-1]) == {"{}"}

    moved = cells.Tallies()
    moved.move(before, cells.contribution(_row(priority="low"), fields, keys))
    spans, starts, dims, group_keys, tickets, *_ = moved.columns()
    assert sorted(set(zip(dims, group_keys, tickets, strict=True))) == [("priority", "high", -1),
                                                          ("priority", "low", 1)]
    assert sorted(set(spans)) == sorted(cells.SPANS)
    assert all(date(2026, 6, 1).toordinal() - s.toordinal() < span
               for span, s in zip(spans, starts, strict=True))
