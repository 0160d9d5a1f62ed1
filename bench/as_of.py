"""The desk as of a seq against the desk now: the first page of ``GET /v1/tickets``
as of a seq (projections/ticket_versions.py ``list_as_of``) against the current first
page (projections/reads.py ``list_tickets``), on a desk of 100,000 tickets with four
versions each, in the database.

    python -m bench.as_of [--tickets 100000] [--runs 200]

One Postgres of its own (bench/common.py ``private_server``), a fresh migrated
database and a tenant. The desk is written straight into ``tickets`` and
``ticket_versions`` by SQL (a write path run of 400,000 events would take the better
part of an hour on the shared machine, and neither statement measured reads
``events``): ticket i opens at seq 4i, and its versions 2 to 4 follow at random
distances of up to 40,000 seqs, so at any seq in the middle about a tenth of the
tickets opened are mid-change; every row carries a 1.2 KB document, as the API's. The
versions are inserted in seq order, as the write path appends them, so a ticket's
versions lie apart in the table (inserted a ticket at a time, they would share a page,
and a walk that reads each one would look cheaper than it is); the current rows in
order of creation. Each
statement runs as the runtime role under row-level security, through the functions
the route calls; the figure is the median of ``--runs`` calls (asyncpg, its
statements prepared, one connection), and the server's own execution time from
``EXPLAIN ANALYZE`` of the same statement. Each as-of case is timed call by call in
turn with the current page of the same filters, so both see the same load and the
same warm pages (measured one after the other, on the shared machine the ratio moved
by a tenth from run to run). Target: within 3x of the current page.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg

from bench.common import fresh_database, private_server, report
from eventstore.pool import create_pool
from eventstore.store import arm
from handlers.tenants import create_tenant_as_operator
from projections.reads import TicketFilters, filter_conditions, list_tickets, ticket_list_query
from projections.ticket_versions import Q as VQ
from projections.ticket_versions import list_as_of

SEED = """
WITH t AS (
    SELECT i, ('00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid AS id,
           timestamptz '2026-01-01' + i * interval '1 minute' AS created_at
      FROM generate_series(1, $2::int) AS i
), g AS (
    SELECT t.i, t.id, t.created_at, k AS version,
           CASE WHEN k = 1 THEN 0 ELSE 1 + floor(random() * 13333)::bigint END AS gap,
           (ARRAY['open', 'pending', 'on_hold', 'solved'])[1 + floor(random() * 4)] AS state,
           (ARRAY['low', 'normal', 'high', 'urgent'])[1 + floor(random() * 4)] AS priority
      FROM t, generate_series(1, 4) AS k
), v AS (
    SELECT g.*, 4 * g.i + sum(g.gap) OVER (PARTITION BY g.id ORDER BY g.version) AS from_seq
      FROM g
)
INSERT INTO ticket_versions (tenant_id, id, version, valid_from_seq, valid_to_seq,
                             created_max, state, priority, source, assignee, tags,
                             created_at, updated_at, view)
SELECT $1, v.id, v.version, v.from_seq,
       coalesce(lead(v.from_seq) OVER (PARTITION BY v.id ORDER BY v.version),
                9223372036854775807),
       CASE WHEN v.version = 1 THEN v.created_at END, v.state, v.priority, 'email',
       ('00000000-0000-4000-8000-00000000000' || (v.i % 8))::uuid, ARRAY['bench'],
       v.created_at, v.created_at, json_build_object(
           'id', v.id, 'version', v.version, 'state', v.state, 'subject', 'Bench ticket',
           'requester', json_build_object('email', 'c@example.com', 'name', 'C'),
           'priority', v.priority, 'source', 'email', 'tags', ARRAY['bench'],
           'pad', repeat('x', 1000))
  FROM v
 ORDER BY v.from_seq
"""

CURRENT = """
INSERT INTO tickets (tenant_id, id, version, state, priority, source, assignee, tags, subject,
                     requester, clocks, state_json, created_at, updated_at, view)
SELECT tenant_id, id, version, state, priority, source, assignee, tags, 'Bench ticket',
       '{"email": "c@example.com"}', '{}', '{}', created_at, updated_at, view
  FROM ticket_versions WHERE tenant_id = $1 AND valid_to_seq = 9223372036854775807
 ORDER BY created_at
"""


async def _timed(runs: int, *calls: Any) -> list[float]:
    """The median time of each call, the calls made in turn ``runs`` times."""
    samples: list[list[float]] = [[] for _ in calls]
    for _ in range(runs):
        for call, times in zip(calls, samples, strict=True):
            t0 = time.perf_counter()
            await call()
            times.append((time.perf_counter() - t0) * 1000)
    return [statistics.median(times) for times in samples]


async def _explained(conn: asyncpg.Connection, *statements: tuple[str, tuple[Any, ...]]
                     ) -> list[float]:
    """The median server execution time of each statement, explained in turn 20 times."""
    samples: list[list[float]] = [[] for _ in statements]
    for _ in range(20):
        for (query, args), times in zip(statements, samples, strict=True):
            plan = await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", *args)
            doc = plan if isinstance(plan, list) else json.loads(plan)
            times.append(float(doc[0]["Execution Time"]))
    return [statistics.median(times) for times in samples]


async def run(tickets: int, runs: int) -> None:
    with private_server(shared_buffers="256MB") as server:
        async with fresh_database(server) as db:
            tenant = await create_tenant_as_operator(db.admin_url, "Bench",
                                                     at=datetime.now(UTC))
            admin = await asyncpg.connect(db.admin_url)
            try:
                t0 = time.perf_counter()
                await admin.execute("ALTER TABLE ticket_versions DISABLE TRIGGER ALL")
                await admin.execute(SEED, tenant.tenant_id, tickets)
                await admin.execute(CURRENT, tenant.tenant_id)
                await admin.execute("ALTER TABLE ticket_versions ENABLE TRIGGER ALL")
                await admin.execute("VACUUM ANALYZE ticket_versions")
                await admin.execute("VACUUM ANALYZE tickets")
                head = await admin.fetchval("SELECT max(valid_from_seq) FROM ticket_versions")
                print(f"seeded {tickets} tickets x 4 versions in "
                      f"{time.perf_counter() - t0:.0f} s; last seq {head}")
            finally:
                await admin.close()
            pool = await create_pool(db.runtime_url, min_size=1, max_size=1)
            rows: list[dict[str, object]] = []
            try:
                async with pool.acquire() as conn, conn.transaction(readonly=True):
                    await arm(conn, tenant.tenant_id, None)
                    tid = tenant.tenant_id
                    cases = [("", TicketFilters()),
                             (", state=open", TicketFilters(states=("open",)))]
                    for label, filters in cases:
                        query, values = ticket_list_query(filters)
                        top = (datetime.max.replace(tzinfo=UTC), uuid.UUID(int=(1 << 128) - 1))
                        for share in (1.0, 0.5, 0.1):
                            seq = int(head * share)
                            page = await list_as_of(conn, tid, seq, filters, None, 26)
                            assert len(page) == 26, (seq, len(page))
                            now, then = await _timed(
                                runs,
                                lambda f=filters: list_tickets(conn, tid, f, None, 26),
                                lambda s=seq, f=filters: list_as_of(conn, tid, s, f, None, 26))
                            conds, vals = filter_conditions(filters, first=6)
                            as_of_query = VQ["list_as_of"].replace(
                                "{filters}", "\n   ".join(conds))
                            now_db, then_db = await _explained(
                                conn, (query, (tid, *top, 26, *values)),
                                (as_of_query, (tid, *top, 26, seq, *vals)))
                            if os.environ.get("BENCH_EXPLAIN"):
                                for line in await conn.fetch(
                                        f"EXPLAIN (ANALYZE, BUFFERS) {as_of_query}", tid,
                                        *top, 26, seq, *vals):
                                    print(line[0])
                            where = "the head" if share == 1.0 else f"{share:.0%} of history"
                            rows.append({
                                "figure": f"as_of first page at {where}{label} (call)",
                                "value": f"{then:.2f} ms", "baseline": f"{now:.2f} ms",
                                "ratio": round(now / then, 2), "target": ">= 0.33"})
                            rows.append({
                                "figure": f"as_of first page at {where}{label} (server)",
                                "value": f"{then_db:.3f} ms", "baseline": f"{now_db:.3f} ms",
                                "ratio": round(now_db / then_db, 2), "target": ">= 0.33"})
            finally:
                await pool.close()
    report(f"as-of ({tickets} tickets x 4 versions; baseline: the current first page of "
           f"25, timed in turn with each case; median of {runs} calls, server time median "
           f"of 20 EXPLAIN ANALYZE)", rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tickets", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(run(args.tickets, args.runs))


if __name__ == "__main__":
    main()
