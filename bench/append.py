"""Events appended per second the way a command appends, against plain INSERTs.

8 concurrent writers, each running one unit of work per append, as a command does:
``store.unit_of_work(tenant, actor)`` and ``session.append(...)`` of one event, committed
before the writer's next append; for 1 tenant (each writer its own stream) and for
100 tenants (each append a new stream in the next tenant). A unit-of-work append
makes three round trips on its connection: BEGIN carrying the arming of tenant and
actor (eventstore/pool.py, ``StoreConnection``), the append query, COMMIT. (Its commit
notice goes out afterwards on another connection, coalesced with others' to at most
one statement per 5 ms: eventstore/notifier.py.)

Two baselines, measured in the same run with the same number of clients, each a
single-row INSERT into a plain table (no trigger, no row-level security, one index)
on a plain connection:

* autocommit: each INSERT its own implicit transaction, one round trip;
* transaction: each INSERT inside its own BEGIN/COMMIT, three round trips, as many
  as a unit-of-work append makes.

The first ratio is what the event store's contract costs on top of a bare write; the
second is what it costs once the round trips are the same. The four cases take turns
(``--rounds``), so that load from elsewhere on a shared machine falls on baselines and
appends alike. After each turn every counted append is checked to be stored and every
chain to verify.

    python -m bench.append [--seconds 5] [--writers 8] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import asyncpg

from bench.common import bench_server, fresh_database, report
from domain.ids import TenantId
from eventstore.pool import connect, create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from handlers.tenants import create_tenant_as_operator

PAYLOAD = {"subject": "Printer on fire", "priority": "high", "n": 0}
INSERT = "INSERT INTO bench_raw (stream, data) VALUES ($1, $2)"


async def raw_run(url: str, writers: int, seconds: float, *,
                  transaction: bool) -> tuple[int, float]:
    """Single-row INSERTs on one plain connection per writer: (count, seconds).

    ``transaction=False``: autocommit, one round trip per INSERT. ``True``: each INSERT
    in its own BEGIN/COMMIT, three round trips, like a unit-of-work append.
    """
    admin = await asyncpg.connect(url)
    await admin.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, "
                        "stream uuid, data jsonb, at timestamptz DEFAULT now())")
    await admin.close()
    conns = [await connect(url) for _ in range(writers)]
    count = 0
    deadline = time.perf_counter() + seconds

    async def writer(conn: asyncpg.Connection) -> None:
        nonlocal count
        stream = uuid.uuid4()
        while time.perf_counter() < deadline:
            if transaction:
                async with conn.transaction():
                    await conn.execute(INSERT, stream, PAYLOAD)
            else:
                await conn.execute(INSERT, stream, PAYLOAD)
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(c) for c in conns))
    elapsed = time.perf_counter() - started
    for conn in conns:
        await conn.close()
    return count, elapsed


async def store_run(url: str, tenants: list[TenantId], writers: int, seconds: float, *,
                    label: str) -> tuple[int, float]:
    """Unit-of-work appends of one event each, each committed before the writer's next:
    (count, seconds)."""
    pool = await create_pool(url, min_size=writers, max_size=writers)
    store = EventStore(pool)
    actor = StoreActor("api_key", label)
    count = 0
    deadline = time.perf_counter() + seconds

    async def writer(i: int) -> None:
        nonlocal count
        version = 0
        stream = uuid.uuid4()
        n = 0
        while time.perf_counter() < deadline:
            tenant = tenants[(i + n * writers) % len(tenants)]
            if len(tenants) > 1:
                stream, version = uuid.uuid4(), 0  # a new stream in the next tenant
            async with store.unit_of_work(tenant, actor) as session:
                await session.append(stream, version, [NewEvent("TicketOpened", PAYLOAD)])
            version += 1
            n += 1
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    elapsed = time.perf_counter() - started
    await store.notifier.flush()
    await pool.close()
    await check_stored(url, tenants, label, count)
    return count, elapsed


async def check_stored(url: str, tenants: list[TenantId], label: str, count: int) -> None:
    """Every counted append is stored under its actor, and every chain verifies."""
    pool = await create_pool(url, min_size=1, max_size=2)
    store = EventStore(pool)
    stored = 0
    try:
        for tenant in tenants:
            async with store.unit_of_work(tenant) as session:
                stored += await session.conn.fetchval(
                    "SELECT count(*) FROM events WHERE actor_id = $1", label)
                chain = await session.verify_chain()
                if not chain.ok:
                    raise SystemExit(f"chain broken at seq {chain.first_bad_seq}")
    finally:
        await pool.close()
    if stored != count:
        raise SystemExit(f"{label}: counted {count} appends, {stored} stored")


WARMUP_SECONDS = 1.0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="per case")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5,
                        help="each case's seconds are split into this many turns, the "
                             "cases taking turns, so that load from elsewhere on the "
                             "machine falls on all of them alike")
    args = parser.parse_args()
    writers = args.writers
    with bench_server() as server:
        async with fresh_database(server) as db:
            one = [(await create_tenant_as_operator(db.admin_url, "bench")).tenant_id]
            many = [(await create_tenant_as_operator(db.admin_url, f"bench {i}")).tenant_id
                    for i in range(100)]

            async def run(case: str, seconds: float, turn: str) -> tuple[int, float]:
                if case == "insert":
                    return await raw_run(db.admin_url, writers, seconds, transaction=False)
                if case == "insert_tx":
                    return await raw_run(db.admin_url, writers, seconds, transaction=True)
                tenants = one if case == "one" else many
                return await store_run(db.runtime_url, tenants, writers, seconds,
                                       label=f"{case}-{turn}")

            names = ("insert", "insert_tx", "one", "many")
            # A short unmeasured run of each case first: the first writes of a fresh
            # database pay for plan caching, function compilation and table growth, and
            # would otherwise count against whichever case happened to run first.
            for case in names:
                await run(case, WARMUP_SECONDS, "warm")
            totals = dict.fromkeys(names, (0, 0.0))
            for turn in range(args.rounds):
                for case in names:
                    count, elapsed = await run(case, args.seconds / args.rounds, str(turn))
                    totals[case] = (totals[case][0] + count, totals[case][1] + elapsed)
    rate = {name: count / elapsed for name, (count, elapsed) in totals.items()}
    plain, plain_tx = rate["insert"], rate["insert_tx"]
    rows: list[dict[str, object]] = []
    for name, value, target in (("1 tenant", rate["one"], ">= 0.5"),
                                ("100 tenants", rate["many"], ">= 0.8")):
        rows.append({"figure": f"{name} (baseline: INSERT)", "value": round(value),
                     "baseline": round(plain), "ratio": round(value / plain, 2),
                     "target": target})
        rows.append({"figure": f"{name} (baseline: BEGIN, INSERT, COMMIT)",
                     "value": round(value), "baseline": round(plain_tx),
                     "ratio": round(value / plain_tx, 2), "target": "-"})
    report(f"append, unit of work per event (events/s, {writers} writers)", rows)


if __name__ == "__main__":
    asyncio.run(main())
