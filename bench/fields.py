"""Ticket field benchmark: the ticket list filtered by a dropdown field through HTTP, and
analytics grouped by a dropdown field in the database.

Run from the repository root::

    python -m bench.fields                       # 100,000 tickets, 5 s per case
    python -m bench.fields --tickets 20000 --seconds 3

One tenant with five fields (plan: a dropdown of 5 options; region: a dropdown of 8;
vip: a checkbox; order_no: a number; due: a date), and tickets opened through the
write path with a value for each, spread over the past year. Figures, each against a
baseline of the same run:

- ``GET /v1/tickets?limit=25&field.plan=<one option>`` (``helpdesk serve``, one
  process, loaded by ``wrk`` as bench/http.py does) against the unfiltered list: the
  unfiltered requests/s over the filtered ones (target <= 1.5), and the p99 latencies;
- the analytics summary over the year grouped by ``field.plan`` and by ``priority``
  (50 runs each; target: p99 < 100 ms in the database). Timed in the database, as the
  runtime role in a read-only transaction with JIT off as the summary reads run: the
  cells statement the summary now runs, against the two exact statements (total and
  groups) it ran before and still runs for small ranges, in the same run. Also timed
  whole (``analytics_reads.summary``: both statements and the answer built in Python),
  once through the cells and once forced onto the exact path.

Each ticket gets a public agent reply after a log-normal delay (median about 2 h) and
four in five are solved after another (median about 1 day), so the percentiles have
something to sort.

``--summary-only`` measures the summary alone, on analytics rows written straight into
``analytics_tickets`` (the same distributions, with priorities, sources, ten assignees,
some reopens and breaches) and summary cells computed from them by the code
``helpdesk migrate`` uses (``fill_summary_cells``, the projection's own contribution
function): seeding 100,000 tickets with their replies and solves through the write path
takes most of an hour on a busy 2-core machine, and the read statements depend only
on the rows.

Database: a Postgres of the bench's own, or ``BENCH_DATABASE_URL`` (a superuser URL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import asyncpg
import orjson

from bench.common import private_server, report
from bench.http import Wrk, _given, lua, serving
from domain.field_definitions import DefineField
from domain.fields import FieldOption, FieldType
from domain.ids import MessageId, TicketId
from domain.ticket.commands import AddMessage, ChangeState, OpenTicket
from domain.values import Actor, ActorKind, Requester, TicketState
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers.tenants import create_tenant_as_operator
from handlers.ticket_fields import define_field
from handlers.tickets import execute
from projections import analytics_reads
from projections.analytics import fill_summary_cells
from projections.analytics_cells import cover
from projections.analytics_reads import Q as ANALYTICS_QUERIES
from projections.analytics_reads import _bounds
from projections.projector import Projector

ACTOR = StoreActor("api_key", "bench")
PLANS = ("free", "starter", "pro", "team", "enterprise")
REGIONS = ("eu", "us", "uk", "apac", "latam", "mea", "ca", "au")
RUNS = 50


def _options(values: tuple[str, ...]) -> tuple[FieldOption, ...]:
    return tuple(FieldOption(value=v, title=v.title()) for v in values)


FIELDS = (
    DefineField(key="plan", title="Plan", type=FieldType.DROPDOWN, options=_options(PLANS),
                at=datetime(2020, 1, 1, tzinfo=UTC)),
    DefineField(key="region", title="Region", type=FieldType.DROPDOWN,
                options=_options(REGIONS), at=datetime(2020, 1, 1, tzinfo=UTC)),
    DefineField(key="vip", title="VIP", type=FieldType.CHECKBOX,
                at=datetime(2020, 1, 1, tzinfo=UTC)),
    DefineField(key="order_no", title="Order", type=FieldType.NUMBER,
                at=datetime(2020, 1, 1, tzinfo=UTC)),
    DefineField(key="due", title="Due", type=FieldType.DATE,
                at=datetime(2020, 1, 1, tzinfo=UTC)),
)


def _year(count: int) -> tuple[datetime, datetime, datetime, timedelta]:
    """Now, today's midnight (UTC), a year before it, and the step between tickets."""
    now = datetime.now(UTC)
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return now, today, today - timedelta(days=365), timedelta(days=365) / count


