"""Queries over the analytics read models, each answered with how fresh it is.

Every read runs in one read-only REPEATABLE READ transaction under the tenant's
context, so the rows and the ``as_of_seq`` they are reported with come from the same
snapshot.
"""

from __future__ import annotations

import operator
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from projections import analytics_cells as cells
from projections.admin import Freshness, freshness
from projections.analytics import AnalyticsProjection

Q = load_queries(Path(__file__).with_name("queries.sql"))
NAME = AnalyticsProjection.name
GROUPS = ("priority", "source", "assignee", "group", "day", "organization")
AGE_BUCKETS = ("lt_1d", "1d_3d", "3d_7d", "gte_7d")


@asynccontextmanager
async def snapshot(store: EventStore, tenant_id: TenantId) -> AsyncIterator[
        tuple[asyncpg.Connection, dict[str, Any]]]:
    """A consistent read of the tenant's analytics and the freshness to report."""
    async with store.unit_of_work(tenant_id, readonly=True, isolation="repeatable_read") as s:
        # No JIT for these reads: a year of tickets costs enough to cross
        # jit_above_cost, and compiling took longer than the statement itself (1.8 s
        # in one EXPLAIN ANALYZE of the summary at 100,000 tickets; 200-300 ms without).
        await s.conn.execute("SET LOCAL jit = off")
        fresh = await freshness(s.conn, NAME, tenant_id)
        yield s.conn, {"as_of_seq": fresh.as_of_seq, "lag": fresh.lag,
                       "rebuilding": fresh.rebuilding}


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def _group(row: Mapping[str, Any]) -> dict[str, Any]:
    n = row["tickets"]
    return {
        "tickets": n,
        "solved": row["solved"],
        "first_reply_ms": {"median": row["first_reply_p50"], "p90": row["first_reply_p90"]},
        "first_reply_business_ms": {"median": row["first_reply_business_p50"],
                                    "p90": row["first_reply_business_p90"]},
        "resolution_ms": {"median": row["resolution_p50"], "p90": row["resolution_p90"]},
        "resolution_open_ms": {"median": row["resolution_open_p50"],
                               "p90": row["resolution_open_p90"]},
        "requester_wait_ms": {"median": row["requester_wait_p50"],
                              "p90": row["requester_wait_p90"]},
        "agent_work_ms": {"median": row["agent_work_p50"], "p90": row["agent_work_p90"]},
        "sla_achievement": {
            "first_response": _rate(row["met_first_response"], n),
            "next_reply": _rate(row["met_next_reply"], n),
            "resolution": _rate(row["met_resolution"], n),
            # Over what was measured: the tickets whose requester-wait (or agent-work)
            # clock ran, and the periodic updates judged (docs/analytics.md).
            "periodic_update": _rate(row["periodic_updates_met"], row["periodic_updates"]),
            "requester_wait": _rate(row["met_requester_wait"],
                                    row["measured_requester_wait"]),
            "agent_work": _rate(row["met_agent_work"], row["measured_agent_work"]),
        },
        "reopen_rate": _rate(row["reopened"], row["ever_solved"]),
        "one_touch_rate": _rate(row["one_touch"], row["solved"]),
        "deflected": row["deflected"],
        "deflection_rate": _rate(row["deflected"], row["solved"]),
        # Over the solved tickets, by their latest rating (docs/analytics.md).
        "satisfaction": {"rated": row["rated"], "good": row["rated_good"],
                         "score": _rate(row["rated_good"], row["rated"]),
                         "response_rate": _rate(row["rated"], row["solved"])},
        "key": row["key"],
        "name": row.get("name"),
    }


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    """The instants ``[start 00:00, the day after end 00:00)`` in UTC. The day after
    9999-12-31 is past what a datetime can hold: the bound is then the last instant
    (asyncpg sends it as ``infinity``), which leaves out nothing of that day."""
    upper = (datetime.max.replace(tzinfo=UTC) if end == date.max else
             datetime.combine(end + timedelta(days=1), time(0), UTC))
    return datetime.combine(start, time(0), UTC), upper


# Every answer is built in its response model's field order (api.schemas.analytics),
# freshness first: it is sent as built, and tests compare its bytes with the model's.


FIELD_GROUP = "field."
"""``group_by`` prefix of a ticket field's key (checkbox, dropdown, multiselect)."""


def _grouping(group_by: str) -> tuple[str, str | None]:
    if group_by.startswith(FIELD_GROUP):
        return "field", group_by.removeprefix(FIELD_GROUP)
    return group_by, None


EXACT_UP_TO = 5000
"""Ranges with at most this many tickets are summarised exactly from the ticket rows
(sorting so few costs little); larger ones from the summary cells."""

