"""The schema can be distributed by tenant (Citus), checked on the migrated catalog.

- Every table with ``tenant_id`` has it first in its primary key and in every unique
  index (a distributed table's keys must contain the distribution column).
- Every foreign key between tenant tables carries ``tenant_id`` to ``tenant_id``
  (``tenants.id``): co-located rows reference co-located rows.
- Every table without ``tenant_id`` is a reference or coordinator-local table in
  docs/scaling.md.
- docs/citus.sql distributes every table, each after the tables it references.
- Every named SQL statement names its tenant on every tenant table it scans, or is in
  ``CROSS_TENANT`` with the reason it may not (tests/support/citus.py says how a
  statement is judged).

Each list of exceptions must be exactly what the catalog shows: a table or statement
that starts to obey the rule has to leave its list, and a new one that breaks it fails.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from tests.support import pg
from tests.support.citus import Catalog, QueryChecker, named_queries, read_catalog

ROOT = Path(__file__).resolve().parents[2]

KEY_EXCEPTIONS = {
    "jobs": "tenant_id is NULL for global jobs (jobs.purge, jobs.seed_tenants), so the key "
            "is (id); on Citus those rows move to a coordinator-local jobs_global and the "
            "key becomes (tenant_id, id) (docs/citus.sql, step 2)",
    "tenants": "a slug names one tenant of all (sign-in finds the tenant by it before it "
               "is known), so tenants_slug is (slug); on Citus the slugs move to a "
               "reference table tenant_slugs (docs/citus.sql, step 3)",
}

_CLAIM = "the job claim: the scheduler works through every tenant's jobs by id and run_at"
CROSS_TENANT = {
    "api/http/queries.sql:api_key_lookup":
        "the API-key lookup runs before the tenant is known: a key hash is all a request "
        "brings (docs/citus.sql, step 4)",
    "handlers/queries.sql:all_tenant_ids": "operator upgrades walk every tenant",
    "handlers/queries.sql:slug_taken": "the operator checks that a slug is free among all "
                                       "tenants (docs/citus.sql, step 3)",
    "eventstore/queries.sql:data_key_census":
        "the start-up check of the key-encryption key runs before any tenant is known and "
        "reads only fingerprints and counts (a fan-out query on Citus)",
    "scheduler/queries.sql:claim": _CLAIM + " (due jobs in run_at order, SKIP LOCKED)",
    "scheduler/queries.sql:renew": _CLAIM + " (leases of the jobs a worker holds)",
    "scheduler/queries.sql:complete": _CLAIM + " (finishing the jobs a worker holds)",
    "scheduler/queries.sql:fail": _CLAIM + " (a failed attempt, by job id)",
    "scheduler/queries.sql:release": _CLAIM + " (handing jobs back at shutdown)",
    "scheduler/queries.sql:next_due": _CLAIM + " (when the next job of any tenant is due)",
    "scheduler/queries.sql:purge_finished": "jobs.purge, a global job, deletes finished "
                                            "jobs of every tenant",
    "scheduler/queries.sql:tenant_ids": "jobs.seed_tenants gives every tenant its jobs",
    "projections/queries.sql:ensure_checkpoints":
        "the projector's search: a checkpoint for every (projection, tenant)",
    "projections/queries.sql:claim":
        "the projector's search: a (projection, tenant) behind its head, SKIP LOCKED",
    "projections/queries.sql:status": "`helpdesk projections status` lists every tenant",
    "projections/queries.sql:tenant_ids": "a rebuild of every tenant walks the tenants",
    "projections/queries.sql:heads": "`helpdesk projections status` reads every tenant's "
                                     "head on the primary when the rest came from a replica",
    "projections/queries.sql:lag_totals": "the projection lag metric sums every tenant",
}


@pytest.fixture
async def catalog_conn(db: pg.TestDatabase) -> AsyncIterator[asyncpg.Connection]:
    """A superuser connection: the catalog and plans without row-level security."""
    conn = await asyncpg.connect(db.admin_url)
    try:
        yield conn
    finally:
        await conn.close()


@pytest.fixture
async def catalog(catalog_conn: asyncpg.Connection) -> Catalog:
    return await read_catalog(catalog_conn)


def key_violations(catalog: Catalog) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for table in catalog.tables:
        column = catalog.tenant_column(table)
        if column is None:
            continue
        keys = [k for k in catalog.unique_keys if k["table_name"] == table]
        if not any(k["is_primary"] for k in keys):
            found.setdefault(table, []).append("no primary key")
        for k in keys:
            if not k["columns"] or k["columns"][0] != column:
                found.setdefault(table, []).append(
                    f"{k['index_name']} ({', '.join(map(str, k['columns']))})")
    return found


def test_tenant_id_leads_every_primary_key_and_unique_index(catalog: Catalog) -> None:
    found = key_violations(catalog)
    assert set(found) == set(KEY_EXCEPTIONS), (
        f"keys of tenant tables that do not begin with tenant_id: {found}")
    assert {"events", "tickets", "projection_checkpoints", "api_keys"} <= {
        t for t in catalog.tables if catalog.tenant_column(t)}


async def test_every_gin_index_on_a_tenant_table_leads_with_the_tenant(
        catalog: Catalog, catalog_conn: asyncpg.Connection) -> None:
    """A GIN index (tags, search vectors) without the tenant holds every tenant's
    entries in one tree: a filter then finds other tenants' rows through the index and
    drops them after it. btree_gin lets the tenant lead (migrations 0520, 0521)."""
    rows = await catalog_conn.fetch("""
        SELECT c.relname AS table_name, i.relname AS index_name,
               (SELECT a.attname FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum = x.indkey[0]) AS first
          FROM pg_index x
          JOIN pg_class i ON i.oid = x.indexrelid
          JOIN pg_class c ON c.oid = x.indrelid
          JOIN pg_am m ON m.oid = i.relam
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE m.amname = 'gin' AND n.nspname = 'public'""")
    gin = [r for r in rows if catalog.tenant_column(r["table_name"]) is not None]
    bad = [f"{r['table_name']}.{r['index_name']} (first: {r['first']})" for r in gin
           if r["first"] != catalog.tenant_column(r["table_name"])]
    assert not bad, f"GIN indexes of tenant tables that do not lead with the tenant: {bad}"
    assert {"tickets", "contacts", "search_documents"} <= {r["table_name"] for r in gin}


def test_foreign_keys_between_tenant_tables_carry_the_tenant(catalog: Catalog) -> None:
    checked, bad = 0, []
    for fk in catalog.foreign_keys:
        mine = catalog.tenant_column(fk["table_name"])
        theirs = catalog.tenant_column(fk["referenced"])
        if mine is None or theirs is None:
            continue
        checked += 1
        pairs = list(zip(fk["columns"], fk["referenced_columns"], strict=True))
        if (mine, theirs) not in pairs:
            bad.append(f"{fk['table_name']}.{fk['name']} {pairs}")
    assert not bad, f"foreign keys between tenant tables without tenant_id: {bad}"
    assert checked >= 10  # every tenant table references tenants


def documented_shared_tables() -> set[str]:
    """Tables docs/scaling.md's distribution table lists as reference or
    coordinator-local."""
    text = (ROOT / "docs" / "scaling.md").read_text()
    found: set[str] = set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.search(r"reference|coordinator-local", cells[1]):
            found |= set(re.findall(r"`([a-z_]+)`", cells[0]))
    return found


def test_tables_without_a_tenant_are_documented_as_shared(catalog: Catalog) -> None:
    shared = {t for t in catalog.tables if catalog.tenant_column(t) is None}
    assert shared, "expected the migrations' own tables"
    missing = shared - documented_shared_tables()
    assert not missing, ("tables without tenant_id that docs/scaling.md does not list as "
                         f"reference or coordinator-local: {sorted(missing)}")


CALL = re.compile(r"^SELECT (create_distributed_table|create_reference_table|"
                  r"citus_add_local_table_to_metadata)\('([a-z_]+)'(?:,\s*'([a-z_]+)')?",
                  re.MULTILINE)


def test_citus_sql_distributes_every_table_after_what_it_references(catalog: Catalog) -> None:
    calls = CALL.findall((ROOT / "docs" / "citus.sql").read_text())
    order = {table: i for i, (_, table, _) in enumerate(calls)}
    assert len(order) == len(calls), "a table is distributed twice"
    missing = set(catalog.tables) - set(order)
    assert not missing, f"docs/citus.sql does not distribute {sorted(missing)}"
    for how, table, column in calls:
        if table not in catalog.tables:
            continue  # made by the file itself (jobs_global)
        expected = catalog.tenant_column(table)
        if how == "create_distributed_table":
            assert column == expected, f"{table} is distributed by {column}, not {expected}"
        else:
            assert expected is None, f"{table} has {expected} but is not distributed"
    for fk in catalog.foreign_keys:
        assert order[fk["referenced"]] < order[fk["table_name"]], (
            f"{fk['table_name']} is distributed before {fk['referenced']}, which its "
            f"foreign key {fk['name']} references")


async def test_named_queries_name_their_tenant_or_say_why_not(
        catalog_conn: asyncpg.Connection) -> None:
    checker = await QueryChecker.open(catalog_conn)
    queries = named_queries()
    assert len(queries) > 80
    found = {}
    for name, sql in queries.items():
        tables = await checker.unrouted(sql)
        if tables:
            found[name] = sorted(tables)
    unexplained = {n: t for n, t in found.items() if n not in CROSS_TENANT}
    assert not unexplained, f"statements that reach tenant tables without a tenant: {unexplained}"
    obsolete = set(CROSS_TENANT) - set(found)
    assert not obsolete, f"allowed as cross-tenant but now name their tenant: {obsolete}"


@pytest.mark.parametrize(("sql", "flagged"), [
    ("SELECT * FROM tickets WHERE tenant_id = $1 AND id = $2", set()),
    ("SELECT * FROM tickets WHERE tenant_id = $1 OR id = $2", {"tickets"}),
    ("SELECT * FROM tickets WHERE tenant_id = ANY($1::uuid[])", {"tickets"}),
    ("SELECT * FROM tickets t JOIN messages m ON m.tenant_id = t.tenant_id "
     "AND m.ticket_id = t.id WHERE t.tenant_id = $1", set()),
    ("SELECT * FROM tickets t JOIN messages m ON m.tenant_id = t.tenant_id "
     "AND m.ticket_id = t.id WHERE t.id = $1", {"tickets"}),
    ("DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys "
     "WHERE tenant_id = $1 LIMIT $2)", {"idempotency_keys"}),
    ("UPDATE jobs SET status = 'ready' WHERE id = $1", {"jobs"}),
    ("SELECT name FROM tenants WHERE id = $1", set()),
    ("SELECT value FROM instance_secrets WHERE name = $1", set()),
    ("SELECT * FROM api_key_lookup($1)", {"api_keys (in api_key_lookup)"}),
])
async def test_the_query_check_tells_routed_from_fanned_out(
        catalog_conn: asyncpg.Connection, sql: str, flagged: set[str]) -> None:
    checker = await QueryChecker.open(catalog_conn)
    assert await checker.unrouted(sql) == flagged