async def seed(admin_url: str, runtime_url: str, count: int) -> tuple[Any, str, date]:
    """A tenant with the five fields and ``count`` tickets over the past year; returns
    the tenant id, an admin key and today."""
    tenant = await create_tenant_as_operator(admin_url, "Fields")
    pool = await create_pool(runtime_url, min_size=1, max_size=4)
    store = EventStore(pool)
    now, today, start, step = _year(count)
    rng = random.Random(19)
    agent = Actor(kind=ActorKind.AGENT, id="bench")
    try:
        async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
            for command in FIELDS:
                await define_field(s, command)
        began = time.perf_counter()
        for first in range(0, count, 500):
            async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
                for i in range(first, min(count, first + 500)):
                    tid = TicketId(uuid.uuid4())
                    at = start + step * i
                    await execute(s, tid, OpenTicket(
                        ticket_id=tid, subject=f"bench {i}", body="b",
                        requester=Requester(email="bench@example.com"), actor=agent, at=at,
                        fields={"plan": rng.choice(PLANS), "region": rng.choice(REGIONS),
                                "vip": rng.random() < 0.1, "order_no": rng.randrange(10**6),
                                "due": (at + timedelta(days=rng.randrange(30))).date()
                                .isoformat()}))
                    replied = min(now, at + timedelta(minutes=rng.lognormvariate(4.8, 1.2)))
                    await execute(s, tid, AddMessage(
                        message_id=MessageId(uuid.uuid4()), body="a", actor=agent,
                        at=replied))
                    if rng.random() < 0.8:
                        solved = min(now, replied + timedelta(
                            minutes=rng.lognormvariate(7.3, 1.3)))
                        await execute(s, tid, ChangeState(to=TicketState.SOLVED, actor=agent,
                                                          at=solved))
            if first and first % 20_000 == 0:
                print(f"  {first} tickets, {first / (time.perf_counter() - began):.0f}/s")
        await store.notifier.flush()
        projector = Projector(pool)
        await projector.ensure_checkpoints()
        await projector.drain()
    finally:
        await pool.close()
    # What autovacuum does soon after a load like this one. Without statistics the
    # planner, taking the table for a small one, filters by a bitmap scan of the whole
    # tenant and sorts (365 ms at 100,000 tickets, against 0.3 ms along the keyset
    # index with them): measured once, and not the path a running desk takes.
    owner = await asyncpg.connect(admin_url)
    try:
        await owner.execute("ANALYZE tickets, analytics_tickets, analytics_summary_cells")
    finally:
        await owner.close()
    return tenant.tenant_id, tenant.admin_key.secret, today.date()


