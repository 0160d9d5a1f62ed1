"""HTTP benchmark of the API as users run it: ``helpdesk serve``, loaded by ``wrk``.

Run from the repository root (as a module, so this file never shadows the standard
library's ``http``)::

    python -m bench.http            # 5 s per case, one round
    python -m bench.http --full     # 10 s per case, three alternating rounds (medians)

Load comes from ``wrk`` (a compiled generator, Debian package ``wrk``; the bench
installs it with apt when it runs as root and finds none, and says so), pinned to
the last core with ``taskset`` when there is one, 16 connections, never from Python.
Both servers run the same way, one uvicorn per process: ``helpdesk serve --workers
N`` and a trivial FastAPI app (``GET /trivial``) under ``uvicorn --workers N``.

Figures, each as a ratio against a baseline of the same run:

- ``GET /v1/tickets?limit=25`` (one tenant, 500 tickets), ``POST /v1/tickets`` and
  ``POST /v1/tickets/{id}/messages`` against the trivial route, on 1 process and on
  2 (targets on one process: list >= 0.15, create and message >= 0.08);
- creates in 100 tenants against creates in one tenant;
- writes to one tenant on 2 processes against 1 (target >= 1.6);
- creates against the append path alone (units of work of one event, 16 writers, no
  HTTP);
- the time the tenant head lock is held, from the database: each create's commit
  timestamp (``track_commit_timestamp``) less the moment it could take the lock (its
  first event's ``recorded_at``, set just before the trigger takes the head, or the
  previous commit of the tenant, whichever is later). The commit timestamp is taken
  before the WAL flush, which the lock also spans; the mean flush time
  (``track_wal_io_timing``) is shown beside it (target p99 < 2 ms);
- the median latency of a page 200 pages deep against the first page.

``--contacts`` measures only what contacts cost (alternating rounds, 1 process):

- ``POST /v1/tickets`` for a known e-mail (the requester links to its contact) and
  for a new e-mail each time (the contact is created) against the same without any
  contact resolution (bench/without_contacts.py: the product with that one step left
  out; target: ratio >= 0.85, no more than 15% slower);
- ``EXPLAIN ANALYZE`` of ``GET /v1/tickets?organization_id=`` (its generic plan, as
  the runtime role under row-level security) over 100,000 tickets of 10,000 contacts
  in 100 organizations: p99 of the database's execution time over 300 runs, first
  pages and pages 20 deep, against the unfiltered first page (target p99 < 20 ms).
  The rows are bulk-copied in SQL from one ticket opened through the write path (same
  documents, sizes and indexes as real ones; only their number is made up).

Database: a Postgres of the bench's own (the machine's binaries, started with the
settings above), or ``BENCH_DATABASE_URL`` (a superuser URL; the lock figure then
needs ``track_commit_timestamp = on`` there).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
import httpx
from fastapi import FastAPI

from bench.common import free_port, private_server, report
from tests.support.desk import seed_tickets

ROOT = Path(__file__).resolve().parents[1]
K = TypeVar("K")
CONNECTIONS = 16
TICKETS = 500
TENANTS = 100
DEPTH, PAGE = 200, 25


def trivial_app() -> FastAPI:
    """The baseline: the smallest FastAPI app, served like the helpdesk."""
    app = FastAPI()

    @app.get("/trivial")
    async def read() -> dict[str, bool]:
        return {"ok": True}

    @app.get("/health/live")
    async def live() -> dict[str, str]:
        return {"status": "ok"}

    return app


# --- wrk -----------------------------------------------------------------------------------


def find_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("wrk not found: installing the Debian package wrk", file=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True,
                       capture_output=True)
        found = shutil.which("wrk")
        if found:
            return found
    raise SystemExit("this bench needs wrk (Debian package wrk): apt-get install wrk")


@dataclass(frozen=True)
class Load:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    bad: int  # non-2xx answers and socket errors


_UNIT = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNIT[unit]


def parse_wrk(out: str) -> Load:
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    requests = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    bad = sum(int(n) for n in re.findall(r"Non-2xx or 3xx responses: (\d+)", out))
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)",
                       out)
    if errors:
        bad += sum(int(n) for n in errors.groups())
    return Load(rps, p50, p99, requests, bad)


def lua(requests: list[tuple[str, str, str | None]], key_pool: list[str]) -> str:
    """A wrk script sending, per request, one of ``requests`` (method, path, body) at
    random, with one of ``key_pool`` as its bearer key."""
    def quote(text: str) -> str:
        return "[==[" + text + "]==]"

    rows = ",\n".join("{" + ", ".join([quote(m), quote(p), quote(b) if b else "nil"]) + "}"
                      for m, p, b in requests)
    keys = ",\n".join(quote(k) for k in key_pool)
    return f"""
