"""What rules cost: command throughput under 100 rules that never match, rule lag at a
steady event rate, and one evaluation pass of time rules over many open tickets.

    python -m bench.rules [--seconds 8] [--rounds 3] [--rate 200] [--tickets 10000]
                          [--in-api]

One run starts a Postgres of its own (bench/common.py ``private_server``) and serves
``helpdesk serve --workers 1`` without the scheduler (``RUN_SCHEDULER=false``) next to a
``helpdesk worker``, which runs the projectors, the rule engine and the scheduler, as
docker-compose.yml deploys them: the rule engine is off the API's process, though on a
small machine it still shares the cores with it. With ``--in-api`` there is no worker:
the API process runs them itself (``RUN_SCHEDULER=true``), as a one-process deployment
does.

- **Throughput.** Two tenants of one database: one with no rules, one with 100 active
  rules on every event whose conditions never hold (each ends in ``tags contains
  never-<n>``, so every event loads the ticket and evaluates all 100). wrk (pinned as
  bench/http.py pins it, 16 connections) loads ``POST /v1/tickets/{id}/priority``
  over 200 tickets of each tenant, in alternating rounds; the ratio is the medians'.
- **Rule lag.** A third tenant with one rule that tags every new ticket; a client
  opens tickets at ``--rate`` per second for ``--seconds``. Lag is from the
  triggering event's commit to the rule's event's commit (``pg_xact_commit_timestamp``
  of both: the server runs with ``track_commit_timestamp``), p50/p99/max.
- **Time rules.** A fourth tenant with ``--tickets`` open tickets (seeded through the
  write path) and 20 time rules (every ``since``, 1 to 72 hours, half in business
  hours; one whose conditions hold for every ticket, 19 asking for urgent ones, which
  there are none of). One ``handlers.rule_timers.evaluate_tenant``
  pass at a moment where all clocks have run 30 hours: the database time is the sum
  of its statements' execution as asyncpg's query logger reports them; wall time too.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from bench.common import private_server, report
from bench.http import CONNECTIONS, Wrk, lua, serving

TICKETS_PER_TENANT = 200
RULES = 100


async def _tenant(admin_url: str, name: str) -> Any:
    from handlers.tenants import create_tenant_as_operator
    return await create_tenant_as_operator(admin_url, name)


async def _open(http: httpx.AsyncClient, key: str, n: int) -> list[str]:
    ids = []
    for i in range(n):
        r = await http.post("/v1/tickets", headers={"Authorization": f"Bearer {key}"}, json={
            "subject": f"bench {i}", "body": "b", "requester": {"email": "b@example.com"}})
        r.raise_for_status()
        ids.append(r.json()["id"])
    return ids


async def _rule(http: httpx.AsyncClient, key: str, body: dict[str, Any]) -> None:
    r = await http.post("/v1/rules", headers={"Authorization": f"Bearer {key}"}, json=body)
    if r.status_code != 201:
        raise SystemExit(f"rule refused: {r.text}")


def _priorities(tickets: list[str]) -> list[tuple[str, str, str | None]]:
    return [("POST", f"/v1/tickets/{t}/priority", f'{{"priority": "{p}"}}')
            for t in tickets for p in ("low", "high")]


async def throughput(url: str, admin_url: str, seconds: float, rounds: int) -> None:
    plain, ruled = await _tenant(admin_url, "no rules"), await _tenant(admin_url, "100 rules")
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        for i in range(RULES):
            await _rule(http, ruled.admin_key.secret, {
                "name": f"never {i}",
                "conditions": [{"field": "priority", "op": "in", "value": ["low", "high"]},
                               {"field": "tags", "op": "contains", "value": f"never-{i}"}],
                "actions": [{"type": "add_note", "value": "never"}]})
        scripts = {
            "0 rules": lua(_priorities(await _open(http, plain.admin_key.secret,
                                                   TICKETS_PER_TENANT)),
                           [plain.admin_key.secret]),
            "100 rules": lua(_priorities(await _open(http, ruled.admin_key.secret,
                                                     TICKETS_PER_TENANT)),
                             [ruled.admin_key.secret]),
        }
    wrk = Wrk()
    rates: dict[str, list[float]] = {name: [] for name in scripts}
    p99s: dict[str, list[float]] = {name: [] for name in scripts}
    for round_ in range(rounds):
        order = list(scripts) if round_ % 2 == 0 else list(reversed(scripts))
        for name in order:
            load = wrk.run(url + "/", seconds, scripts[name], CONNECTIONS)
            # On a loaded machine wrk's 2 s timeout can cut some requests off: those,
            # and any answer not 2xx, are counted and left out of the rate.
            good = load.rps * (load.requests - load.bad) / max(load.requests, 1)
            if load.bad:
                print(f"round {round_ + 1} {name}: {load.bad} of {load.requests} answers "
                      "bad (not 2xx, or timed out)", flush=True)
            rates[name].append(good)
            p99s[name].append(load.p99_ms)
            print(f"round {round_ + 1} {name}: {good:.0f} req/s, p99 {load.p99_ms:.1f} ms",
                  flush=True)
    base, ruled_rate = statistics.median(rates["0 rules"]), statistics.median(rates["100 rules"])
    report("rules: command throughput", [
        {"figure": "POST priority, 100 rules none matching vs 0 (req/s)",
         "value": round(ruled_rate), "baseline": round(base),
         "ratio": round(ruled_rate / base, 2), "target": ">= 0.8"},
        {"figure": "p99 ms, 100 rules vs 0",
         "value": round(statistics.median(p99s["100 rules"]), 1),
         "baseline": round(statistics.median(p99s["0 rules"]), 1), "ratio": "", "target": ""},
    ])


async def caught_up(admin_url: str) -> None:
    """Wait until the rule engine has read every tenant's events (the throughput case
    leaves it a backlog): lag is measured at a steady rate, not behind a backlog."""
    conn = await asyncpg.connect(admin_url)
    try:
        for _ in range(1200):
            behind = await conn.fetchval(
                "SELECT coalesce(sum(h.seq - c.last_seq), 0) FROM projection_checkpoints c "
                "JOIN tenant_heads h ON h.tenant_id = c.tenant_id WHERE c.projection = 'rules'")
            if behind == 0:
                return
            await asyncio.sleep(0.25)
    finally:
        await conn.close()
    raise SystemExit("the rule engine did not catch up in 5 minutes")


async def lag(url: str, admin_url: str, seconds: float, rate: float) -> None:
    await caught_up(admin_url)
    tenant = await _tenant(admin_url, "lag")
    key = tenant.admin_key.secret
    headers = {"Authorization": f"Bearer {key}"}
    # No pool timeout: when the server takes fewer than ``rate`` creates a second the
    # creates queue here, and the rate reached is reported.
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(60, pool=None),
                                 limits=httpx.Limits(max_connections=64)) as http:
        await _rule(http, key, {"name": "tag new", "conditions": [
            {"field": "event", "op": "is", "value": "TicketOpened"}],
            "actions": [{"type": "add_tags", "value": ["seen"]}]})
        total = int(seconds * rate)
        began = time.perf_counter()
        sent: list[asyncio.Task[httpx.Response]] = []
        for i in range(total):
            delay = began + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            sent.append(asyncio.create_task(http.post("/v1/tickets", headers=headers, json={
                "subject": f"lag {i}", "body": "b", "requester": {"email": "l@example.com"}})))
        answers = await asyncio.gather(*sent)
        achieved = total / (time.perf_counter() - began)
        if any(a.status_code != 201 for a in answers):
            raise SystemExit("lag: a create failed")
    conn = await asyncpg.connect(admin_url)
    try:
        for _ in range(600):
            done = await conn.fetchval("SELECT count(*) FROM rule_firings WHERE tenant_id = $1",
                                       tenant.tenant_id)
            if done >= total:
                break
            await asyncio.sleep(0.1)
        rows = await conn.fetch(
            "SELECT extract(epoch FROM pg_xact_commit_timestamp(a.xmin) "
            "                          - pg_xact_commit_timestamp(t.xmin)) * 1000 AS ms "
            "  FROM rule_firings f "
            "  JOIN events t ON t.tenant_id = f.tenant_id AND t.seq = f.trigger_seq "
            "  JOIN events a ON a.tenant_id = f.tenant_id AND a.seq = f.first_seq "
            " WHERE f.tenant_id = $1", tenant.tenant_id)
    finally:
        await conn.close()
    lags = sorted(float(r["ms"]) for r in rows)
    if len(lags) < total:
        raise SystemExit(f"lag: {len(lags)} of {total} events acted on")
    p = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))]  # noqa: E731
    report("rules: lag from commit to the rule's commit", [
        {"figure": f"p50 ms at {achieved:.0f} events/s", "value": round(p(0.5), 1),
         "baseline": "", "ratio": "", "target": ""},
        {"figure": f"p99 ms at {achieved:.0f} events/s", "value": round(p(0.99), 1),
         "baseline": "", "ratio": "", "target": "< 500"},
        {"figure": "max ms", "value": round(lags[-1], 1), "baseline": "", "ratio": "",
         "target": ""},
    ])


async def time_pass(admin_url: str, runtime_url: str, tickets: int) -> None:
    from domain.business_hours import Calendar
    from domain.rule import CreateRule
    from domain.rule_parts import Action, Condition, TimeTrigger
    from domain.tenant_settings import DEFAULT_SETTINGS
    from eventstore.keys import Keyring
    from eventstore.pool import create_pool
    from eventstore.store import EventStore
    from eventstore.types import StoreActor
    from handlers.rule_engine import RuleEngine
    from handlers.rule_timers import evaluate_tenant
    from handlers.rules import create_rule
    from handlers.tenant_settings import ReplaceSettings, replace_settings
    from projections.projector import Projector
    from tests.support.desk import seed_tickets

    tenant = await _tenant(admin_url, "time rules")
    began = time.perf_counter()
    await seed_tickets(runtime_url, tenant.tenant_id, tickets)
    print(f"seeded {tickets} tickets in {time.perf_counter() - began:.1f} s", flush=True)
    pool = await create_pool(runtime_url, min_size=1, max_size=4)
    try:
        secret = await pool.fetchval("SELECT value FROM instance_secrets WHERE name = 'data_key'")
        store = EventStore(pool, keyring=Keyring(bytes(secret)))
        actor = StoreActor("api_key", "bench")
        now = datetime.now(UTC)
        week = Calendar(timezone="UTC", weekly={d: [("09:00", "17:00")] for d in range(5)})
        async with store.unit_of_work(tenant.tenant_id, actor) as s:
            await replace_settings(s, ReplaceSettings(settings=dataclasses.replace(
                DEFAULT_SETTINGS, business_hours=week), at=now))
            sinces = ("created", "updated", "pending", "customer_reply", "agent_reply")
            for i in range(20):
                # One holds for every ticket (state open); the rest ask for urgent.
                wanted = "open" if i == 0 else None
                conditions = (Condition(field="state", op="is", value=wanted or "open"),
                              *(() if wanted else (Condition(field="priority", op="is",
                                                             value="urgent"),)))
                await create_rule(s, CreateRule(
                    rule_id=uuid.uuid4(), name=f"time {i}", at=now,
                    time=TimeTrigger(since=sinces[i % 5], hours=(1, 4, 24, 72)[i % 4],
                                     business=i % 2 == 1),
                    conditions=conditions,
                    actions=(Action(type="add_tags", value=["timed"]),)))
        engine = Projector(pool, [RuleEngine(store.keyring)])
        await engine.ensure_checkpoints()
        began = time.perf_counter()
        await engine.drain()
        print(f"rule engine caught up in {time.perf_counter() - began:.1f} s", flush=True)
        # The tickets were opened 30 days ago, a second apart: every created and updated
        # clock has run for weeks; seed_tickets leaves no pending or reply clocks.
        async with pool.acquire() as conn:
            spent: list[float] = []
            conn.add_query_logger(lambda q: spent.append(q.elapsed))
            async with conn.transaction():
                await conn.execute("SELECT set_config('app.tenant_id', $1, true), "
                                   "set_config('app.actor_kind', 'system', true), "
                                   "set_config('app.actor_id', 'bench', true)",
                                   str(tenant.tenant_id))
                spent.clear()
                began = time.perf_counter()
                scheduled = await evaluate_tenant(conn, tenant.tenant_id,
                                                  now + timedelta(hours=30))
                wall = time.perf_counter() - began
                db = sum(spent)
    finally:
        await pool.close()
    report("rules: one time-rule pass", [
        {"figure": f"database s, {tickets} open tickets, 20 time rules", "value": round(db, 3),
         "baseline": "", "ratio": "", "target": "< 2"},
        {"figure": "wall s of the pass (Python included)", "value": round(wall, 3),
         "baseline": "", "ratio": "", "target": ""},
        {"figure": "rules.time jobs scheduled", "value": scheduled, "baseline": "",
         "ratio": "", "target": ""},
    ])


@contextmanager
def working(env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """``helpdesk worker`` (projectors, rule engine, scheduler) until the block ends."""
    worker = subprocess.Popen([sys.executable, "-m", "api.cli.main", "worker"],
                              cwd=Path(__file__).parents[1], env=os.environ | env,
                              stdout=subprocess.DEVNULL)
    try:
        yield worker
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


async def run(seconds: float, rounds: int, rate: float, tickets: int,
              in_api: bool = False) -> None:
    from tests.support.pg import Databases

    config = {"track_commit_timestamp": "on", "max_connections": "300",
              "shared_buffers": "256MB"}
    with private_server(**config) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            env = {"DATABASE_URL": db.runtime_url,
                   "RUN_SCHEDULER": "true" if in_api else "false",
                   "PROJECTOR_POLL_INTERVAL": "1", "LOG_LEVEL": "warning",
                   "DB_POOL_MAX": str(CONNECTIONS + 8)}
            with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as served, \
                    (contextlib.nullcontext() if in_api else working(env)):
                await served.ready()
                await throughput(served.url, db.admin_url, seconds, rounds)
                await lag(served.url, db.admin_url, seconds, rate)
            await time_pass(db.admin_url, db.runtime_url, tickets)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--tickets", type=int, default=10_000)
    parser.add_argument("--in-api", action="store_true",
                        help="run the rule engine in the API process (RUN_SCHEDULER=true)")
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.rate, args.tickets, args.in_api))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.rules")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
