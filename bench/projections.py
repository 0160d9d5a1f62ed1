"""Projection benchmark: rebuild speed and append-to-read-model lag.

    python -m bench.projections            # quick: 20,000 events, 5 s of lag sampling
    python -m bench.projections --full     # 200,000 events, 20 s of lag sampling

Works in a fresh database it creates and drops (bench/common.py picks the server).
Figures are printed beside baselines from the same run:

* rebuild events/s vs. reading and parsing the same events in the same batches
  (what any projector must pay before applying anything);
* lag p50/p99 (event commit -> read-model commit) while 500 events/s are appended,
  vs. the NOTIFY delivery latency of those same commits to a bare listener.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import gc
import itertools
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from api.cli.projections import REBUILD_BATCH
from bench.common import bench_server, fresh_database, report
from domain.ids import AgentId, MessageId, TicketId
from domain.mapper import from_stored, to_stored
from domain.sla import SlaPolicy
from domain.ticket import evolve
from domain.ticket.commands import AddMessage, Assign, ChangeState, OpenTicket
from domain.ticket.decide import decide
from domain.values import Actor, ActorKind, Priority, Requester, Source, TicketState
from eventstore.pool import connect, create_pool
from eventstore.store import EventStore, arm
from eventstore.types import NewEvent, StoreActor
from handlers.tenants import create_tenant_as_operator
from projections import admin
from projections.projector import Batch, Projector

ACTOR = StoreActor("system", "bench")
INSERT = """
INSERT INTO events (tenant_id, stream_id, version, type, schema_version, data)
SELECT $1::uuid, e.stream_id, e.version, e.type, e.schema_version, e.data
  FROM unnest($2::uuid[], $3::int[], $4::text[], $5::int[], $6::jsonb[])
       WITH ORDINALITY AS e(stream_id, version, type, schema_version, data, ord)
 ORDER BY e.ord
RETURNING seq
"""
Row = tuple[uuid.UUID, int, str, int, dict[str, Any]]


def ticket_events(rng: random.Random, at: datetime, policy: SlaPolicy) -> list[Row]:
    """One ticket's life (about six events) decided by the domain."""
    tid = TicketId(uuid.uuid4())
    customer = Actor(kind=ActorKind.CUSTOMER, id="intake")
    agent_id = uuid.UUID(int=rng.randint(1, 20))
    agent = Actor(kind=ActorKind.AGENT, id=str(agent_id))
    commands: list[Any] = [
        OpenTicket(ticket_id=tid, subject="s", body="b", requester=Requester(email="c@x.io"),
                   priority=rng.choice(list(Priority)), source=rng.choice(list(Source)),
                   actor=customer, at=at),
        Assign(agent_id=AgentId(agent_id), actor=agent, at=at + timedelta(minutes=5)),
        AddMessage(message_id=MessageId(uuid.uuid4()), body="r", actor=agent,
                   at=at + timedelta(minutes=rng.randint(10, 600))),
        ChangeState(to=TicketState.PENDING, actor=agent, at=at + timedelta(hours=11)),
        AddMessage(message_id=MessageId(uuid.uuid4()), body="m", actor=customer,
                   at=at + timedelta(hours=12)),
        ChangeState(to=TicketState.SOLVED, actor=agent,
                    at=at + timedelta(hours=rng.randint(13, 90))),
    ]
    state, rows = None, []
    for command in commands:
        for event in decide(command, state, policy):
            state = evolve(state, event)
            type_, version, data = to_stored(event)
            rows.append((tid, state.version, type_, version, data))
    return rows


def generate(n: int, seed: int) -> list[Row]:
    rng, policy = random.Random(seed), SlaPolicy()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[Row] = []
    while len(rows) < n:
        rows.extend(ticket_events(rng, start + timedelta(minutes=len(rows)), policy))
    return rows


async def load(pool: asyncpg.Pool, tenant: Any, rows: list[Row]) -> list[int]:
    """Bulk-insert pre-decided events (the load phase only; no notification)."""
    async with pool.acquire() as conn, conn.transaction():
        await arm(conn, tenant, ACTOR)
        seqs = await conn.fetch(INSERT, tenant, *(list(c) for c in zip(*rows, strict=True)))
    return [r["seq"] for r in seqs]


async def measure_rebuild(pool: asyncpg.Pool, tenant: Any, batch: int) -> tuple[float, float]:
    """(raw read+parse events/s, rebuild events/s) over the tenant's events."""
    t0 = time.perf_counter()
    seq, total = 0, 0
    async with pool.acquire() as conn, conn.transaction(readonly=True):
        await arm(conn, tenant, None)
        while True:
            rows = await conn.fetch(
                "SELECT seq, stream_id, type, schema_version, data FROM events "
                "WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", tenant, seq, batch)
            if not rows:
                break
            for r in rows:
                from_stored(r["type"], r["schema_version"], r["data"])
            seq, total = rows[-1]["seq"], total + len(rows)
    raw = total / (time.perf_counter() - t0)
    projector = Projector(pool, batch_size=batch)
    t0 = time.perf_counter()
    reached = await admin.rebuild(projector, "analytics", tenant)
    return raw, reached / (time.perf_counter() - t0)


