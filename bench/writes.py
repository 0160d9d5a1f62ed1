"""Ticket writes against a plain CRUD helpdesk, and what makes a write dearer.

    python -m bench.writes [--tree PATH] [--seconds 8] [--rounds 3] [--tickets 60000]

One run starts a Postgres of its own (bench/common.py ``private_server``), serves the
helpdesk from ``--tree`` (a checkout with its own ``.venv``; default this one) as
``helpdesk serve --workers 1``, and bench/crud_baseline.py (a FastAPI + asyncpg app
that writes a row under row-level security with an audit trigger, served as ours is)
in one process too. Both stay up for the whole run and are loaded in turn by wrk
(pinned as bench/http.py pins it, 16 connections), in alternating rounds. Around each
case the CPU time of the server's process tree and of the Postgres server's process
tree is read (bench/cpu_per_request.py) and divided by the requests served: on a busy
machine CPU per request moves much less than rates do.

Printed for every case, as medians of the rounds: req/s, p50/p99 ms, server and
Postgres CPU ms per request; then these ratios:

- ``POST /v1/tickets`` (a known e-mail), ``POST /v1/tickets/{id}/messages`` (over 200
  tickets) and ``GET /v1/tickets?limit=25`` against the baseline's create, reply and
  list;
- a message on a ticket with 2,000 messages against one on a fresh ticket (one client
  posting in sequence, so no lock queue: median latency and CPU per request);
- an opening for a new e-mail (it creates the contact) against one for a known e-mail;
- creates in a tenant of ``--tickets`` tickets against creates in one of 1,000 (a fresh
  small tenant each round; one requester, whose contact holds all of them).

The helpdesk's database is migrated and seeded by the tree under test (bench/
writes_seed.py, run with the tree's interpreter), through its handlers in-process; the
time the large tenant took is printed. Everything is stopped at the end, on an error,
on SIGTERM, and when the run passes its time bound.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx

from bench.common import private_server, report, seeded_desk
from bench.cpu_per_request import postmaster, tree_cpu
from bench.crud_baseline import create_database
from bench.http import CONNECTIONS, NEW_EMAIL, ROOT, TICKET_BODY, Served, Wrk, lua, pct, serving

MESSAGES = 200  # tickets the message cases spread over, in each server
DEEP = 2_000  # messages on the deep ticket
SEQUENTIAL = 200  # messages per sequential block, each round (CPU is read in 10 ms ticks)
SMALL = 1_000  # tickets of the small tenants
# The requester of every ticket seed_tickets opens.
GROWTH_BODY = ('{"subject": "Printer on fire", "body": "It is really on fire.", '
               '"requester": {"email": "bench@example.com"}, "priority": "high"}')
MESSAGE_BODY = '{"body": "On it."}'


@dataclass(frozen=True)
class Sample:
    rps: float
    p50_ms: float
    p99_ms: float
    server_ms: float  # CPU per request
    postgres_ms: float
    bad: int


T = TypeVar("T")
Case = tuple[str, Served, str]  # name, the server it loads, its wrk script

FIELDS = (("rps", "req/s"), ("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"),
          ("server_ms", "server CPU ms/req"), ("postgres_ms", "Postgres CPU ms/req"))


class Bench:
    """The helpdesk's server, the Postgres under it (and the baseline's), and what each
    case measured."""

    def __init__(self, ours: Served, postgres_pid: int) -> None:
        self.ours, self.pg = ours, postgres_pid
        self.wrk = Wrk()
        self.runs: dict[str, list[Sample]] = {}

    def _cpu(self, server: Served) -> tuple[float, float]:
        return tree_cpu(server.proc.pid), tree_cpu(self.pg)

    def load(self, case: str, server: Served, seconds: float, script: str) -> None:
        """wrk on ``server`` for a second (warm), then for ``seconds``, measured."""
        self.wrk.run(server.url, 1, script)
        s0, p0 = self._cpu(server)
        r = self.wrk.run(server.url, seconds, script)
        s1, p1 = self._cpu(server)
        n = max(r.requests, 1)
        self._keep(case, Sample(r.rps, r.p50_ms, r.p99_ms, 1000 * (s1 - s0) / n,
                                1000 * (p1 - p0) / n, r.bad))

    async def in_sequence(self, case: str, client: httpx.AsyncClient, path: str) -> None:
        """SEQUENTIAL messages to ``path``, one after another."""
        times, bad = [], 0
        s0, p0 = self._cpu(self.ours)
        began = time.perf_counter()
        for _ in range(SEQUENTIAL):
            t = time.perf_counter()
            r = await client.post(path, content=MESSAGE_BODY)
            times.append(time.perf_counter() - t)
            bad += r.status_code != 201
        elapsed = time.perf_counter() - began
        s1, p1 = self._cpu(self.ours)
        times.sort()
        self._keep(case, Sample(SEQUENTIAL / elapsed, 1000 * statistics.median(times),
                                1000 * pct(times, 0.99), 1000 * (s1 - s0) / SEQUENTIAL,
                                1000 * (p1 - p0) / SEQUENTIAL, bad))

    def _keep(self, case: str, sample: Sample) -> None:
        self.runs.setdefault(case, []).append(sample)
        print(f"  {case:40} req/s {sample.rps:7.0f}  server ms/req {sample.server_ms:5.2f}  "
              f"Postgres ms/req {sample.postgres_ms:5.2f}  bad {sample.bad}  "
              f"load {os.getloadavg()[0]:.1f}", flush=True)

    def med(self, case: str, field: str) -> float:
        return float(statistics.median(getattr(s, field) for s in self.runs[case]))

    def ratios(self, case: str, base: str, label: str,
               fields: tuple[tuple[str, str], ...] = FIELDS) -> list[dict[str, object]]:
        rows: list[dict[str, object]] = []
        for field, name in fields:
            value, baseline = self.med(case, field), self.med(base, field)
            rows.append({"figure": f"{name}, {label}", "value": round(value, 2),
                         "baseline": round(baseline, 2), "ratio": round(value / baseline, 2)})
        return rows


async def deep_ticket(url: str, key: str) -> str:
    """A ticket opened over HTTP, then given DEEP messages by 4 clients at once."""
    async with httpx.AsyncClient(base_url=url, headers=_headers(key), timeout=30) as client:
        opened = await client.post("/v1/tickets", content=TICKET_BODY)
        ticket = str(opened.raise_for_status().json()["id"])

        async def post(n: int) -> None:
            for _ in range(n):
                (await client.post(f"/v1/tickets/{ticket}/messages",
                                   content=MESSAGE_BODY)).raise_for_status()

        await asyncio.gather(*(post(DEEP // 4) for _ in range(4)))
    return ticket


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


async def run(tree: Path, seconds: float, rounds: int, tickets: int) -> None:
    with private_server(max_connections="300", shared_buffers="256MB") as server_url, \
            ExitStack() as stack:
        pg = postmaster(int(server_url.rsplit(":", 1)[1].split("/")[0]))
        began = time.perf_counter()
        desk = seeded_desk(tree, server_url, tickets, rounds, timeout=300 + tickets / 50)
        print(f"helpdesk seeded from {tree} in {time.perf_counter() - began:.0f} s; "
              f"{tickets:,} tickets of one tenant in {desk['large_seconds']} s", flush=True)
        crud_tenant, crud_key = uuid.uuid4(), secrets.token_urlsafe(24)
        crud_url, crud_tickets = await create_database(server_url, crud_tenant, MESSAGES)
        admin = await asyncpg.connect(desk["admin_url"])
        try:
            await admin.execute("VACUUM ANALYZE")  # no autovacuum of the seed mid-case
        finally:
            await admin.close()

        pool = {"DB_POOL_MAX": str(CONNECTIONS + 4)}
        ours = stack.enter_context(serving(
            ["-m", "api.cli.main", "serve", "--workers", "1"],
            pool | {"DATABASE_URL": desk["runtime_url"], "LOG_LEVEL": "warning",
                    "RUN_SCHEDULER": "false"}, tree))
        crud = stack.enter_context(serving(
            ["-m", "bench.crud_baseline"],
            pool | {"CRUD_DATABASE_URL": crud_url, "CRUD_TENANT": str(crud_tenant),
                    "CRUD_KEY": crud_key}))
        await ours.ready()
        await crud.ready()
        key = desk["main"]["key"]
        began = time.perf_counter()
        deep = await deep_ticket(ours.url, key)
        print(f"{DEEP:,} messages on one ticket over HTTP in {time.perf_counter() - began:.0f} s")

        bench = Bench(ours, pg)
        stack.callback(shutil.rmtree, bench.wrk.dir, ignore_errors=True)
        print(f"wrk: {bench.wrk.path}, "
              + (f"pinned: {' '.join(bench.wrk.pin)}" if bench.wrk.pin else "not pinned"))
        creates = lua([("POST", "/v1/tickets", TICKET_BODY)], [key])
        pairs: list[tuple[Case, Case]] = [
            (("create", ours, creates),
             ("CRUD create", crud, lua([("POST", "/v1/tickets", TICKET_BODY)], [crud_key]))),
            (("message", ours, _messages(desk["main"]["tickets"], key)),
             ("CRUD message", crud, _messages(crud_tickets, crud_key))),
            (("list", ours, lua([("GET", "/v1/tickets?limit=25", None)], [key])),
             ("CRUD list", crud, lua([("GET", "/v1/tickets?limit=25", None)], [crud_key]))),
            (("create, new e-mail", ours, NEW_EMAIL.replace("KEY", key)),
             ("create, known e-mail", ours, creates)),
        ]
        async with httpx.AsyncClient(base_url=ours.url, headers=_headers(key),
                                     timeout=30) as client:
            for round_ in range(rounds):
                print(f"round {round_ + 1} of {rounds}", flush=True)
                fresh = str((await client.post("/v1/tickets", content=TICKET_BODY))
                            .raise_for_status().json()["id"])
                growth = [(f"create at {tickets:,}", desk["large"]["key"]),
                          (f"create at {SMALL:,}", desk["small"][round_]["key"])]
                sequential = [("message, fresh ticket", fresh),
                              (f"message, ticket of {DEEP:,} messages", deep)]
                for case, ticket in _turn(sequential, round_):
                    await bench.in_sequence(case, client, f"/v1/tickets/{ticket}/messages")
                for pair in pairs:
                    for case, server, script in _turn(list(pair), round_):
                        bench.load(case, server, seconds, script)
                for case, tenant_key in _turn(growth, round_):
                    bench.load(case, ours, seconds,
                               lua([("POST", "/v1/tickets", GROWTH_BODY)], [tenant_key]))
        sizes = await _tenant_sizes(desk)

    _print(bench, seconds, rounds)
    print(f"tickets at the end: large tenant {sizes[desk['large']['id']]:,}, small tenants "
          + ", ".join(f"{sizes[s['id']]:,}" for s in desk["small"]))
    rows = (bench.ratios("create", "CRUD create", "create (baseline: CRUD create)")
            + bench.ratios("message", "CRUD message", "message (baseline: CRUD reply)")
            + bench.ratios("list", "CRUD list", "list of 25 (baseline: CRUD list)")
            + bench.ratios(f"message, ticket of {DEEP:,} messages", "message, fresh ticket",
                           f"message on a ticket of {DEEP:,}, in sequence (baseline: fresh)",
                           FIELDS[1:2] + FIELDS[3:])
            + bench.ratios("create, new e-mail", "create, known e-mail",
                           "opening, new e-mail (baseline: known e-mail)", FIELDS[:1] + FIELDS[3:])
            + bench.ratios(f"create at {tickets:,}", f"create at {SMALL:,}",
                           f"create at {tickets:,} tickets (baseline: at {SMALL:,})",
                           FIELDS[:1] + FIELDS[3:]))
    report(f"writes against a CRUD baseline (wrk, {CONNECTIONS} connections, {seconds:g} s "
           f"per case, {rounds} round(s), 1 process each; ratio: ours / baseline)", rows)


def _turn(items: list[T], round_: int) -> list[T]:
    """Who goes first alternates from round to round."""
    return items[::-1] if round_ % 2 else items


def _messages(tickets: list[str], key: str) -> str:
    return lua([("POST", f"/v1/tickets/{t}/messages", MESSAGE_BODY) for t in tickets], [key])


async def _tenant_sizes(desk: Any) -> dict[str, int]:
    admin = await asyncpg.connect(desk["admin_url"])
    try:
        rows = await admin.fetch("SELECT tenant_id, count(*) FROM tickets GROUP BY tenant_id")
    finally:
        await admin.close()
    return {str(r[0]): int(r[1]) for r in rows}


def _print(bench: Bench, seconds: float, rounds: int) -> None:
    print(f"\n{CONNECTIONS} connections (sequential: 1 client, {SEQUENTIAL} messages), "
          f"{seconds:g} s per case, {rounds} round(s), medians")
    print(f"{'case':40} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'server ms/req':>14} "
          f"{'Postgres ms/req':>16} {'bad':>5}")
    for case, samples in bench.runs.items():
        print(f"{case:40} {bench.med(case, 'rps'):8.0f} {bench.med(case, 'p50_ms'):8.2f} "
              f"{bench.med(case, 'p99_ms'):8.2f} {bench.med(case, 'server_ms'):14.2f} "
              f"{bench.med(case, 'postgres_ms'):16.2f} {sum(s.bad for s in samples):5d}")
    bad = sum(s.bad for samples in bench.runs.values() for s in samples)
    if bad:
        print(f"WARNING: {bad} requests were answered with errors", file=sys.stderr)


def _stop(signum: int, _frame: object) -> None:
    # Raised in the main thread, so every server and the Postgres are stopped on the way out.
    raise SystemExit(f"bench.writes: stopped by {signal.Signals(signum).name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT,
                        help="the checkout to serve the helpdesk from (default: this one)")
    parser.add_argument("--full", action="store_true", help="8 s per case, 3 rounds")
    parser.add_argument("--seconds", type=float, help="per case (default 5, or 8 with --full)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 2, 3 --full)")
    parser.add_argument("--tickets", type=int, default=60_000,
                        help="the large tenant's tickets (default 60,000)")
    args = parser.parse_args()
    seconds = args.seconds or (8.0 if args.full else 5.0)
    rounds = args.rounds or (3 if args.full else 2)
    tree = args.tree.resolve()
    # Seeding, then per round 10 wrk cases of a warm second and ``seconds`` each.
    bound = 600 + args.tickets / 50 + rounds * 10 * (seconds + 10)
    print(f"time bound: {bound / 60:.0f} min")
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGALRM, _stop)
    signal.alarm(int(bound))
    try:
        asyncio.run(run(tree, seconds, rounds, args.tickets))
    finally:
        signal.alarm(0)


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.writes")
    main()
