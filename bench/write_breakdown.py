"""Where Postgres spends a ticket write: statements, functions and triggers, per request.

    python -m bench.write_breakdown [--tree PATH] [--seconds 8] [--connections 1]
                                    [--warmup 1] [--pgbouncer]

Starts a Postgres of its own with ``pg_stat_statements`` (``track = all``, so the
statements inside functions and triggers count too), ``track_functions = all`` and
``auto_explain`` for nested statements (plans in the server log, when
``--explain`` is given), serves this checkout (or the one ``--tree`` names) with one
``helpdesk serve`` process and loads one case at a time with wrk: creates for a known
e-mail, creates for a new e-mail, and messages. Around each case the statistics are
reset, then read back and divided by the requests served; the Postgres process
tree's CPU is read the same way.

Printed per case: requests, Postgres CPU ms per request, and the statements (top
level and nested) with their calls and execution ms per request, most expensive
first; then the statements with the most planning time; then the functions
(``pg_stat_user_functions``: self and total ms per request). What no statement
accounts for (Postgres CPU minus the top-level statements' execution time) is parse,
plan, protocol and commit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
from pathlib import Path

import asyncpg
import httpx

from bench.common import free_port, private_server, seeded_desk
from bench.cpu_per_request import cpu_by_process, postmaster, start, tree_cpu, wait_ready
from bench.http import NEW_EMAIL, TICKET_BODY, Wrk, lua

ROOT = Path(__file__).resolve().parent.parent


def _shorten(query: str, width: int = 110) -> str:
    text = re.sub(r"\s+", " ", query).strip()
    return text if len(text) <= width else text[: width - 1] + "…"


async def _reset(admin: asyncpg.Connection) -> None:
    await admin.execute("SELECT pg_stat_statements_reset()")
    await admin.execute("SELECT pg_stat_reset()")


async def _report(admin: asyncpg.Connection, requests: int, pg_ms: float,
                  by_kind: dict[str, float]) -> None:
    # Statistics of functions reach the collector at the end of each transaction, and
    # the views read a snapshot: a fresh one is asked for.
    await admin.execute("SELECT pg_stat_clear_snapshot()")
    n = max(requests, 1)
    rows = await admin.fetch(
        """SELECT toplevel, calls, total_exec_time, total_plan_time, plans, rows, query
             FROM pg_stat_statements
            WHERE query NOT LIKE '%pg_stat_%'
            ORDER BY total_exec_time DESC""")
    top = sum(r["total_exec_time"] + r["total_plan_time"] for r in rows if r["toplevel"])
    print(f"  Postgres CPU {pg_ms / n:.3f} ms/request; top-level statements' execution "
          f"and planning {top / n:.3f} ms/request; the rest (parse, plan of simple "
          f"queries, protocol, commit) {(pg_ms - top) / n:.3f}")
    print("  Postgres CPU by process, ms/request: " + ", ".join(
        f"{kind} {ms / n:.3f}" for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1])
        if ms / n >= 0.001))
    print(f"  {'level':5} {'calls/req':>9} {'exec ms/req':>11} {'plans/req':>9} "
          f"{'plan ms/req':>11} {'rows/call':>9}  statement")
    for r in rows[:40]:
        calls = r["calls"] / n
        if r["total_exec_time"] / n < 0.003:
            continue
        print(f"  {'top' if r['toplevel'] else 'in':5} {calls:9.2f} "
              f"{r['total_exec_time'] / n:11.3f} {r['plans'] / n:9.2f} "
              f"{r['total_plan_time'] / n:11.3f} "
              f"{(r['rows'] / r['calls']) if r['calls'] else 0:9.1f}  {_shorten(r['query'])}")
    planned = sorted(rows, key=lambda r: -r["total_plan_time"])
    plan_total = sum(r["total_plan_time"] for r in rows)
    print(f"  planning, all statements {plan_total / n:.3f} ms/request; most planned:")
    print(f"  {'level':5} {'plans/req':>9} {'plan ms/req':>11} {'ms/plan':>8}  statement")
    for r in planned[:12]:
        if r["total_plan_time"] / n < 0.003:
            break
        print(f"  {'top' if r['toplevel'] else 'in':5} {r['plans'] / n:9.2f} "
              f"{r['total_plan_time'] / n:11.3f} "
              f"{(r['total_plan_time'] / r['plans']) if r['plans'] else 0:8.3f}  "
              f"{_shorten(r['query'])}")
    funcs = await admin.fetch(
        """SELECT schemaname || '.' || funcname AS name, calls, total_time, self_time
             FROM pg_stat_user_functions ORDER BY total_time DESC""")
    print(f"  {'calls/req':>9} {'total ms/req':>12} {'self ms/req':>11}  function")
    for f in funcs:
        print(f"  {f['calls'] / n:9.2f} {f['total_time'] / n:12.3f} "
              f"{f['self_time'] / n:11.3f}  {f['name']}")


async def run(tree: Path, seconds: float, connections: int, explain: bool,
              pgbouncer: bool = False, warmup: float = 1.0) -> None:

    config = {"shared_preload_libraries": "pg_stat_statements,auto_explain",
              "pg_stat_statements.track": "all", "pg_stat_statements.track_planning": "on",
              # EXECUTE statements differ by their values: tracked as utility statements,
              # each would be an entry of its own and churn the table.
              "pg_stat_statements.track_utility": "off",
              "track_functions": "all",
              "max_connections": "100", "shared_buffers": "256MB"}
    if explain:
        config |= {"auto_explain.log_min_duration": "0",
                   "auto_explain.log_nested_statements": "on",
                   "auto_explain.log_analyze": "on", "auto_explain.log_buffers": "on"}
    with private_server(**config) as server_url:
        pg = postmaster(int(server_url.rsplit(":", 1)[1].split("/")[0]))
        # The tree migrates and seeds its own database, with its own code.
        desk = await asyncio.to_thread(seeded_desk, tree, server_url, 0, 0, timeout=600)
        admin_url, runtime_url = desk["admin_url"], desk["runtime_url"]
        admin = await asyncpg.connect(admin_url)
        await admin.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        proc = None
        try:
            ids, key = desk["main"]["tickets"], desk["main"]["key"]
            cases = {
                "create, known e-mail": lua([("POST", "/v1/tickets", TICKET_BODY)], [key]),
                "create, new e-mail": NEW_EMAIL.replace("KEY", key),
                # Fifty requesters, each known after the warm-up: what one busy
                # requester's rows cost when every opening shares them.
                "create, 50 known e-mails": lua(
                    [("POST", "/v1/tickets", TICKET_BODY.replace("ann@", f"ann{n}@"))
                     for n in range(50)], [key]),
                "message": lua([("POST", f"/v1/tickets/{t}/messages", '{"body": "On it."}')
                                for t in ids], [key]),
            }
            port = free_port()
            url = f"http://127.0.0.1:{port}"
            env = {"DATABASE_URL": runtime_url, "LOG_LEVEL": "warning",
                   "RUN_SCHEDULER": "false", "DB_POOL_MAX": "20"}
            if pgbouncer:
                # What a deployment behind PgBouncer runs (no PgBouncer in between):
                # no prepared statements, so every statement is planned at each call.
                env["PGBOUNCER"] = "true"
            proc = start(tree, port, env)
            wait_ready(url, proc)
            # One request first, so the answer is known to be a success.
            async with httpx.AsyncClient() as client:
                r = await client.post(url + "/v1/tickets", content=TICKET_BODY,
                                      headers={"Authorization": f"Bearer {key}",
                                               "Content-Type": "application/json"})
            assert r.status_code == 201, r.text
            load = Wrk()
            for name, script in cases.items():
                load.run(url, warmup, script, connections=connections)  # warm the plans
                await _reset(admin)
                await asyncio.sleep(0.2)
                p0, k0 = tree_cpu(pg), cpu_by_process(pg)
                result = load.run(url, seconds, script, connections=connections)
                p1, k1 = tree_cpu(pg), cpu_by_process(pg)
                by_kind = {kind: 1000 * (k1[kind] - k0.get(kind, 0.0)) for kind in k1}
                print(f"\n{name}: {result.requests} requests, {result.rps:.0f} req/s, "
                      f"{connections} connection(s), bad {result.bad}, "
                      f"load {os.getloadavg()[0]:.1f}")
                await _report(admin, result.requests, 1000 * (p1 - p0), by_kind)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait()
            await admin.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="the checkout to serve (with its own .venv); default: this one")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=1.0,
                        help="seconds of load before each case (a connection's first "
                        "five executions of a statement are planned each time)")
    parser.add_argument("--pgbouncer", action="store_true",
                        help="serve as behind PgBouncer: no prepared statements")
    parser.add_argument("--explain", action="store_true",
                        help="log every plan, nested ones too (slow: for reading, not rates)")
    args = parser.parse_args()
    asyncio.run(run(args.tree.resolve(), args.seconds, args.connections, args.explain,
                    args.pgbouncer, args.warmup))


if __name__ == "__main__":
    main()