_CELL_GROUPS = frozenset({"priority", "source", "assignee", "field"})
"""Groupings kept in the summary cells (``day`` reads the one-day cells of ``all``).
``group`` and ``organization`` are read from the inline tickets rows, so a ticket
moved counts there at once: those are always summarised from the ticket rows."""


async def summary(store: EventStore, tenant_id: TenantId, start: date, end: date,
                  group_by: str | None) -> dict[str, Any]:
    """Tickets created on ``start``..``end`` (UTC days, inclusive), in total and by group
    (``field.<key>``: by the ticket's value of that field now). Over more than
    ``EXACT_UP_TO`` tickets, from the summary cells (percentiles within
    ``cells.RELATIVE_ERROR``); else, and by group or organization, exactly. A group,
    organization or assignee group carries its name."""
    lo, hi = _bounds(start, end)
    kind, field = _grouping(group_by) if group_by else ("all", None)
    dim = f"{FIELD_GROUP}{field}" if kind == "field" else kind
    spans, starts = cells.cover(start, end)
    async with snapshot(store, tenant_id) as (conn, fresh):
        found = _from_cells(await conn.fetch(
            Q["summary_cells"], tenant_id,
            ["all", dim] if kind in _CELL_GROUPS else ["all"], spans, starts, False), dim)
        total_row = found.get(("all", "all"))
        if kind in _CELL_GROUPS | {"all", "day"} and (
                total_row is not None and total_row["tickets"] > EXACT_UP_TO):
            exact = False
            if kind == "day":
                days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
                by_day = _from_cells(await conn.fetch(
                    Q["summary_cells"], tenant_id, ["all"], [1] * len(days), days, True))
                groups = [by_day[k] for k in sorted(by_day)]
            else:
                groups = _cell_groups(found, dim) if group_by else []
                if kind == "assignee":
                    # The exact statement names agents itself; cells hold keys only.
                    names = dict(await conn.fetch(Q["agent_names"], tenant_id,
                                                  [g["key"] for g in groups]))
                    groups = [{**g, "name": names.get(g["key"])} for g in groups]
        else:
            exact = True
            total = await conn.fetch(Q["summary"], tenant_id, lo, hi, "all", None)
            total_row = total[0] if total else None
            groups = (await conn.fetch(Q["summary"], tenant_id, lo, hi, kind, field)
                      if group_by else [])
    total_out = _group(total_row) if total_row is not None else _group_empty()
    del total_out["key"], total_out["name"]
    return {**fresh, "from": start.isoformat(), "to": end.isoformat(), "group_by": group_by,
            "percentiles": {"exact": exact,
                            "relative_error": 0.0 if exact else cells.RELATIVE_ERROR},
            "total": total_out, "groups": [_group(r) for r in groups]}


_PERCENTILES = (("p50", 0.5), ("p90", 0.9))
_COLUMNS = ("first_reply", "first_reply_business", "resolution", "resolution_open",
            "requester_wait", "agent_work")


def _from_cells(rows: list[asyncpg.Record], dim: str = "all"
                ) -> dict[tuple[str, str], dict[str, Any]]:
    """Summed cells to one summary row per (dim, key), as the exact statement names its
    columns; a ``field.<key>`` dim gains ``none``: ``all`` less the tickets that hold a
    value."""
    sums: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        cell = [r[c] for c in _CELL_COLUMNS]
        group = (r["dim"], r["key"])
        sums[group] = _plus(sums[group], cell, 1) if group in sums else cell
    if dim.startswith(FIELD_GROUP):
        held = sums.pop((dim, cells.HELD), None)
        everyone = sums.get(("all", "all"))
        if everyone is not None:
            none = _plus(everyone, held, -1) if held is not None else everyone
            if (dim, "none") in sums:  # an option whose value is "none"
                none = _plus(sums[(dim, "none")], none, 1)
            sums[(dim, "none")] = none
    found = {}
    for group, values in sums.items():
        if values[0] > 0:
            n = len(cells.COUNTERS)
            row: dict[str, Any] = {"key": group[1],
                                   **dict(zip(cells.COUNTERS, values[:n], strict=True))}
            for column, histogram in zip(_COLUMNS, values[n:], strict=True):
                for suffix, fraction in _PERCENTILES:
                    row[f"{column}_{suffix}"] = cells.percentile(histogram, fraction)
            found[group] = row
    return found


_CELL_COLUMNS = (*cells.COUNTERS, *_COLUMNS)


