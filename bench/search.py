"""Search and the changes feed over HTTP, each against a baseline of the same run.

Run from the repository root::

    python -m bench.search                    # 20,000 tickets, 5 s per case, 3 rounds
    python -m bench.search --tickets 100000   # the full size (seeding takes long)
    python -m bench.search --tickets 100000 --seed-budget 3000  # stop seeding at 50 min

``--seed-budget`` stops seeding after the unit of work in which that many seconds ran
out, and measures the tickets written by then (the report says how many).

A tenant of ``--tickets`` tickets with 5 messages each (the opening message and four
replies, public and internal notes mixed), written through the write path (so the
search index is built as commands build it), bodies drawn from a vocabulary of 2,000
words with a skewed (Zipf-like) frequency, as text is. ``helpdesk serve`` on one
process, loaded by ``wrk`` (bench/http.py: 16 connections, pinned to the last core):

- p50 and p99 of ``GET /v1/search?q=<two words>`` (pairs of mid-frequency words,
  a different pair per request) against ``GET /v1/tickets?limit=25``; target: search
  p99 under 3x the list's;
- ``GET /v1/tickets?q=<two words>&limit=25`` (the list filtered by a query) beside them;
- the drain rate of ``GET /v1/changes`` (``limit=1000``, and ``limit=100``), events per
  second through HTTP from seq 0 to the head by one sequential client, against
  ``GET /v1/events`` (``limit=100``, its most) paged by its cursor the same way.
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
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import httpx

from bench.common import report
from bench.http import CONNECTIONS, Load, Wrk, lua, serving

VOCABULARY = 2000
MESSAGES = 5
DRAINS = (("events 100", "/v1/events", 100), ("changes 100", "/v1/changes", 100),
          ("changes 1000", "/v1/changes", 1000))
BATCH = 200
WRITERS = 1  # units of work in flight while seeding: 2 was slower here (one tenant head)


def words(rng: random.Random) -> list[str]:
    """A vocabulary of pronounceable made-up words (none a stop word)."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "da", "gu", "ri"]
    out: set[str] = set()
    while len(out) < VOCABULARY:
        out.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(out)


def text(rng: random.Random, vocab: list[str], n: int) -> str:
    # Zipf-like: the word at rank r is drawn with weight 1 / (r + 1).
    return " ".join(vocab[min(int(rng.paretovariate(1.0)) - 1, len(vocab) - 1)]
                    if rng.random() < 0.5 else rng.choice(vocab) for _ in range(n))


async def seed(runtime_url: str, tenant_id: Any, count: int, vocab: list[str],
               budget: float | None = None) -> tuple[int, int]:
    """``count`` tickets of MESSAGES messages each, through the write path, in units
    of work of BATCH tickets, WRITERS at a time, or fewer if ``budget`` seconds run out
    first; returns (tickets written, the tenant's head)."""
    from domain.ids import MessageId, TicketId
    from domain.ticket.commands import AddMessage, OpenTicket
    from domain.values import Actor, ActorKind, Requester, Visibility
    from eventstore.pool import create_pool
    from eventstore.store import EventStore
    from eventstore.types import StoreActor
    from handlers.tickets import execute

    pool = await create_pool(runtime_url, min_size=1, max_size=WRITERS)
    store = EventStore(pool)
    t0 = datetime.now(UTC) - timedelta(days=365)
    agent = Actor(kind=ActorKind.AGENT, id=str(uuid.uuid4()))
    began = time.perf_counter()
    done = 0

    async def writer(w: int) -> None:
        nonlocal done
        rng = random.Random(7 + w)
        for start in range(w * BATCH, count, WRITERS * BATCH):
            if budget is not None and time.perf_counter() - began > budget:
                return
            async with store.unit_of_work(tenant_id, StoreActor("api_key", "bench")) as s:
                for i in range(start, min(count, start + BATCH)):
                    tid = TicketId(uuid.uuid4())
                    at = t0 + timedelta(seconds=60 * i)
                    name = f"{rng.choice(vocab)} {rng.choice(vocab)}"
                    customer = Actor(kind=ActorKind.CUSTOMER, id=f"c{i}@example.com")
                    await execute(s, tid, OpenTicket(
                        ticket_id=tid, subject=text(rng, vocab, rng.randint(3, 7)),
                        body=text(rng, vocab, rng.randint(20, 60)),
                        requester=Requester(email=f"c{i}@example.com", name=name),
                        actor=customer, at=at))
                    for m in range(1, MESSAGES):
                        internal = rng.random() < 0.25
                        await execute(s, tid, AddMessage(
                            message_id=MessageId(uuid.uuid4()),
                            body=text(rng, vocab, rng.randint(20, 60)),
                            visibility=Visibility.INTERNAL if internal else Visibility.PUBLIC,
                            actor=agent if internal or m % 2 else customer,
                            at=at + timedelta(seconds=m)))
            before, done = done, done + min(BATCH, count - start)
            if before // 5000 != done // 5000 or done == count:
                print(f"  {done} tickets, {time.perf_counter() - began:.0f} s",
                      file=sys.stderr)

    try:
        await asyncio.gather(*(writer(w) for w in range(WRITERS)))
        async with store.unit_of_work(tenant_id, readonly=True) as s:
            return done, (await s.head())[0]
    finally:
        await pool.close()


def queries(rng: random.Random, vocab: list[str], n: int = 50) -> list[str]:
    """Two-word queries over words of middling frequency (ranks 50 to 500)."""
    return [f"{vocab[rng.randint(50, 500)]} {vocab[rng.randint(50, 500)]}" for _ in range(n)]


