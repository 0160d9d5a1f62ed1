"""Summary cells: the summary's counts and duration histograms kept per creation day.

The analytics summary reports, over the tickets opened in a range of days, counts
(tickets, solved, SLA met, reopened, one-touch) and the median and p90 of four
durations, in total and per group. Sorting every ticket of the range per percentile
costs in proportion to the tickets; these cells cost in proportion to the days.

A cell is ``(dim, span, start_day, key)``: the tickets opened in the ``span`` days from
``start_day`` whose group ``dim`` (``all``, ``priority``, ``source``, ``assignee`` or
``field.<key>``) is ``key`` now. It holds one row per ``(metric, bucket)``: a counter
(bucket 0) or a histogram bucket of a duration. Spans are 1, 4, 16, 64 and 256 days,
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
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, date
from typing import Any

SPANS = (256, 64, 16, 4, 1)
"""Cell spans in days, largest first (each divides the next larger)."""

SUB_BITS = 5
RELATIVE_ERROR = 1 / 2 ** (SUB_BITS + 1)
"""Largest error of a reported percentile, relative to the exact one (1/64: 1.6 %)."""

METRICS = ("first_reply_ms", "first_reply_business_ms", "resolution_ms",
           "resolution_open_ms")
"""Histogram metrics: ``metric`` 0..3, in this order."""

COUNTERS = ("tickets", "solved", "met_first_response", "met_next_reply", "met_resolution",
            "ever_solved", "reopened", "one_touch")
"""Counters: ``metric`` 10..17, in this order, bucket 0."""
COUNTER_BASE = 10

HELD = ""
"""The key under which a ``field.<key>`` dim counts every ticket holding a value (an
option's value is never empty): tickets without one are ``all`` less these."""

Cell = tuple[date, str, str, int, int]
"""(creation day, dim, key, metric, bucket)."""


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
                 ) -> Iterator[Cell]:
    """The cells a ticket's row (an ``analytics_tickets`` row as now) counts in, once
    each (twice if a multiselect holds an option twice, as the exact statement does)."""
    day = row.created_at.astimezone(UTC).date()
    entries: list[tuple[int, int]] = []
    for i, name in enumerate(METRICS):
        value = getattr(row, name)
        if value is not None:
            entries.append((i, bucket(value)))
    solved = row.resolution_ms is not None
    for i, counted in enumerate((
            True, solved, row.breaches_first_response == 0, row.breaches_next_reply == 0,
            row.breaches_resolution == 0, row.solves > 0, row.solves > 0 and row.reopens > 0,
            solved and row.public_agent_replies == 1)):
        if counted:
            entries.append((COUNTER_BASE + i, 0))
    groups = [("all", "all"), ("priority", row.priority), ("source", row.source),
              ("assignee", row.assignee or "none")]
    for key in sorted(field_keys & fields.keys()):
        texts = field_texts(fields[key])
        if texts:
            groups.append((f"field.{key}", HELD))
            groups.extend((f"field.{key}", text) for text in texts)
    for dim, key in groups:
        for metric, b in entries:
            yield day, dim, key, metric, b


def delta(before: Iterable[Cell], after: Iterable[Cell]) -> Counter[Cell]:
    """``after`` less ``before``, without the cells that did not change."""
    moved: Counter[Cell] = Counter(after)
    moved.subtract(before)
    return Counter({cell: n for cell, n in moved.items() if n})


def spread(cells: Mapping[Cell, int]) -> list[list[Any]]:
    """Each day's cell counted in the cell of every span that holds the day, as column
    lists (span, start_day, dim, key, metric, bucket, n) sorted by key."""
    total: Counter[tuple[int, date, str, str, int, int]] = Counter()
    for (day, dim, key, metric, b), n in cells.items():
        number = day.toordinal()
        for span in SPANS:
            total[(span, date.fromordinal(number - number % span), dim, key, metric, b)] += n
    columns: list[list[Any]] = [[] for _ in range(7)]
    for cell, n in sorted(total.items()):
        if n:
            for column, value in zip(columns, (*cell, n), strict=True):
                column.append(value)
    return columns


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


def percentile(histogram: Mapping[int, int], fraction: float) -> int | None:
    """The nearest-rank percentile (``percentile_disc``) of a histogram, as its bucket's
    middle; None when it is empty."""
    total = sum(histogram.values())
    if total <= 0:
        return None
    # percentile_disc: the first value whose cumulative share reaches the fraction.
    rank = max(1, math.ceil(fraction * total))
    seen = 0
    for b in sorted(histogram):
        seen += histogram[b]
        if seen >= rank:
            return middle(b)
    return middle(max(histogram))