async def append(store: EventStore, tenant: Any, rows: list[Row]) -> dict[int, float]:
    """Append through the event store, one unit of work per ticket, as a command does;
    returns each seq with the time its unit of work committed."""
    seqs: dict[int, float] = {}
    for stream, run in itertools.groupby(rows, key=lambda r: r[0]):
        items = list(run)
        async with store.unit_of_work(tenant, ACTOR) as session:
            recorded = await session.append(stream, items[0][1] - 1,
                                            [NewEvent(t, d, v) for _, _, t, v, d in items])
        now = time.perf_counter()
        seqs.update((e.seq, now) for e in recorded)
    return seqs


async def measure_lag(pool: asyncpg.Pool, dsn: str, tenant: Any, rate: int, seconds: float,
                      rows: list[Row]) -> tuple[list[float], list[float]]:
    """Per appended event: (read-model lag ms, bare NOTIFY latency ms)."""
    store = EventStore(pool)
    committed: dict[int, float] = {}
    applied: list[tuple[int, float]] = []
    notified: dict[int, float] = {}

    async def after(batch: Batch) -> None:
        applied.append((batch.to_seq, time.perf_counter()))

    listener = await connect(dsn)
    await listener.add_listener("helpdesk_events", lambda *a: notified.setdefault(
        int(a[3].rpartition(":")[2]), time.perf_counter()))
    projector = Projector(pool, listen_dsn=dsn, after_commit=after, poll_interval=1.0)
    await projector.start()
    per_tick, tick = max(1, rate // 50), 1 / 50
    started, i = time.perf_counter(), 0
    try:
        while time.perf_counter() - started < seconds and i + per_tick <= len(rows):
            committed.update(await append(store, tenant, rows[i:i + per_tick]))
            i += per_tick
            await asyncio.sleep(max(0.0, started + (i / per_tick) * tick - time.perf_counter()))
        for _ in range(200):
            if applied and applied[-1][0] >= max(committed):
                break
            await asyncio.sleep(0.01)
    finally:
        await projector.stop()
        await listener.close()
    lags, notes = [], []
    # Both are in seq order for one tenant: find the first covering seq by bisection.
    done_seqs = [to for to, _ in applied]
    note_seqs = sorted(notified)
    for s, t in committed.items():
        i = bisect.bisect_left(done_seqs, s)
        if i < len(done_seqs):
            lags.append((applied[i][1] - t) * 1000)
        j = bisect.bisect_left(note_seqs, s)
        if j < len(note_seqs):
            notes.append((notified[note_seqs[j]] - t) * 1000)
    return lags, notes


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))] if ordered else float("nan")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="200,000 events, 20 s of lag")
    parser.add_argument("--events", type=int)
    parser.add_argument("--seconds", type=float)
    parser.add_argument("--rate", type=int, default=500, help="events appended per second")
    parser.add_argument("--batch", type=int, default=REBUILD_BATCH,
                        help="rebuild batch size (default: the CLI's)")
    args = parser.parse_args()
    n = args.events or (200_000 if args.full else 20_000)
    seconds = args.seconds or (20.0 if args.full else 5.0)
    with bench_server() as server:
        async with fresh_database(server) as db:
            tenant = (await create_tenant_as_operator(db.admin_url, "Bench")).tenant_id
            live = (await create_tenant_as_operator(db.admin_url, "Live")).tenant_id
            pool = await create_pool(db.runtime_url, min_size=2, max_size=6)
            try:
                t0 = time.perf_counter()
                rows = generate(n, 1)
                for i in range(0, len(rows), 5000):
                    await load(pool, tenant, rows[i:i + 5000])
                loaded = len(rows)
                print(f"loaded {loaded} events in {time.perf_counter() - t0:.1f} s")
                # A rebuild runs in a process of its own (the CLI); without this, the
                # collector would keep walking the generated events and bill it to it.
                del rows
                gc.collect()
                gc.freeze()
                raw, rebuild = await measure_rebuild(pool, tenant, args.batch)
                live_rows = generate(int(args.rate * seconds) + 100, 2)
                lags, notes = await measure_lag(pool, db.runtime_url, live, args.rate, seconds,
                                                live_rows)
            finally:
                await pool.close()
    p50, p99 = pct(lags, 0.5), pct(lags, 0.99)
    n50, n99 = pct(notes, 0.5), pct(notes, 0.99)
    report(f"projections ({loaded} events; lag at {args.rate} events/s for {seconds:.0f} s)", [
        {"figure": "rebuild events/s (baseline: read+parse)", "value": round(rebuild),
         "baseline": round(raw), "ratio": round(rebuild / raw, 2), "target": ">= 20000/s"},
        {"figure": "lag p50 ms (baseline: NOTIFY p50)", "value": round(p50, 1),
         "baseline": round(n50, 1), "ratio": round(p50 / max(n50, 0.1), 1), "target": ""},
        {"figure": "lag p99 ms (baseline: NOTIFY p99)", "value": round(p99, 1),
         "baseline": round(n99, 1), "ratio": round(p99 / max(n99, 0.1), 1),
         "target": "< 250 ms"},
    ])
    print(f"mean lag {statistics.fmean(lags):.1f} ms over {len(lags)} events")


if __name__ == "__main__":
    asyncio.run(main())
