"""Events appended per second through eventstore.append, against raw INSERTs.

8 concurrent writers, each appending one event at a time to its own stream and
waiting for it to commit, for 1 tenant and for 100 tenants, through
``EventStore.append`` (concurrent callers share transactions: group commit). A third
figure, without a target, is the same through a unit of work per append (BEGIN
carrying the arming, append, COMMIT), the way a command appends. The baseline is the
same machine's single-row INSERT rate into a plain table (no trigger, no RLS, one
index), each INSERT its own transaction, on 8 plain connections, measured in the
same run. After each run every counted append is checked to be stored and every
chain to verify.
Targets: ratio >= 0.5 for one tenant, >= 0.8 for 100 tenants.

    python -m bench.append [--seconds 5] [--writers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import asyncpg

from bench.common import bench_server, fresh_database, report
from eventstore.pool import connect, create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from handlers.tenants import create_tenant_as_operator

PAYLOAD = {"subject": "Printer on fire", "priority": "high", "n": 0}


async def raw_rate(url: str, writers: int, seconds: float) -> float:
    """Single-row INSERTs, each its own transaction, on one plain connection per writer."""
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
            await conn.execute("INSERT INTO bench_raw (stream, data) VALUES ($1, $2)",
                               stream, PAYLOAD)
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(c) for c in conns))
    elapsed = time.perf_counter() - started
    for conn in conns:
        await conn.close()
    return count / elapsed


async def store_rate(url: str, tenants: list, writers: int, seconds: float, *,
                     label: str = "bench", unit_of_work: bool = False) -> float:
    """One event per append, each committed before the writer's next append.

    ``unit_of_work=False``: ``EventStore.append``, one-shot appends that concurrent
    callers share transactions for (eventstore/group_commit.py). ``True``: each append
    in a ``store.session`` of its own (BEGIN and arm, append, COMMIT), as a command does.
    """
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
            events = [NewEvent("TicketOpened", PAYLOAD)]
            if unit_of_work:
                async with store.session(tenant, actor) as session:
                    await session.append(stream, version, events)
            else:
                await store.append(tenant, actor, stream, version, events)
            version += 1
            n += 1
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    elapsed = time.perf_counter() - started
    await store.notifier.flush()
    await pool.close()
    await check_stored(url, tenants, label, count)
    return count / elapsed


async def check_stored(url: str, tenants: list, label: str, count: int) -> None:
    """Every counted append is stored under its actor, and every chain verifies."""
    pool = await create_pool(url, min_size=1, max_size=2)
    store = EventStore(pool)
    stored = 0
    try:
        for tenant in tenants:
            async with store.session(tenant) as session:
                stored += await session.conn.fetchval(
                    "SELECT count(*) FROM events WHERE actor_id = $1", label)
                report_ = await session.verify_chain()
                if not report_.ok:
                    raise SystemExit(f"chain broken at seq {report_.first_bad_seq}")
    finally:
        await pool.close()
    if stored != count:
        raise SystemExit(f"{label}: counted {count} appends, {stored} stored")


WARMUP_SECONDS = 1.0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    with bench_server() as server:
        async with fresh_database(server) as db:
            one = [(await create_tenant_as_operator(db.admin_url, "bench")).tenant_id]
            many = [(await create_tenant_as_operator(db.admin_url, f"bench {i}")).tenant_id
                    for i in range(100)]
            # A short unmeasured run first: the first appends of a fresh database pay for
            # plan caching, function compilation and table growth, and would otherwise
            # count against whichever case happened to run first.
            await store_rate(db.runtime_url, one, args.writers, WARMUP_SECONDS,
                             label="warm-1")
            await store_rate(db.runtime_url, many, args.writers, WARMUP_SECONDS,
                             label="warm-100")
            await raw_rate(db.admin_url, args.writers, WARMUP_SECONDS)
            baseline = await raw_rate(db.admin_url, args.writers, args.seconds)
            single = await store_rate(db.runtime_url, one, args.writers, args.seconds,
                                      label="one")
            spread = await store_rate(db.runtime_url, many, args.writers, args.seconds,
                                      label="many")
            uow = await store_rate(db.runtime_url, many, args.writers, args.seconds,
                                   label="uow", unit_of_work=True)
    report("append (events/s, 8 writers)", [
        {"figure": "append, 1 tenant", "value": round(single), "baseline": round(baseline),
         "ratio": round(single / baseline, 2), "target": ">= 0.5"},
        {"figure": "append, 100 tenants", "value": round(spread), "baseline": round(baseline),
         "ratio": round(spread / baseline, 2), "target": ">= 0.8"},
        {"figure": "session append, 100 tenants", "value": round(uow),
         "baseline": round(baseline), "ratio": round(uow / baseline, 2), "target": "-"},
    ])


if __name__ == "__main__":
    asyncio.run(main())
