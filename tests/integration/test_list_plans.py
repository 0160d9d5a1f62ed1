"""The ticket list's statement walks the keyset index from the cursor and stops at the
limit, in the plan Postgres keeps for it (the generic plan of a prepared statement),
however large the tenant: no reading of every ticket, no sort. The list as of a seq
walks the kept versions' keyset index the same way, testing the versions' validity in
the index."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from handlers.tenants import create_tenant_as_operator
from projections.reads import FieldFilter, TicketFilters, filter_conditions, ticket_list_query
from projections.ticket_versions import Q as VERSIONS
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
        await admin.execute("ANALYZE ticket_versions")
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
        literals = [f"'{t}'", "'infinity'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "26",
                    *(_literal(v) for v in values)]
        assert len(literals) == len(params)
        plan = "\n".join(r[0] for r in await s.conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE listing({', '.join(literals)})"))
    # A group's tickets have a keyset index of their own.
    index = "tickets_group_keyset" if filters.group_id else "tickets_keyset"
    assert f"Index Scan Backward using {index}" in plan, plan
    assert "Sort" not in plan and "Bitmap" not in plan, plan


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return repr(value).lower()
    if isinstance(value, list):
        return "ARRAY[" + ",".join(f"'{v}'" for v in value) + "]"
    return f"'{value}'"


@pytest.mark.parametrize("filters", [TicketFilters(), TicketFilters(states=("open",))])
async def test_the_as_of_list_tests_the_validity_bounds_in_the_index(seeded, store, filters):
    """Newest first from the start bound, no sort, and ``valid_from_seq <= N <
    valid_to_seq`` as conditions of the index scan (migration 0960): the btree tests
    them on its entries, so of a ticket's kept versions only the one valid at N is read
    from the table. With the bounds INCLUDEd (0611) they were a filter on each row. The
    index holds stamped versions only, and the generic plan, which knows no N, still
    walks it: ``valid_from_seq <= $5`` implies its predicate."""
    t = seeded[1]
    conditions, values = filter_conditions(filters, first=6)
    query = VERSIONS["list_as_of"].replace("{filters}", "\n   ".join(conditions))
    async with store.unit_of_work(t, ACTOR, readonly=True) as s:
        seq = await s.conn.fetchval("SELECT max(valid_from_seq) / 2 FROM ticket_versions")
        await s.conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        await s.conn.execute(f"PREPARE listing AS {query}")
        literals = [f"'{t}'", "'infinity'", "'ffffffff-ffff-ffff-ffff-ffffffffffff'", "26",
                    str(seq), *(_literal(v) for v in values)]
        plan = [r[0] for r in await s.conn.fetch(
            f"EXPLAIN (ANALYZE, COSTS OFF) EXECUTE listing({', '.join(literals)})")]
    text = "\n".join(plan)
    [walk] = [i for i, line in enumerate(plan)
              if "Index Scan Backward using ticket_versions_keyset" in line]
    index_cond = next(line for line in plan[walk:] if "Index Cond:" in line)
    assert "valid_from_seq <=" in index_cond and "valid_to_seq >" in index_cond, text
    assert "Sort" not in text and "Bitmap" not in text, text


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
