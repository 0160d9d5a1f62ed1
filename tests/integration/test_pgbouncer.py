"""Behind PgBouncer in transaction pooling mode, tenants stay isolated and actors right.

A pool of server connections smaller than the number of clients means every
transaction may land on a connection another tenant just used: anything that
depended on session state would leak here.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid

import pytest

from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from tests.support.pgbouncer import pgbouncer, pgbouncer_binary

pytestmark = [
    pytest.mark.skipif(
        pgbouncer_binary() is None and not os.environ.get("CI"),
        reason="pgbouncer is not installed here (CI installs it; apt-get install pgbouncer)",
    ),
    pytest.mark.slow,  # runs a pgbouncer process
]


async def test_two_tenants_interleaved_through_transaction_pooling(db, make_tenant):
    a, b = await make_tenant("A"), await make_tenant("B")
    tenants = {a.tenant_id: "key-a", b.tenant_id: "key-b"}
    with pgbouncer(db.runtime_url, pool_size=3) as url:
        pool = await create_pool(url, min_size=12, max_size=12, pgbouncer=True)
        store = EventStore(pool)
        try:
            async def client(i: int) -> None:
                rnd = random.Random(i)
                for n in range(15):
                    tenant = rnd.choice(list(tenants))
                    actor = StoreActor("api_key", tenants[tenant])
                    async with store.unit_of_work(tenant, actor) as s:
                        # Staged: the append travels in the COMMIT's own message,
                        # which must reach the same server connection as the rest.
                        await s.append(uuid.uuid4(), 0, [NewEvent("Probe", {"c": i, "n": n})])
                    async with store.unit_of_work(tenant, actor) as s:
                        # (each tenant's first event is the operator's ApiKeyIssued)
                        seen = await s.conn.fetch("SELECT tenant_id, actor_id FROM events "
                                                  "WHERE actor_kind <> 'operator'")
                        assert {r["tenant_id"] for r in seen} == {tenant}
                        assert {r["actor_id"] for r in seen} == {tenants[tenant]}
                    # A transaction with nothing armed must see nothing at all.
                    async with pool.acquire() as conn:
                        assert await conn.fetchval("SELECT count(*) FROM events") == 0
                        assert await conn.fetchval(
                            "SELECT current_setting('app.tenant_id', true)") in (None, "")

            await asyncio.gather(*(client(i) for i in range(12)))
            for tenant, key in tenants.items():
                async with store.unit_of_work(tenant) as s:
                    events = await s.read_tenant(0, 1000)
                    assert [e.seq for e in events] == list(range(1, len(events) + 1))
                    assert {e.actor_id for e in events[1:]} == {key}
                    assert events[0].actor_kind == "operator"
                    assert (await s.verify_chain()).ok
            total = 0
            for tenant in tenants:
                async with store.unit_of_work(tenant) as s:
                    total += len(await s.read_tenant(0, 1000))
            assert total == 12 * 15 + len(tenants)  # plus each first ApiKeyIssued
        finally:
            await pool.close()
