"""Analytics on a streaming replica while the primary takes commands, against the same
with no replica, in the same run.

Run from the repository root::

    python -m bench.replica             # 10 s per case, one round of each
    python -m bench.replica --full      # 15 s per case, three alternating rounds (medians)

Set-up: a primary of the bench's own and a replica made from it with
``pg_basebackup -R`` (tests/support/replication.py, the machine's PostgreSQL), one
tenant with TICKETS tickets projected into the analytics read models. Processes, the
same in both cases: a ``helpdesk serve`` taking the commands, a ``helpdesk worker``
(projector and scheduler) and a ``helpdesk serve`` answering analytics, on the
primary only, or with ``READ_DATABASE_URL`` on the replica. Load, both from ``wrk``:

- analytics: ``GET /v1/analytics/summary?group_by=priority`` from 16 connections, as
  fast as they go (the figure: requests/s and p99);
- commands: ``POST /v1/tickets/{id}/messages`` on the same tenant's tickets from
  WRITERS connections, each pausing WRITER_DELAY_MS between requests (wrk's
  ``delay()``): about 200 commands/s when answers are quick, fewer as they slow down
  (the rate reached is reported); the figure is their p99, as wrk measures it from
  sending to the answer.

Before measuring, the worker runs the SLA checks the month-old seeded tickets have
due, so that burst is not in either case.

Each case first checks that the analytics answer says where it was read
(``read_from``). Figures are ratios against the no-replica case of the same run. The
machine has 2 cores shared with other work: the two Postgres servers, three helpdesk
processes and both wrk processes share them, so the absolute numbers mean little; the
ratios compare like with like.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from bench.common import report
from bench.http import ROOT, Load, Wrk, lua, serving
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, with_database
from tests.support.pgserver import PostgresServer
from tests.support.replication import primary_server, replica_of

TICKETS = 3000
WRITERS = 16
WRITER_DELAY_MS = 75
SUMMARY = "/v1/analytics/summary?group_by=priority"


@dataclass
class Setup:
    admin_url: str  # superuser
    primary_url: str  # runtime role
    replica_url: str  # runtime role
    key: str
    tickets: list[str]
    writer_url: str = ""  # the serve process taking the commands


def paced(requests: list[tuple[str, str, str | None]], key: str, delay_ms: int) -> str:
    """``bench.http.lua`` with a pause of ``delay_ms`` before each request."""
    return lua(requests, [key]) + f"\ndelay = function() return {delay_ms} end\n"


async def prepare(primary: PostgresServer) -> Setup:
    from handlers.tenants import create_tenant_as_operator
    from migrations.runner import migrate
    from tests.support.desk import seed_tickets

    await migrate(primary.url, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
    runtime = with_database(primary.url, "postgres", user=RUNTIME_USER,
                            password=RUNTIME_PASSWORD)
    tenant = await create_tenant_as_operator(primary.url, "bench")
    tickets = await seed_tickets(runtime, tenant.tenant_id, TICKETS)
    await project(runtime)
    return Setup(primary.url, runtime, "", tenant.admin_key.secret, tickets)


async def project(runtime_url: str) -> None:
    from eventstore.pool import create_pool
    from projections.projector import Projector

    pool = await create_pool(runtime_url, min_size=1, max_size=2)
    try:
        projector = Projector(pool)
        await projector.ensure_checkpoints()
        await projector.drain()
    finally:
        await pool.close()


async def read_from(url: str, key: str) -> str:
    async with httpx.AsyncClient(base_url=url) as client:
        r = await client.get(SUMMARY, headers={"Authorization": f"Bearer {key}"})
        r.raise_for_status()
        where: str = r.json()["read_from"]
        return where


async def one_case(setup: Setup, load: Wrk, seconds: float, replica: bool
                   ) -> tuple[Load, Load]:
    env = {"DATABASE_URL": setup.primary_url, "LOG_LEVEL": "warning",
           "RUN_SCHEDULER": "false", "DB_POOL_MAX": "20"}
    if replica:
        env["READ_DATABASE_URL"] = setup.replica_url
    with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as analytics:
        await analytics.ready()
        expected = "replica" if replica else "primary"
        deadline = time.monotonic() + 15
        while (where := await read_from(analytics.url, setup.key)) != expected:
            if time.monotonic() > deadline:
                raise SystemExit(f"analytics read from the {where}, expected {expected}")
            await asyncio.sleep(0.2)
        load.run(analytics.url + SUMMARY, 1, lua([("GET", SUMMARY, None)], [setup.key]))
        writes = paced([("POST", f"/v1/tickets/{t}/messages", '{"body": "On it."}')
                        for t in setup.tickets], setup.key, WRITER_DELAY_MS)
        reads = lua([("GET", SUMMARY, None)], [setup.key])
        writer = asyncio.create_task(asyncio.to_thread(
            load.run, setup.writer_url, seconds, writes, WRITERS))
        reader = await asyncio.to_thread(load.run, analytics.url, seconds, reads)
        return reader, await writer


async def quiet_queue(admin_url: str) -> None:
    """Wait until the worker has run every job already due: the seeded tickets are a
    month old, so each has SLA checks due at once, a burst that is not the load
    measured here."""
    import asyncpg

    conn = await asyncpg.connect(admin_url)
    try:
        deadline = time.monotonic() + 300
        while await conn.fetchval("SELECT count(*) FROM jobs WHERE status IN "
                                  "('ready', 'running') AND run_at <= now()"):
            if time.monotonic() > deadline:
                raise SystemExit("the worker did not run the due jobs within 300 s")
            await asyncio.sleep(0.5)
    finally:
        await conn.close()


@contextmanager
def worker(env: dict[str, str]) -> Iterator[None]:
    """``helpdesk worker``: the projector keeps the read models moving under the writes."""
    proc = subprocess.Popen([sys.executable, "-m", "api.cli.main", "worker"], cwd=ROOT,
                            env=os.environ | env, stdout=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def measure(setup: Setup, seconds: float, rounds: int) -> None:
    load = Wrk()
    runs: dict[bool, list[tuple[Load, Load]]] = {True: [], False: []}
    env = {"DATABASE_URL": setup.primary_url, "LOG_LEVEL": "warning", "DB_POOL_MAX": "20"}
    with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as writes, \
            worker(env):
        await writes.ready()
        setup.writer_url = writes.url
        await quiet_queue(setup.admin_url)
        for _ in range(rounds):
            for replica in (True, False):
                runs[replica].append(await one_case(setup, load, seconds, replica))

    def med(replica: bool, which: int, field: str) -> float:
        return float(statistics.median(getattr(r[which], field) for r in runs[replica]))

    print(f"\n{seconds:g} s per case, {rounds} round(s), medians")
    print(f"{'case':34} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'bad':>5}")
    for replica in (True, False):
        name = "replica" if replica else "no replica"
        for which, what in ((0, "summary"), (1, "commands")):
            print(f"{what + ', ' + name:34} {med(replica, which, 'rps'):8.0f} "
                  f"{med(replica, which, 'p50_ms'):8.2f} {med(replica, which, 'p99_ms'):8.2f} "
                  f"{sum(r[which].bad for r in runs[replica]):5d}")
    bad = sum(r[i].bad for rs in runs.values() for r in rs for i in (0, 1))
    if bad:
        print(f"WARNING: {bad} requests were answered with errors", file=sys.stderr)
    rows: list[dict[str, object]] = []
    for which, what, field, unit in ((0, "summary", "rps", "req/s"),
                                     (0, "summary", "p99_ms", "p99 ms"),
                                     (1, "commands", "p99_ms", "p99 ms"),
                                     (1, "commands", "rps", "/s")):
        value, base = med(True, which, field), med(False, which, field)
        rows.append({"figure": f"{what} {unit}, read replica (baseline: none)",
                     "value": round(value, 1), "baseline": round(base, 1),
                     "ratio": round(value / base, 2) if base else ""})
    report(f"replica (wrk: summary from 16 connections, ~200 commands/s from {WRITERS}; "
           f"{seconds:g} s per case, {rounds} round(s))", rows)


async def run(seconds: float, rounds: int) -> None:
    primary = primary_server()
    replica: PostgresServer | None = None
    try:
        primary.options += " -c max_connections=200 -c shared_buffers=256MB"
        primary.start()
        began = time.perf_counter()
        setup = await prepare(primary)
        replica = replica_of(primary)
        replica.options += " -c max_connections=200 -c shared_buffers=256MB"
        replica.start()
        setup.replica_url = with_database(replica.url, "postgres", user=RUNTIME_USER,
                                          password=RUNTIME_PASSWORD)
        print(f"seeded {TICKETS} tickets and a replica in {time.perf_counter() - began:.1f} s")
        await measure(setup, seconds, rounds)
    finally:
        if replica is not None:
            replica.destroy()
        primary.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="15 s per case, 3 rounds")
    parser.add_argument("--seconds", type=float, help="per case (default 10, 15 with --full)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 1, 3 --full)")
    args = parser.parse_args()
    seconds = args.seconds or (15.0 if args.full else 10.0)
    rounds = args.rounds or (3 if args.full else 1)
    asyncio.run(run(seconds, rounds))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.replica")
    main()