def _plus(a: list[Any], b: list[Any], sign: int) -> list[Any]:
    """Counters and histograms of ``a`` plus ``sign`` times those of ``b``."""
    n = len(cells.COUNTERS)
    out: list[Any] = [x + sign * y for x, y in zip(a[:n], b[:n], strict=True)]
    for x, y in zip(a[n:], b[n:], strict=True):
        if len(x) < len(y):
            x = [*x, *([0] * (len(y) - len(x)))]
        out.append([*map(operator.add if sign > 0 else operator.sub, x, y), *x[len(y):]])
    return out


def _cell_groups(found: dict[tuple[str, str], dict[str, Any]], dim: str
                 ) -> list[dict[str, Any]]:
    return [found[k] for k in sorted(k for k in found if k[0] == dim)]


def _group_empty() -> dict[str, Any]:
    none = {"median": None, "p90": None}
    return {"tickets": 0, "solved": 0, "first_reply_ms": none,
            "first_reply_business_ms": none, "resolution_ms": none,
            "resolution_open_ms": none, "requester_wait_ms": none, "agent_work_ms": none,
            "sla_achievement": {"first_response": None, "next_reply": None, "resolution": None,
                                "periodic_update": None, "requester_wait": None,
                                "agent_work": None},
            "reopen_rate": None, "one_touch_rate": None, "deflected": 0,
            "deflection_rate": None,
            "satisfaction": {"rated": 0, "good": 0, "score": None, "response_rate": None},
            "key": "all", "name": None}


async def volume(store: EventStore, tenant_id: TenantId, start: date,
                 end: date, group_by: str | None = None) -> dict[str, Any]:
    """Created, solved, reopened and breached per UTC day, with priority and source
    splits, and by a ticket field's value then (``group_by`` ``field.<key>``)."""
    async with snapshot(store, tenant_id) as (conn, fresh):
        rows = await conn.fetch(Q["volume"], tenant_id, start, end)
        by_field = ([] if group_by is None else await conn.fetch(
            Q["volume_by_field"], tenant_id, start, end, group_by.removeprefix(FIELD_GROUP)))
    days: dict[date, dict[str, Any]] = {}
    keys = ("created", "solved", "reopened", "breached")
    for r in rows:
        d = days.setdefault(r["day"], _day(r["day"], keys, group_by))
        for split, value in (("by_priority", r["priority"]), ("by_source", r["source"])):
            bucket = d[split].setdefault(value, dict.fromkeys(keys, 0))
            for k in keys:
                bucket[k] += r[k]
        for k in keys:
            d[k] += r[k]
    for r in by_field:
        d = days.setdefault(r["day"], _day(r["day"], keys, group_by))
        d["by_field"][r["value"]] = {k: r[k] for k in keys}
    return {**fresh, "from": start.isoformat(), "to": end.isoformat(), "group_by": group_by,
            "days": [days[day] for day in sorted(days)]}


def _day(day: date, keys: tuple[str, ...], group_by: str | None) -> dict[str, Any]:
    return {**dict.fromkeys(keys, 0), "day": day.isoformat(), "by_priority": {},
            "by_source": {}, "by_field": None if group_by is None else {}}


async def backlog(store: EventStore, tenant_id: TenantId, now: datetime) -> dict[str, Any]:
    """Open work (open, pending, on hold) by state, priority and age since creation."""
    async with snapshot(store, tenant_id) as (conn, fresh):
        rows = await conn.fetch(Q["backlog"], tenant_id, now)
    return {**fresh, "now": now.isoformat(), "total": sum(r["tickets"] for r in rows),
            "rows": [dict(r) for r in rows]}


async def agents(store: EventStore, tenant_id: TenantId, start: date,
                 end: date, group_id: UUID | None = None) -> dict[str, Any]:
    """Per author over ``start``..``end``: tickets assigned, public replies, tickets
    solved; each row says whether it is a person (``kind`` agent) or an API key that
    acted as itself (``api_key``), and names it. With ``group_id``, only the group's
    members (as they are now)."""
    async with snapshot(store, tenant_id) as (conn, fresh):
        rows = await conn.fetch(Q["agents"], tenant_id, start, end, group_id)
    return {**fresh, "from": start.isoformat(), "to": end.isoformat(),
            "agents": [{"kind": r["kind"], "id": r["id"], "name": r["name"],
                        "agent_id": r["id"] if r["kind"] == "agent" else None,
                        "assigned": r["assigned"], "replies": r["replies"],
                        "solved": r["solved"]} for r in rows]}


async def current(store: EventStore, tenant_id: TenantId) -> Freshness:
    """The analytics checkpoint of the tenant now (one short read)."""
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        return await freshness(s.conn, NAME, tenant_id)
