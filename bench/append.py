"""Events appended per second through eventstore.append, against raw INSERTs.

8 concurrent writers, each appending one event per transaction to its own stream,
for 1 tenant and for 100 tenants; the baseline is the same machine's single-row
INSERT rate into a plain table with the same 8 clients, measured in the same run.
Targets: ratio >= 0.5 for one tenant, >= 0.8 for 100 tenants.

    python -m bench.append [--seconds 5] [--writers 8]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

import asyncpg

from api.operator import create_tenant
from bench.common import bench_server, fresh_database, report
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor

PAYLOAD = {"subject": "Printer on fire", "priority": "high", "n": 0}


async def raw_rate(url: str, writers: int, seconds: float) -> float:
    admin = await asyncpg.connect(url)
    await admin.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, "
                        "stream uuid, data jsonb, at timestamptz DEFAULT now())")
    await admin.close()
    pool = await create_pool(url, min_size=writers, max_size=writers)
    count = 0
    deadline = time.perf_counter() + seconds

    async def writer() -> None:
        nonlocal count
        stream = uuid.uuid4()
        while time.perf_counter() < deadline:
            async with pool.acquire() as conn:
                await conn.execute("INSERT INTO bench_raw (stream, data) VALUES ($1, $2)",
                                   stream, PAYLOAD)
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer() for _ in range(writers)))
    elapsed = time.perf_counter() - started
    await pool.close()
    return count / elapsed


async def store_rate(url: str, tenants: list, writers: int, seconds: float) -> float:
    pool = await create_pool(url, min_size=writers, max_size=writers)
    store = EventStore(pool)
    actor = StoreActor("api_key", "bench")
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
            await store.append(tenant, actor, stream, version,
                               [NewEvent("TicketOpened", PAYLOAD)])
            version += 1
            n += 1
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    elapsed = time.perf_counter() - started
    await store.notifier.flush()
    await pool.close()
    return count / elapsed


WARMUP_SECONDS = 1.0


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    with bench_server() as server:
        async with fresh_database(server) as db:
            one = [(await create_tenant(db.admin_url, "bench")).tenant_id]
            many = [(await create_tenant(db.admin_url, f"bench {i}")).tenant_id
                    for i in range(100)]
            # A short unmeasured run first: the first appends of a fresh database pay for
            # plan caching, function compilation and table growth, and would otherwise
            # count against whichever case happened to run first.
            await store_rate(db.runtime_url, one, args.writers, WARMUP_SECONDS)
            await store_rate(db.runtime_url, many, args.writers, WARMUP_SECONDS)
            await raw_rate(db.admin_url, args.writers, WARMUP_SECONDS)
            baseline = await raw_rate(db.admin_url, args.writers, args.seconds)
            single = await store_rate(db.runtime_url, one, args.writers, args.seconds)
            spread = await store_rate(db.runtime_url, many, args.writers, args.seconds)
    report("append (events/s, 8 writers)", [
        {"figure": "append, 1 tenant", "value": round(single), "baseline": round(baseline),
         "ratio": round(single / baseline, 2), "target": ">= 0.5"},
        {"figure": "append, 100 tenants", "value": round(spread), "baseline": round(baseline),
         "ratio": round(spread / baseline, 2), "target": ">= 0.8"},
    ])


if __name__ == "__main__":
    asyncio.run(main())
