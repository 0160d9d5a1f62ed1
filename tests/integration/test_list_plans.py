"""The ticket list's statement walks the keyset index from the cursor and stops at the
limit, in the plan Postgres keeps for it (the generic plan of a prepared statement),
however large the tenant: no reading of every ticket, no sort."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from handlers.tenants import create_tenant_as_operator
from projections.reads import FieldFilter, TicketFilters, ticket_list_query
from tests.support import pg
from tests.support.desk import ACTOR, seed_tickets


@pytest.fixture(scope="module")
async def seeded(databases: pg.Databases) -> AsyncIterator[tuple[pg.TestDatabase, uuid.UUID]]:
    """One tenant of 2,000 tickets opened through the write path, analyzed, for every
    plan of this module (they only read it)."""
    clone = await databases.clone()
    tenant = (await create_tenant_as_operator(clone.admin_url, "Acme")).tenant_id
    await seed_tickets(clone.runtime_url, tenant, 2000)
    admin = await asyncpg.connect(clone.admin_url)
    try:
        await admin.execute("ANALYZE tickets")
    finally:
        await admin.close()
    yield clone, tenant
    await databases.drop(clone.name)


@pytest.fixture
def db(seeded: tuple[pg.TestDatabase, uuid.UUID]) -> pg.TestDatabase:
    return seeded[0]


@pytest.mark.parametrize("filters", [
    TicketFilters(), TicketFilters(tags=("hardware",)), TicketFilters(unassigned=True),
    TicketFilters(group_id=uuid.uuid4()), TicketFilters(no_group=True),
    TicketFilters(fields=(FieldFilter("plan", "any", ("pro",)),)),
    TicketFilters(fields=(FieldFilter("areas", "any_of_list", ("api", "login")),
                          FieldFilter("due", "date_gte", "2026-01-01"))),
])
async def test_the_generic_plan_walks_the_keyset_index(seeded, store, filters):
    t = seeded[1]
    query, values = ticket_list_query(filters)
    params = [f"${i}" for i in range(1, 5 + len(values))]
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        await s.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        await s.conn.execute(f"PREPARE listing AS {query}")
        def literal(value: object) -> str:
            if isinstance(value, bool):
                return repr(value).lower()
            if isinstance(value, list):
                return "ARRAY[" + ",".join(f"'{v}'" for v in value) + "]"
            return f"'{value}'"

        literals = [f"'{t}'", "'infinity'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "26",
                    *(literal(v) for v in values)]
        assert len(literals) == len(params)
        plan = "\n".join(r[0] for r in await s.conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE listing({', '.join(literals)})"))
    # A group's tickets have a keyset index of their own.
    index = "tickets_group_keyset" if filters.group_id else "tickets_keyset"
    assert f"Index Scan Backward using {index}" in plan, plan
    assert "Sort" not in plan and "Bitmap" not in plan, plan


async def test_the_list_by_organization_walks_its_own_index(seeded, store):
    t = seeded[1]
    query, values = ticket_list_query(TicketFilters(organization_id=uuid.uuid4()))
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        await s.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        await s.conn.execute(f"PREPARE listing AS {query}")
        plan = "\n".join(r[0] for r in await s.conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE listing('{t}', 'infinity', "
            f"'ffffffff-ffff-ffff-ffff-ffffffffffff', 26, '{values[0]}')"))
    assert "Index Scan Backward using tickets_organization" in plan, plan
    assert "Sort" not in plan and "Bitmap" not in plan, plan


@pytest.mark.parametrize(("filters", "index"), [
    (TicketFilters(), "tickets_sla_due"),
    (TicketFilters(assignee=uuid.uuid4()), "tickets_assignee_sla_due"),
])
async def test_the_list_by_sla_due_walks_its_own_index(seeded, store, filters, index):
    """``sort=sla_due`` (migration 0550): forwards from the cursor, no sort, at any depth."""
    t = seeded[1]
    query, values = ticket_list_query(filters, "sla_due")
    given = [f"'{v}'" for v in values]
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        await s.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        await s.conn.execute(f"PREPARE listing AS {query}")
        plan = "\n".join(r[0] for r in await s.conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE listing('{t}', '-infinity', "
            f"'00000000-0000-0000-0000-000000000000', 26{''.join(', ' + v for v in given)})"))
    assert f"Index Scan using {index}" in plan, plan
    assert "Sort" not in plan and "Bitmap" not in plan, plan