async def seed_rows(admin_url: str, runtime_url: str, count: int) -> tuple[Any, date]:
    """A tenant with the five fields and ``count`` analytics rows over the past year,
    written directly, and its summary cells filled from them; returns the tenant id
    and today."""
    tenant = await create_tenant_as_operator(admin_url, "Fields")
    pool = await create_pool(runtime_url, min_size=1, max_size=2)
    store = EventStore(pool)
    _, today, start, step = _year(count)
    rng = random.Random(19)
    assignees = [str(uuid.UUID(int=i)) for i in range(1, 11)]
    rows = []
    for i in range(count):
        at = start + step * i
        first_reply = int(60_000 * rng.lognormvariate(4.8, 1.2))
        solved = rng.random() < 0.8
        resolution = first_reply + int(60_000 * rng.lognormvariate(7.3, 1.3))
        reopened = solved and rng.random() < 0.05
        rows.append((
            tenant.tenant_id, uuid.uuid4(), rng.choice(("low", "normal", "high", "urgent")),
            rng.choice(("api", "email", "portal", "chat", "phone")),
            "solved" if solved else "open", rng.choice([*assignees, None]), at, at,
            at + timedelta(milliseconds=first_reply), first_reply,
            int(first_reply * rng.uniform(0.3, 1)),
            at + timedelta(milliseconds=resolution) if solved else None, int(solved) + reopened,
            resolution if solved else None, resolution, int(resolution * rng.uniform(0.3, 1))
            if solved else None, int(reopened), rng.randint(1, 3), int(rng.random() < 0.1),
            int(rng.random() < 0.1), int(rng.random() < 0.1), i + 1,
            orjson.dumps({"plan": rng.choice(PLANS), "region": rng.choice(REGIONS),
                          "vip": rng.random() < 0.1, "order_no": rng.randrange(10**6),
                          "due": (at + timedelta(days=rng.randrange(30))).date().isoformat()}
                         ).decode()))
    owner = await asyncpg.connect(admin_url)
    try:
        await owner.copy_records_to_table("analytics_tickets", records=rows, columns=[
            "tenant_id", "ticket_id", "priority", "source", "state", "assignee", "created_at",
            "state_since", "first_reply_at", "first_reply_ms", "first_reply_business_ms",
            "solved_at", "solves", "resolution_ms", "open_ms", "resolution_open_ms",
            "reopens", "public_agent_replies", "breaches_first_response",
            "breaches_next_reply", "breaches_resolution", "last_seq", "fields"])
        async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
            for command in FIELDS:
                await define_field(s, command)
        began = time.perf_counter()
        async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
            await fill_summary_cells(s.conn, tenant.tenant_id)
        cells = await owner.fetchval("SELECT count(*) FROM analytics_summary_cells")
        print(f"  summary cells filled in {time.perf_counter() - began:.1f} s: {cells} rows")
        await owner.execute("ANALYZE analytics_tickets, analytics_summary_cells")
    finally:
        await owner.close()
        await pool.close()
    return tenant.tenant_id, today.date()


async def summary_times(runtime_url: str, tenant_id: Any, today: date, group: str,
                        key: str | None) -> dict[str, list[float]]:
    """Milliseconds per run over the year, by way: ``exact`` and ``cells`` the statements
    in the database (prepared once, as asyncpg does), ``exact_whole`` and
    ``cells_whole`` the whole ``analytics_reads.summary``."""
    first = today - timedelta(days=364)
    lo, hi = _bounds(first, today)
    spans, starts = cover(first, today)
    dim = f"field.{key}" if group == "field" else group
    group_by = f"field.{key}" if group == "field" else group
    pool = await create_pool(runtime_url, min_size=1, max_size=1)
    store = EventStore(pool)
    times: dict[str, list[float]] = {}

    async def timed(way: str, run: Any) -> None:
        for i in range(RUNS + 3):
            began = time.perf_counter()
            await run()
            if i >= 3:  # the first runs plan and warm the cache
                times.setdefault(way, []).append(1000 * (time.perf_counter() - began))

    try:
        async with store.unit_of_work(tenant_id, readonly=True) as s:
            await s.conn.execute("SET LOCAL jit = off")

            async def exact() -> None:
                await s.conn.fetch(ANALYTICS_QUERIES["summary"], tenant_id, lo, hi, "all", None)
                await s.conn.fetch(ANALYTICS_QUERIES["summary"], tenant_id, lo, hi, group, key)

            async def cells() -> None:
                await s.conn.fetch(ANALYTICS_QUERIES["summary_cells"], tenant_id,
                                   ["all", dim], spans, starts, False)

            await timed("exact", exact)
            await timed("cells", cells)
        limit = analytics_reads.EXACT_UP_TO
        try:
            analytics_reads.EXACT_UP_TO = 10**9
            await timed("exact_whole", lambda: analytics_reads.summary(
                store, tenant_id, first, today, group_by))
        finally:
            analytics_reads.EXACT_UP_TO = limit
        try:
            analytics_reads.EXACT_UP_TO = 0  # the cells whatever --tickets
            answer = await analytics_reads.summary(store, tenant_id, first, today, group_by)
            assert answer["percentiles"]["exact"] is False, answer["percentiles"]
            await timed("cells_whole", lambda: analytics_reads.summary(
                store, tenant_id, first, today, group_by))
        finally:
            analytics_reads.EXACT_UP_TO = limit
    finally:
        await pool.close()
    return times


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