def _load() -> str:
    """The machine's load averages (1, 5, 15 min): others may share its cores."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def drain(url: str, key: str, path: str, limit: int) -> tuple[int, float]:
    """Events read from seq 0 to the head, one request after another; (events, s)."""
    headers = {"Authorization": f"Bearer {key}"}
    count, params = 0, {"limit": limit}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        began = time.perf_counter()
        if path == "/v1/changes":
            after = 0
            while True:
                page = (await client.get(path, params=params | {"after_seq": after})).json()
                count += len(page["data"])
                after = page["next_after_seq"]
                if after >= page["head_seq"]:
                    break
        else:
            cursor = None
            while True:
                page = (await client.get(path, params=params | (
                    {"cursor": cursor} if cursor else {}))).json()
                count += len(page["data"])
                cursor = page["next_cursor"]
                if cursor is None:
                    break
        return count, time.perf_counter() - began


async def measure(runtime_url: str, key: str, vocab: list[str], seconds: float,
                  rounds: int, tickets: int, head: int) -> None:
    load = Wrk()
    rng = random.Random(11)
    qs = queries(rng, vocab)
    env = {"DATABASE_URL": runtime_url, "LOG_LEVEL": "warning", "RUN_SCHEDULER": "false",
           "DB_POOL_MAX": str(CONNECTIONS + 4)}
    cases = {
        "list": lua([("GET", "/v1/tickets?limit=25", None)], [key]),
        "search": lua([("GET", f"/v1/search?q={quote(q)}&limit=25", None) for q in qs], [key]),
        "list q": lua([("GET", f"/v1/tickets?q={quote(q)}&limit=25", None) for q in qs],
                      [key]),
    }
    runs: dict[str, list[Load]] = {name: [] for name in cases}
    rates: dict[str, list[float]] = {name: [] for name, _, _ in DRAINS}
    with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as server:
        await server.ready()
        async with httpx.AsyncClient(base_url=server.url,
                                     headers={"Authorization": f"Bearer {key}"}) as c:
            hits = [len((await c.get("/v1/search", params={"q": q, "limit": 100})).json()
                        ["data"]) for q in qs[:10]]
        print(f"results per query (first 10 queries, at most 100): {hits}")
        print(f"load average at the start of measuring: {_load()}")
        load.run(server.url, 1, cases["list"])  # warm
        load.run(server.url, 1, cases["search"])
        # Alternating rounds, medians: the machine may be busy with other work.
        for _ in range(rounds):
            for name, script in cases.items():
                runs[name].append(load.run(server.url, seconds, script))
            for name, path, limit in DRAINS:
                n, took = await drain(server.url, key, path, limit)
                rates[name].append(n / took)
    print(f"load average at the end of measuring: {_load()}")
    got = {name: Load(*(statistics.median(getattr(r, f) for r in rs)
                        for f in ("rps", "p50_ms", "p99_ms", "requests", "bad")))
           for name, rs in runs.items()}
    drained = {name: statistics.median(r) for name, r in rates.items()}
    for name, r in got.items():
        print(f"{name:10} {r.rps:8.0f} req/s  p50 {r.p50_ms:7.2f} ms  p99 {r.p99_ms:7.2f} ms  "
              f"bad {r.bad}")
    for name, rate in drained.items():
        print(f"{name:14} {rate:.0f} events/s ({head} events per drain)")
    bad = sum(r.bad for r in got.values())
    if bad:
        print(f"WARNING: {bad} requests were answered with errors", file=sys.stderr)
    base = got["list"]
    rows: list[dict[str, object]] = []
    for name in ("search", "list q"):
        r = got[name]
        rows.append({"figure": f"{name} p50 ms (baseline: list)", "value": round(r.p50_ms, 2),
                     "baseline": round(base.p50_ms, 2), "ratio": round(r.p50_ms / base.p50_ms, 2)})
        rows.append({"figure": f"{name} p99 ms (baseline: list)", "value": round(r.p99_ms, 2),
                     "baseline": round(base.p99_ms, 2), "ratio": round(r.p99_ms / base.p99_ms, 2),
                     "target": "< 3" if name == "search" else ""})
        rows.append({"figure": f"{name} req/s (baseline: list)", "value": round(r.rps),
                     "baseline": round(base.rps), "ratio": round(r.rps / base.rps, 2)})
    base_rate = drained["events 100"]
    for name in ("changes 100", "changes 1000"):
        rows.append({"figure": f"{name}/page drain events/s (baseline: /v1/events 100)",
                     "value": round(drained[name]), "baseline": round(base_rate),
                     "ratio": round(drained[name] / base_rate, 2)})
    report(f"search ({tickets} tickets x {MESSAGES} messages, {head} events; wrk "
           f"{CONNECTIONS} connections, {seconds:g} s per case, {rounds} round(s), "
           "medians)", rows)


async def run(tickets: int, seconds: float, rounds: int, budget: float | None) -> None:
    from bench.common import private_server
    from handlers.tenants import create_tenant_as_operator
    from tests.support.pg import Databases

    vocab = words(random.Random(3))
    with private_server(max_connections="300", shared_buffers="256MB") as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            tenant = await create_tenant_as_operator(db.admin_url, "bench")
            began = time.perf_counter()
            written, head = await seed(db.runtime_url, tenant.tenant_id, tickets, vocab,
                                       budget)
            print(f"seeded {written} of {tickets} tickets ({head} events) in "
                  f"{time.perf_counter() - began:.0f} s")
            tickets = written
            await measure(db.runtime_url, tenant.admin_key.secret, vocab, seconds, rounds,
                          tickets, head)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tickets", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per wrk case")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--seed-budget", type=float, default=None,
                        help="seconds of seeding at most; measure what was written by then")
    args = parser.parse_args()
    asyncio.run(run(args.tickets, args.seconds, args.rounds, args.seed_budget))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.search")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
