"""Scheduling a timer twice moves it; cancelling removes it; tenants cannot see each other's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from eventstore.types import SYSTEM
from scheduler.jobs import cancel, schedule

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


async def test_dedupe_key_moves_a_live_job(store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, SYSTEM) as s:
        first = await schedule(s.conn, t, "sla.check", T0, dedupe_key="sla:x:first_response")
        second = await schedule(s.conn, t, "sla.check", T0 + timedelta(hours=1),
                                dedupe_key="sla:x:first_response", payload={"a": 1})
        # (The tenant also has its periodic jobs, from its creation on.)
        rows = await s.conn.fetch("SELECT id, run_at, payload FROM jobs "
                                  "WHERE kind = 'sla.check'")
    assert first == second
    assert len(rows) == 1
    assert rows[0]["run_at"] == T0 + timedelta(hours=1) and rows[0]["payload"] == {"a": 1}


async def test_cancel_and_isolation(store, make_tenant):
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    async with store.unit_of_work(a, SYSTEM) as s:
        await schedule(s.conn, a, "sla.check", T0, dedupe_key="k")
    async with store.unit_of_work(b, SYSTEM) as s:
        assert await s.conn.fetchval("SELECT count(*) FROM jobs WHERE dedupe_key = 'k'") == 0
        assert not await cancel(s.conn, b, "k")
    async with store.unit_of_work(a, SYSTEM) as s:
        assert await cancel(s.conn, a, "k")
        assert await s.conn.fetchval("SELECT count(*) FROM jobs WHERE dedupe_key = 'k'") == 0