async def run(count: int, seconds: float, summary_only: bool) -> None:
    from tests.support.pg import Databases

    given = os.environ.get("BENCH_DATABASE_URL")
    rows: list[dict[str, object]] = []
    with (_given(given) if given else private_server(shared_buffers="256MB")) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            began = time.perf_counter()
            if summary_only:
                tenant_id, today = await seed_rows(db.admin_url, db.runtime_url, count)
            else:
                tenant_id, key, today = await seed(db.admin_url, db.runtime_url, count)
                rows = await _list(db.runtime_url, key, seconds)
            print(f"seeded {count} tickets in {time.perf_counter() - began:.1f} s")
            by_priority = await summary_times(db.runtime_url, tenant_id, today, "priority", None)
            by_plan = await summary_times(db.runtime_url, tenant_id, today, "field", "plan")
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)
    report(f"ticket fields ({count} tickets, 5 fields each"
           f"{', analytics rows written directly' if summary_only else ''})", [
        *rows,
        *(row for name, times in (("field.plan", by_plan), ("priority", by_priority))
          for row in _summary_rows(name, times)),
    ])


async def _list(runtime_url: str, key: str, seconds: float) -> list[dict[str, object]]:
    """The list filtered by a dropdown against the unfiltered list, over HTTP."""
    load = Wrk()
    env = {"DATABASE_URL": runtime_url, "LOG_LEVEL": "warning",
           "RUN_SCHEDULER": "false", "DB_POOL_MAX": "20"}
    plain = lua([("GET", "/v1/tickets?limit=25", None)], [key])
    filtered = lua([("GET", f"/v1/tickets?limit=25&field.plan={p}", None)
                    for p in PLANS], [key])
    with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as helpdesk:
        await helpdesk.ready()
        load.run(helpdesk.url, 1, plain)  # warm
        load.run(helpdesk.url, 1, filtered)
        unfiltered_run = load.run(helpdesk.url, seconds, plain)
        filtered_run = load.run(helpdesk.url, seconds, filtered)
    assert unfiltered_run.bad == 0 and filtered_run.bad == 0, (unfiltered_run, filtered_run)
    return [
        {"figure": "list rps: unfiltered / field.plan=<one of 5>",
         "value": round(filtered_run.rps), "baseline": round(unfiltered_run.rps),
         "ratio": round(unfiltered_run.rps / filtered_run.rps, 2), "target": "<= 1.5"},
        {"figure": "list p99 ms: field.plan / unfiltered",
         "value": filtered_run.p99_ms, "baseline": unfiltered_run.p99_ms,
         "ratio": round(filtered_run.p99_ms / unfiltered_run.p99_ms, 2)},
    ]


def _summary_rows(name: str, times: dict[str, list[float]]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for label, new, old in (("in the database", "cells", "exact"),
                            ("whole summary()", "cells_whole", "exact_whole")):
        for stat, f in (("p50", statistics.median), ("p99", p99)):
            rows.append({"figure": f"summary by {name}, {label}, {stat} ms: cells / exact",
                         "value": round(f(times[new]), 1), "baseline": round(f(times[old]), 1),
                         "ratio": round(f(times[new]) / f(times[old]), 3),
                         **({"target": "< 100 ms"} if stat == "p99" else {})})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tickets", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per case")
    parser.add_argument("--summary-only", action="store_true",
                        help="only the summary, on analytics rows written directly")
    args = parser.parse_args()
    asyncio.run(run(args.tickets, args.seconds, args.summary_only))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.fields")
    main()
