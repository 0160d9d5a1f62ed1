"""Summary cells: the summary's counts and duration histograms kept per creation day.

The analytics summary reports, over the tickets opened in a range of days, counts
(tickets, solved, SLA met, reopened, one-touch, deflected, periodic updates, rated
and rated good, requester wait and agent work measured and met) and the median and p90
of six durations, in total and per group.
Sorting every ticket of the range per percentile costs in proportion to the tickets;
these cells cost in proportion to the days.

A cell is ``(dim, span, start_day, key)``: the tickets opened in the ``span`` days from
``start_day`` whose group ``dim`` (``all``, ``priority``, ``source``, ``assignee`` or
``field.<key>``) is ``key`` now. It holds the summary's counters, and each duration's
histogram as an int array indexed by bucket. Spans are 1, 4, 16, 64 and 256 days,
aligned on day numbers, so any range of days is covered by at most a few cells of
each span and a year reads some twenty cells per group rather than every ticket.

A ticket's contribution follows its row as it is now (its priority, assignee and field
values now, as the summary groups it); a batch writes the difference between each
ticket's contribution after the batch and before, so counts move from one group to
another when a ticket changes group.

Durations go into log-linear buckets: values below ``2 ** (SUB_BITS + 1)`` ms exactly,
larger ones in ``2 ** SUB_BITS`` buckets per power of two. Counts are exact, so the
bucket that holds the nearest-rank percentile is exact; the value reported is the
bucket's middle, within ``RELATIVE_ERROR`` of the ticket's value.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date
from typing import Any

SPANS = (256, 64, 16, 4, 1)
"""Cell spans in days, largest first (each divides the next larger)."""

SUB_BITS = 4
RELATIVE_ERROR = 1 / 2 ** (SUB_BITS + 1)
"""Largest error of a reported percentile, relative to the exact one (1/32: 3.1 %)."""

METRICS = ("first_reply_ms", "first_reply_business_ms", "resolution_ms",
           "resolution_open_ms", "requester_wait_ms", "agent_work_ms")
"""Durations kept as histograms, in the order of their columns."""

COUNTERS = ("tickets", "solved", "met_first_response", "met_next_reply", "met_resolution",
            "ever_solved", "reopened", "one_touch", "deflected", "measured_requester_wait",
            "met_requester_wait", "periodic_updates", "periodic_updates_met", "rated",
            "rated_good", "measured_agent_work", "met_agent_work")
"""Counters, in the order of their columns."""

HELD = ""
"""The key under which a ``field.<key>`` dim counts every ticket holding a value (an
option's value is never empty): tickets without one are ``all`` less these."""

Group = tuple[date, str, str]
"""(creation day, dim, key)."""


@dataclass(slots=True)
class Counted:
    """What one ticket counts in each of its groups: its creation day, its groups, the
    counters it adds (``COUNTERS`` order: 0 or 1, but the periodic updates it
    counts) and the bucket of each duration it has (``METRICS`` order, None without it)."""

    day: date
    groups: list[tuple[str, str]]
    counters: tuple[int, ...]
    buckets: tuple[int | None, ...]


@dataclass(slots=True)
class Tally:
    """A cell's counters and histograms (bucket -> count), or a change to them."""

    counters: list[int] = field(default_factory=lambda: [0] * len(COUNTERS))
    histograms: list[Counter[int]] = field(
        default_factory=lambda: [Counter() for _ in METRICS])

    def add(self, counted: Counted, sign: int) -> None:
        for i, c in enumerate(counted.counters):
            self.counters[i] += sign * c
        for histogram, b in zip(self.histograms, counted.buckets, strict=True):
            if b is not None:
                histogram[b] += sign

    def merge(self, other: Tally) -> None:
        for i, c in enumerate(other.counters):
            self.counters[i] += c
        for mine, theirs in zip(self.histograms, other.histograms, strict=True):
            mine.update(theirs)

    def empty(self) -> bool:
        return not any(self.counters) and not any(any(h.values()) for h in self.histograms)


def bucket(ms: int) -> int:
    """The bucket of a duration: exact below ``2 ** (SUB_BITS + 1)``, then
    ``2 ** SUB_BITS`` buckets per power of two."""
    if ms < 1 << (SUB_BITS + 1):
        return max(ms, 0)
    shift = ms.bit_length() - 1 - SUB_BITS
    return (shift << SUB_BITS) + (ms >> shift)


def middle(b: int) -> int:
    """The value reported for a bucket: its middle (its value, when exact)."""
    if b < 1 << (SUB_BITS + 1):
        return b
    shift = (b >> SUB_BITS) - 1
    low = (b - (shift << SUB_BITS)) << shift
    return low + ((1 << shift) >> 1)


def field_texts(value: object) -> list[str]:
    """A field value as the texts it is counted and grouped under: a multiselect under
    each of its options, a checkbox as ``true``/``false``."""
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    return [] if value is None else [str(value)]


def contribution(row: Any, fields: Mapping[str, Any], field_keys: frozenset[str]
                 ) -> Counted:
    """What a ticket's row (an ``analytics_tickets`` row as now) counts, and where: in
    its groups now (a multiselect under each option it holds, twice if it holds one
    twice, as the exact statement counts it)."""
    solved = row.resolution_ms is not None
    groups = [("all", "all"), ("priority", row.priority), ("source", row.source),
              ("assignee", row.assignee or "none")]
    for key in sorted(field_keys & fields.keys()):
        texts = field_texts(fields[key])
        if texts:
            groups.append((f"field.{key}", HELD))
            groups.extend((f"field.{key}", text) for text in texts)
    return Counted(
        day=row.created_at.astimezone(UTC).date(), groups=groups,
        counters=tuple(int(c) for c in (
            True, solved, row.breaches_first_response == 0, row.breaches_next_reply == 0,
            row.breaches_resolution == 0, row.solves > 0, row.solves > 0 and row.reopens > 0,
            solved and row.public_agent_replies == 1,
            solved and row.public_agent_replies == 0 and row.staff_notes == 0,
            row.requester_wait_measured,
            row.requester_wait_measured and not row.requester_wait_missed,
            row.periodic_updates, row.periodic_updates_met,
            solved and row.rating is not None, solved and row.rating == "good",
            row.agent_work_measured, row.agent_work_measured and not row.agent_work_missed)),
        buckets=tuple(None if (v := getattr(row, name)) is None else bucket(v)
                      for name in METRICS))


class Tallies(dict[Group, Tally]):
    """Changes to cells by creation day and group, before they are spread over spans."""

    def add(self, counted: Counted, sign: int = 1) -> None:
        """Count (``sign`` 1) or uncount (-1) a ticket in its groups."""
        for dim, key in counted.groups:
            tally = self.get((counted.day, dim, key))
            if tally is None:
                tally = self[(counted.day, dim, key)] = Tally()
            tally.add(counted, sign)

    def move(self, before: Counted | None, after: Counted) -> None:
        """A ticket's row changed from ``before`` (None: new) to ``after``."""
        if before == after:
            return
        if before is not None:
            self.add(before, -1)
        self.add(after)

    def columns(self) -> list[list[Any]]:
        """Each day's change added to the cell of every span that holds the day, as
        column lists (span, start_day, dim, key, the counters, the histograms as array
        literals), in key order; cells that do not change are left out."""
        cells: dict[tuple[int, date, str, str], Tally] = {}
        for (day, dim, key), tally in self.items():
            number = day.toordinal()
            for span in SPANS:
                at = (span, date.fromordinal(number - number % span), dim, key)
                if at in cells:
                    cells[at].merge(tally)
                else:
                    cells[at] = Tally(list(tally.counters),
                                      [Counter(h) for h in tally.histograms])
        columns: list[list[Any]] = [[] for _ in range(4 + len(COUNTERS) + len(METRICS))]
        for at, tally in sorted(cells.items()):
            if tally.empty():
                continue
            values = (*at, *tally.counters, *(_literal(h) for h in tally.histograms))
            for column, value in zip(columns, values, strict=True):
                column.append(value)
        return columns


def _literal(histogram: Counter[int]) -> str:
    """A histogram as an int array literal indexed by bucket (up to its last non-zero)."""
    used = {b: n for b, n in histogram.items() if n}
    if not used:
        return "{}"
    dense = ["0"] * (max(used) + 1)
    for b, n in used.items():
        dense[b] = str(n)
    return "{" + ",".join(dense) + "}"


def cover(first: date, last: date) -> tuple[list[int], list[date]]:
    """The fewest aligned cells that cover ``first``..``last`` exactly: (spans,
    start days)."""
    spans: list[int] = []
    starts: list[date] = []
    day, end = first.toordinal(), last.toordinal()
    while day <= end:
        span = next(s for s in SPANS if day % s == 0 and day + s - 1 <= end)
        spans.append(span)
        starts.append(date.fromordinal(day))
        day += span
    return spans, starts


def percentile(histogram: Sequence[int], fraction: float) -> int | None:
    """The nearest-rank percentile (``percentile_disc``) of a histogram indexed by
    bucket, as its bucket's middle; None when it is empty."""
    total = sum(histogram)
    if total <= 0:
        return None
    # percentile_disc: the first value whose cumulative share reaches the fraction.
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for b, n in enumerate(histogram):
        seen += n
        if seen >= rank:
            return middle(b)
    return middle(len(histogram) - 1)