local requests = {{
{rows}
}}
local keys = {{
{keys}
}}
math.randomseed(os.time())
request = function()
  local r = requests[math.random(#requests)]
  local headers = {{["Authorization"] = "Bearer " .. keys[math.random(#keys)]}}
  if r[3] then headers["Content-Type"] = "application/json" end
  return wrk.format(r[1], r[2], headers, r[3])
end
"""


class Wrk:
    def __init__(self) -> None:
        self.path = find_wrk()
        cores = sorted(os.sched_getaffinity(0))
        self.pin = (["taskset", "-c", str(cores[-1])]
                    if shutil.which("taskset") and len(cores) > 1 else [])
        self.dir = Path(tempfile.mkdtemp(prefix="hd-bench-wrk-"))

    def run(self, url: str, seconds: float, script: str | None = None,
            connections: int = CONNECTIONS) -> Load:
        cmd = [*self.pin, self.path, "-t1", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
        if script is not None:
            path = self.dir / f"{uuid.uuid4().hex}.lua"
            path.write_text(script)
            cmd += ["-s", str(path)]
        out = subprocess.run([*cmd, url], check=True, capture_output=True, text=True,
                             timeout=seconds + 60).stdout
        return parse_wrk(out)


# --- servers --------------------------------------------------------------------------------


class Served:
    """One server process tree on a port of its own, run from ``tree`` (a checkout; one
    other than this one with its own ``.venv``)."""

    def __init__(self, args: list[str], env: dict[str, str], tree: Path = ROOT) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        python = sys.executable if tree == ROOT else str(tree / ".venv/bin/python")
        self.proc = subprocess.Popen([python, *args, "--port", str(self.port)],
                                     cwd=tree, env=os.environ | env,
                                     stdout=subprocess.DEVNULL)

    async def ready(self) -> None:
        async with httpx.AsyncClient() as client:
            for _ in range(600):
                if self.proc.poll() is not None:
                    raise SystemExit(f"server exited with {self.proc.returncode}")
                try:
                    if (await client.get(self.url + "/health/live", timeout=1)).status_code \
                            == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.05)
        raise SystemExit(f"server on {self.url} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def alternating(url: str, scripts: Mapping[K, str], seconds: float, rounds: int,
                label: Callable[[K], str] = str) -> tuple[dict[K, list[float]], int]:
    """Each script under wrk for ``seconds``, in ``rounds`` rounds whose order alternates
    (so neither case always runs on a warmer server), each round printed: the req/s of
    every round by case, and the count of bad answers (errors, timeouts) in all."""
    wrk = Wrk()
    rates: dict[K, list[float]] = {k: [] for k in scripts}
    bad = 0
    for round_ in range(rounds):
        order = list(scripts) if round_ % 2 == 0 else list(reversed(scripts))
        for case in order:
            load = wrk.run(url + "/", seconds, scripts[case], CONNECTIONS)
            rates[case].append(load.rps)
            bad += load.bad
            print(f"round {round_ + 1} {label(case)}: {load.rps:.0f} req/s, "
                  f"p99 {load.p99_ms:.1f} ms, bad {load.bad}", flush=True)
    return rates, bad


@contextmanager
def serving(args: list[str], env: dict[str, str], tree: Path = ROOT) -> Iterator[Served]:
    server = Served(args, env, tree)
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class OneApi:
    """One ``helpdesk serve --workers 1`` on a migrated database of a private Postgres."""

    served: Served
    admin_url: str
    server_url: str  # the private Postgres (superuser)


@asynccontextmanager
async def one_api() -> AsyncIterator[OneApi]:
    """The setup of the single-server HTTP benches: a private Postgres, a database cloned
    from a migrated template, and one API process on it, ready; all gone afterwards."""
    from tests.support.pg import Databases

    with private_server(max_connections="300", shared_buffers="256MB") as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            env = {"DATABASE_URL": db.runtime_url, "LOG_LEVEL": "warning",
                   "DB_POOL_MAX": str(CONNECTIONS + 8)}
            with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as served:
                await served.ready()
                yield OneApi(served, db.admin_url, server)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


# --- data -----------------------------------------------------------------------------------


@dataclass
class Desk:
    runtime_url: str
    admin_url: str
    tenant: Any  # the one tenant of the single-tenant cases
    key: str
    tickets: list[str]
    many_keys: list[str]  # one admin key per tenant of the 100-tenant case
    deep: Any  # a tenant with DEPTH pages of tickets, for the page-depth figure


async def make_desk(admin_url: str, runtime_url: str) -> Desk:
    from handlers.tenants import create_tenant_as_operator

    tenant = await create_tenant_as_operator(admin_url, "bench")
    tickets = await seed_tickets(runtime_url, tenant.tenant_id, TICKETS)
    many = [await create_tenant_as_operator(admin_url, f"bench {i}") for i in range(TENANTS)]
    deep = await create_tenant_as_operator(admin_url, "deep")
    await seed_tickets(runtime_url, deep.tenant_id, DEPTH * PAGE + PAGE)
    return Desk(runtime_url, admin_url, tenant, tenant.admin_key.secret, tickets,
                [t.admin_key.secret for t in many], deep)


TICKET_BODY = ('{"subject": "Printer on fire", "body": "It is really on fire.", '
               '"requester": {"email": "ann@example.com", "name": "Ann"}, '
               '"priority": "high", "source": "email", "tags": ["hardware"]}')


def scripts(desk: Desk) -> dict[str, str | None]:
    return {
        "trivial": None,
        "list": lua([("GET", "/v1/tickets?limit=25", None)], [desk.key]),
        "create": lua([("POST", "/v1/tickets", TICKET_BODY)], [desk.key]),
        "create, 100 tenants": lua([("POST", "/v1/tickets", TICKET_BODY)], desk.many_keys),
        "message": lua([("POST", f"/v1/tickets/{t}/messages", '{"body": "On it."}')
                        for t in desk.tickets], [desk.key]),
    }


# --- contacts ------------------------------------------------------------------------------

NEW_EMAIL = """
math.randomseed(os.time() + os.clock() * 1000000)
local n = 0
request = function()
  n = n + 1
  local email = string.format("new-%d-%d@bench.example", math.random(1, 1000000000), n)
  local body = '{"subject": "Printer on fire", "body": "It is really on fire.", ' ..
    '"requester": {"email": "' .. email .. '"}, "priority": "high", "source": "email", ' ..
    '"tags": ["hardware"]}'
  return wrk.format("POST", "/v1/tickets", {["Authorization"] = "Bearer KEY",
                                          ["Content-Type"] = "application/json"}, body)
end
"""


async def measure_contacts(desk: Desk, seconds: float, rounds: int) -> None:
    """Opening with contact resolution against the same without; the list by
    organization's plan over 100,000 tickets."""
    load = Wrk()
    env = {"DATABASE_URL": desk.runtime_url, "LOG_LEVEL": "warning", "RUN_SCHEDULER": "false",
           "DB_POOL_MAX": str(CONNECTIONS + 4)}
    known = lua([("POST", "/v1/tickets", TICKET_BODY)], [desk.key])
    fresh = NEW_EMAIL.replace("KEY", desk.key)
    runs: dict[str, list[Load]] = {}
    cases = [("without resolution", "bench.without_contacts", known),
             ("known e-mail (links)", "api.cli.main", known),
             ("new e-mail (creates)", "api.cli.main", fresh)]
    for round_ in range(rounds):
        # Each round starts with another case, so no case always runs first (cold).
        for case, module, script in cases[round_ % 3:] + cases[:round_ % 3]:
            with serving(["-m", module, "serve", "--workers", "1"], env) as server:
                await server.ready()
                load.run(server.url, 1, script)  # warm
                runs.setdefault(case, []).append(load.run(server.url, seconds, script))

    def med(case: str, field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs[case])

    for case, results in runs.items():
        print(f"{case:24} req/s {med(case, 'rps'):8.0f}  p99 ms {med(case, 'p99_ms'):8.2f}  "
              f"bad {sum(r.bad for r in results)}")
    base = med("without resolution", "rps")
    rows: list[dict[str, object]] = []
    for case in ("known e-mail (links)", "new e-mail (creates)"):
        rows.append({"figure": f"create req/s, {case} (baseline: without)",
                     "value": round(med(case, "rps")), "baseline": round(base),
                     "ratio": round(med(case, "rps") / base, 3), "target": ">= 0.85"})
    rows += await organization_list_plan(desk)
    report(f"contacts (wrk, {CONNECTIONS} connections, {seconds:g} s per case, "
           f"{rounds} round(s), 1 process)", rows)


ORGS, CONTACTS, ORG_TICKETS = 100, 10_000, 100_000

SEED_PEOPLE = """
INSERT INTO organizations (tenant_id, id, version, name, domains, created_at, updated_at)
SELECT $1, gen_random_uuid(), 1, 'Org ' || i, ARRAY['org' || i || '.example'], now(), now()
  FROM generate_series(1, $2) AS i;
INSERT INTO contacts (tenant_id, id, version, email, organization_id, created_at, updated_at)
SELECT $1, gen_random_uuid(), 1, 'c' || i || '@org' || (i % $2 + 1) || '.example',
       (SELECT id FROM organizations WHERE tenant_id = $1 AND name = 'Org ' || (i % $2 + 1)),
       now(), now()
  FROM generate_series(1, $3) AS i;
"""

SEED_TICKETS = """
WITH c AS (SELECT id, organization_id, row_number() OVER () AS n FROM contacts
            WHERE tenant_id = $1),
     one AS (SELECT * FROM tickets WHERE tenant_id = $1 AND id = $2)
INSERT INTO tickets (tenant_id, id, version, state, priority, source, assignee, tags,
                     subject, requester, follow_up_of, clocks, state_json, created_at,
                     updated_at, view, contact_id, organization_id)
SELECT $1, gen_random_uuid(), 1, one.state, one.priority, one.source, NULL, one.tags,
       one.subject, one.requester, NULL, one.clocks, one.state_json,
       now() - make_interval(secs => i), now(), one.view, c.id, c.organization_id
  FROM generate_series(1, $3) AS i
  JOIN c ON c.n = (i % $4) + 1
 CROSS JOIN one
"""


async def organization_list_plan(desk: Desk) -> list[dict[str, object]]:
    """p99 of the database's time for the list by organization (generic plan), first
    pages and deep pages, against the unfiltered first page."""
    from handlers.tenants import create_tenant_as_operator
    from projections.reads import TicketFilters, ticket_list_query

    tenant = await create_tenant_as_operator(desk.admin_url, "organizations")
    [one] = await seed_tickets(desk.runtime_url, tenant.tenant_id, 1)
    admin = await asyncpg.connect(desk.admin_url)
    try:
        began = time.perf_counter()
        await admin.execute(SEED_PEOPLE.replace("$2", str(ORGS)).replace("$3", str(CONTACTS))
                            .replace("$1", f"'{tenant.tenant_id}'::uuid"))
        await admin.execute(SEED_TICKETS, tenant.tenant_id, uuid.UUID(one), ORG_TICKETS,
                            CONTACTS)
        await admin.execute("ANALYZE tickets; ANALYZE contacts; ANALYZE organizations")
        orgs = [r["id"] for r in await admin.fetch(
            "SELECT id FROM organizations WHERE tenant_id = $1", tenant.tenant_id)]
        print(f"seeded {ORG_TICKETS} tickets of {CONTACTS} contacts in "
              f"{time.perf_counter() - began:.1f} s")
    finally:
        await admin.close()

    conn = await asyncpg.connect(desk.runtime_url)
    times: dict[str, list[float]] = {"first": [], "deep": [], "unfiltered": []}
    try:
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                               str(tenant.tenant_id))
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            query, _ = ticket_list_query(TicketFilters(organization_id=uuid.uuid4()))
            await conn.execute(f"PREPARE by_org AS {query}")
            plain, _ = ticket_list_query(TicketFilters())
            await conn.execute(f"PREPARE plain AS {plain}")
            for i in range(300):
                org = orgs[i % len(orgs)]
                ms = await _explain(conn, f"by_org('{tenant.tenant_id}', 'infinity', "
                                          f"'ffffffff-ffff-ffff-ffff-ffffffffffff', 26, '{org}')")
                times["first"].append(ms)
                # 20 pages deep: the cursor of the 500th ticket of the organization.
                row = await conn.fetchrow(
                    "SELECT created_at, id FROM tickets WHERE tenant_id = $1 AND "
                    "organization_id = $2 ORDER BY created_at DESC, id DESC OFFSET 500 LIMIT 1",
                    tenant.tenant_id, org)
                times["deep"].append(await _explain(
                    conn, f"by_org('{tenant.tenant_id}', '{row['created_at'].isoformat()}', "
                          f"'{row['id']}', 26, '{org}')"))
                times["unfiltered"].append(await _explain(
                    conn, f"plain('{tenant.tenant_id}', 'infinity', "
                          f"'ffffffff-ffff-ffff-ffff-ffffffffffff', 26)"))
    finally:
        await conn.close()
    base = pct(sorted(times["unfiltered"]), 0.99)
    return [{"figure": f"list by organization p99 ms, {label} (baseline: unfiltered)",
             "value": round(pct(sorted(times[key]), 0.99), 3), "baseline": round(base, 3),
             "ratio": round(pct(sorted(times[key]), 0.99) / base, 2), "target": "< 20 ms"}
            for key, label in (("first", "first page"), ("deep", "page 20 deep"))]


async def _explain(conn: asyncpg.Connection, execute: str) -> float:
    """The database's planning plus execution time of a prepared statement, in ms."""
    value = await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE {execute}")
    [plan] = json.loads(value) if isinstance(value, str) else value  # text without a codec
    return float(plan["Planning Time"]) + float(plan["Execution Time"])


# --- the head lock, read from the database ---------------------------------------------------

HOLD = """
WITH tx AS (
    SELECT xmin, min(seq) AS first_seq, min(recorded_at) AS requested,
           pg_xact_commit_timestamp(xmin) AS committed
      FROM events
     WHERE tenant_id = $1 AND seq > $2
     GROUP BY xmin
), ordered AS (
    SELECT committed, requested,
           lag(committed) OVER (ORDER BY first_seq) AS previous
      FROM tx
)
SELECT extract(epoch FROM committed - greatest(requested, coalesce(previous, requested)))
       * 1000 AS hold_ms
  FROM ordered
 WHERE previous IS NOT NULL
"""


async def head(admin_url: str, tenant_id: Any) -> int:
    conn = await asyncpg.connect(admin_url)
    try:
        return int(await conn.fetchval("SELECT seq FROM tenant_heads WHERE tenant_id = $1",
                                       tenant_id))
    finally:
        await conn.close()


async def lock_holds(admin_url: str, tenant_id: Any, after_seq: int) -> list[float] | None:
    conn = await asyncpg.connect(admin_url)
    try:
        if await conn.fetchval("SHOW track_commit_timestamp") != "on":
            return None
        return sorted(float(r["hold_ms"]) for r in await conn.fetch(HOLD, tenant_id, after_seq))
    finally:
        await conn.close()


async def wal_flush_ms(admin_url: str) -> float | None:
    conn = await asyncpg.connect(admin_url)
    try:
        row = await conn.fetchrow("SELECT wal_sync, wal_sync_time FROM pg_stat_wal")
        if row is None or not row["wal_sync"] or not row["wal_sync_time"]:
            return None
        return float(row["wal_sync_time"]) / float(row["wal_sync"])
    finally:
        await conn.close()


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p))]


# --- the run -------------------------------------------------------------------------------


async def measure(desk: Desk, seconds: float, rounds: int, processes: int) -> None:
    load = Wrk()
    print(f"wrk: {load.path} {'pinned: ' + ' '.join(load.pin) if load.pin else 'not pinned'}")
    env = {"DATABASE_URL": desk.runtime_url, "LOG_LEVEL": "warning", "RUN_SCHEDULER": "false",
           "DB_POOL_MAX": str(CONNECTIONS + 4)}
    runs: dict[tuple[str, int], list[Load]] = {}
    holds: dict[int, list[float]] = {}
    lua_scripts = scripts(desk)
    for _ in range(rounds):
        for n in (1, processes):
            helpdesk_args = ["-m", "api.cli.main", "serve", "--workers", str(n)]
            trivial_args = ["-m", "uvicorn", "--factory", "bench.http:trivial_app",
                            "--workers", str(n), "--log-level", "warning", "--no-access-log"]
            with serving(trivial_args, {}) as trivial:
                await trivial.ready()
                runs.setdefault(("trivial", n), []).append(
                    load.run(trivial.url + "/trivial", seconds))
            with serving(helpdesk_args, env) as helpdesk:
                await helpdesk.ready()
                load.run(helpdesk.url + "/v1/tickets?limit=25", 1, lua_scripts["list"])  # warm
                for case in ("list", "create", "create, 100 tenants", "message"):
                    before = await head(desk.admin_url, desk.tenant.tenant_id)
                    runs.setdefault((case, n), []).append(
                        load.run(helpdesk.url, seconds, lua_scripts[case]))
                    if case == "create":
                        found = await lock_holds(desk.admin_url, desk.tenant.tenant_id, before)
                        if found:
                            holds.setdefault(n, []).extend(found)

    def med(case: str, n: int, field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs[(case, n)])

    print(f"\n{CONNECTIONS} connections, {seconds:g} s per case, {rounds} round(s), medians")
    print(f"{'case':28} {'procs':>5} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'bad':>5}")
    for (case, n), results in runs.items():
        print(f"{case:28} {n:5d} {med(case, n, 'rps'):8.0f} {med(case, n, 'p50_ms'):8.2f} "
              f"{med(case, n, 'p99_ms'):8.2f} {sum(r.bad for r in results):5d}")
    bad = sum(r.bad for rs in runs.values() for r in rs)
    if bad:
        print(f"WARNING: {bad} requests were answered with errors", file=sys.stderr)

    rows: list[dict[str, object]] = []
    targets = {"list": ">= 0.15", "create": ">= 0.08", "message": ">= 0.08"}
    for n in sorted({1, processes}):
        base = med("trivial", n, "rps")
        for case in ("list", "create", "message"):
            rows.append({"figure": f"{case} req/s, {n} proc (baseline: trivial)",
                         "value": round(med(case, n, "rps")), "baseline": round(base),
                         "ratio": round(med(case, n, "rps") / base, 3),
                         "target": targets[case] if n == 1 else ""})
            rows.append({"figure": f"{case} p99 ms, {n} proc (baseline: trivial)",
                         "value": round(med(case, n, "p99_ms"), 1),
                         "baseline": round(med("trivial", n, "p99_ms"), 1),
                         "ratio": round(med(case, n, "p99_ms") / med("trivial", n, "p99_ms"), 1)})
        rows.append({"figure": f"create req/s, 100 tenants, {n} proc (baseline: 1 tenant)",
                     "value": round(med("create, 100 tenants", n, "rps")),
                     "baseline": round(med("create", n, "rps")),
                     "ratio": round(med("create, 100 tenants", n, "rps")
                                    / med("create", n, "rps"), 2)})
    if processes > 1:
        for case in ("create", "message", "list"):
            rows.append({"figure": f"{case} req/s, {processes} procs (baseline: 1 proc)",
                         "value": round(med(case, processes, "rps")),
                         "baseline": round(med(case, 1, "rps")),
                         "ratio": round(med(case, processes, "rps") / med(case, 1, "rps"), 2),
                         "target": ">= 1.6" if case == "create" else ""})
        rows.append({"figure": f"trivial req/s, {processes} procs (baseline: 1 proc)",
                     "value": round(med("trivial", processes, "rps")),
                     "baseline": round(med("trivial", 1, "rps")),
                     "ratio": round(med("trivial", processes, "rps")
                                    / med("trivial", 1, "rps"), 2)})

    alone = await append_alone(desk, seconds)
    rows.append({"figure": "create req/s, 1 proc (baseline: appends alone/s, 16 writers)",
                 "value": round(med("create", 1, "rps")), "baseline": round(alone),
                 "ratio": round(med("create", 1, "rps") / alone, 3)})
    flush = await wal_flush_ms(desk.admin_url)
    for n, values in sorted(holds.items()):
        rows.append({"figure": f"head lock held p50 ms, creates, {n} proc (+ WAL flush)",
                     "value": round(pct(values, 0.5), 3),
                     "baseline": None if flush is None else round(flush, 3), "ratio": ""})
        rows.append({"figure": f"head lock held p99 ms, creates, {n} proc (+ WAL flush)",
                     "value": round(pct(values, 0.99), 3),
                     "baseline": None if flush is None else round(flush, 3), "ratio": "",
                     "target": "< 2 ms" if n == 1 else ""})
    first, deep = await page_depth(desk, processes)
    rows.append({"figure": f"page {DEPTH} deep, median ms (baseline: first page)",
                 "value": round(deep, 2), "baseline": round(first, 2),
                 "ratio": round(deep / first, 2), "target": "<= 1.5"})
    report(f"http (wrk, {CONNECTIONS} connections, {seconds:g} s per case, {rounds} round(s))",
           rows)


async def append_alone(desk: Desk, seconds: float) -> float:
    """Units of work appending one event each, 16 writers, one tenant, no HTTP."""
    from bench.append import store_run

    count, elapsed = await store_run(desk.runtime_url, [desk.tenant.tenant_id], CONNECTIONS,
                                     seconds, label="bench-append-alone")
    return count / elapsed


async def page_depth(desk: Desk, processes: int) -> tuple[float, float]:
    """Median latency of the first page and of a page DEPTH pages deep (sequential)."""
    env = {"DATABASE_URL": desk.runtime_url, "LOG_LEVEL": "warning", "RUN_SCHEDULER": "false"}
    headers = {"Authorization": f"Bearer {desk.deep.admin_key.secret}"}
    with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as server:
        await server.ready()
        async with httpx.AsyncClient(base_url=server.url, headers=headers) as client:
            cursor = None
            for _ in range(DEPTH - 1):
                page = (await client.get("/v1/tickets", params={"limit": PAGE} | (
                    {"cursor": cursor} if cursor else {}))).json()
                cursor = page["next_cursor"]
            times: list[list[float]] = [[], []]
            for _ in range(60):
                for i, params in enumerate(({"limit": PAGE}, {"limit": PAGE, "cursor": cursor})):
                    began = time.perf_counter()
                    r = await client.get("/v1/tickets", params=params)
                    times[i].append(time.perf_counter() - began)
                    assert r.status_code == 200, r.text
    return 1000 * statistics.median(times[0]), 1000 * statistics.median(times[1])


async def run_contacts(seconds: float, rounds: int) -> None:
    """Only the contact figures: one tenant of 500 tickets, then the list plan."""
    from handlers.tenants import create_tenant_as_operator
    from tests.support.pg import Databases

    given = os.environ.get("BENCH_DATABASE_URL")
    with (_given(given) if given else private_server(max_connections="300",
                                                      shared_buffers="256MB")) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            tenant = await create_tenant_as_operator(db.admin_url, "bench")
            tickets = await seed_tickets(db.runtime_url, tenant.tenant_id, TICKETS)
            desk = Desk(db.runtime_url, db.admin_url, tenant, tenant.admin_key.secret,
                        tickets, [], None)
            await measure_contacts(desk, seconds, rounds)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


async def run(seconds: float, rounds: int, processes: int) -> None:
    from tests.support.pg import Databases

    given = os.environ.get("BENCH_DATABASE_URL")
    config = {"track_commit_timestamp": "on", "track_wal_io_timing": "on",
              "max_connections": "300", "shared_buffers": "256MB"}
    with (_given(given) if given else private_server(**config)) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            began = time.perf_counter()
            desk = await make_desk(db.admin_url, db.runtime_url)
            print(f"seeded in {time.perf_counter() - began:.1f} s")
            await measure(desk, seconds, rounds, processes)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


@contextmanager
def _given(url: str) -> Iterator[str]:
    yield url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="10 s per case, 3 rounds")
    parser.add_argument("--seconds", type=float, help="per case (default 5, or 10 with --full)")
    parser.add_argument("--rounds", type=int, help="alternating rounds (default 1, 3 --full)")
    parser.add_argument("--processes", type=int, default=2,
                        help="the multi-process cases' process count (default 2)")
    parser.add_argument("--contacts", action="store_true",
                        help="only what contacts cost: creates with and without resolution, "
                             "and the list by organization's plan")
    args = parser.parse_args()
    seconds = args.seconds or (10.0 if args.full else 5.0)
    rounds = args.rounds or (3 if args.full else 1)
    if args.contacts:
        asyncio.run(run_contacts(seconds, rounds))
        return
    asyncio.run(run(seconds, rounds, args.processes))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.http")
    main()
