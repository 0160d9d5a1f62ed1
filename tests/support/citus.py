"""What the Citus-readiness tests read: tenant tables and keys from ``pg_catalog``, and
which named queries reach a tenant table without naming its tenant.

A query is judged by its generic plan (``plan_cache_mode = force_generic_plan``,
explained as a superuser so that no row-level security policy adds its own
``tenant_id`` condition): every scan of a tenant table must carry a top-level
``tenant_id = ...`` conjunct (``id = ...`` for ``tenants``) in its index condition,
recheck condition or filter. That is what lets Citus route a statement to the one
node holding the tenant; a join condition on ``tenant_id`` alone (no tenant named)
still fans out. Inserts name the tenant in their values and route by it. Functions
of the schema written in SQL (``api_key_lookup``) are explained the same way, with
their named arguments as parameters; PL/pgSQL bodies are not plans and are not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from eventstore.sqlfile import load_queries

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("api", "handlers", "scheduler", "projections", "eventstore", "domain",
            "migrations", "client")
TENANT_COLUMN = "tenant_id"
ROOT_TABLE = "tenants"  # keyed by its own ``id``, the value every tenant_id names

TABLES = """
SELECT c.relname AS name,
       EXISTS (SELECT 1 FROM pg_attribute a
                WHERE a.attrelid = c.oid AND a.attname = 'tenant_id'
                  AND NOT a.attisdropped) AS has_tenant
  FROM pg_class c
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
 ORDER BY c.relname
"""

# Every unique index (primary keys and unique constraints have one each), with its
# key columns in order; expression columns come out as NULL.
UNIQUE_KEYS = """
SELECT t.relname AS table_name, i.relname AS index_name, x.indisprimary AS is_primary,
       array(SELECT a.attname FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
             LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
             WHERE k.n <= x.indnkeyatts ORDER BY k.n) AS columns
  FROM pg_index x
  JOIN pg_class t ON t.oid = x.indrelid
  JOIN pg_class i ON i.oid = x.indexrelid
 WHERE t.relnamespace = 'public'::regnamespace AND x.indisunique
 ORDER BY 1, 2
"""

FOREIGN_KEYS = """
SELECT c.conname AS name, t.relname AS table_name, r.relname AS referenced,
       array(SELECT a.attname FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
             ORDER BY k.n) AS columns,
       array(SELECT a.attname FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum
             ORDER BY k.n) AS referenced_columns
  FROM pg_constraint c
  JOIN pg_class t ON t.oid = c.conrelid
  JOIN pg_class r ON r.oid = c.confrelid
 WHERE c.contype = 'f' AND t.relnamespace = 'public'::regnamespace
 ORDER BY 2, 1
"""

SQL_FUNCTIONS = """
SELECT p.proname AS name, p.prosrc AS body,
       array(SELECT n FROM unnest(p.proargnames, coalesce(p.proargmodes, array_fill(
                                  'i'::"char", ARRAY[coalesce(cardinality(p.proargnames), 0)])))
                          WITH ORDINALITY AS a(n, mode, i)
              WHERE a.mode IN ('i', 'b') ORDER BY a.i) AS arg_names,
       array(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) AS t) AS arg_types
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'public'::regnamespace AND l.lanname = 'sql'
"""


@dataclass(frozen=True)
class Catalog:
    """The public schema's tables and keys."""

    tables: dict[str, bool]  # name -> has a tenant_id column
    unique_keys: list[asyncpg.Record]
    foreign_keys: list[asyncpg.Record]

    def tenant_column(self, table: str) -> str | None:
        """The column naming a row's tenant (None: the table has none)."""
        if table == ROOT_TABLE:
            return "id"
        return TENANT_COLUMN if self.tables.get(table) else None


async def read_catalog(conn: asyncpg.Connection) -> Catalog:
    tables = {r["name"]: r["has_tenant"] for r in await conn.fetch(TABLES)}
    return Catalog(tables, await conn.fetch(UNIQUE_KEYS), await conn.fetch(FOREIGN_KEYS))


def named_queries() -> dict[str, str]:
    """Every named statement of every package's ``queries.sql``, as ``path:name``.

    The ticket list's ``{filters}`` marker is filled with every filter at once."""
    from projections.reads import TICKET_FILTERS

    found: dict[str, str] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("queries.sql")):
            for name, sql in load_queries(path).items():
                if "{filters}" in sql:
                    sql = sql.replace("{filters}", "\n".join(
                        c.format(n=5 + i) for i, c in enumerate(TICKET_FILTERS.values())))
                found[f"{path.relative_to(ROOT)}:{name}"] = sql
    return found


def conjuncts(condition: str) -> list[str]:
    """The top-level AND terms of a condition as EXPLAIN prints it."""
    text = _unwrap(condition.strip())
    terms, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "'":  # skip a literal
            i = text.index("'", i + 1) + 1 if "'" in text[i + 1:] else len(text)
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and text.startswith(" AND ", i):
            terms.append(_unwrap(text[start:i].strip()))
            start = i + 5
            i += 5
            continue
        i += 1
    terms.append(_unwrap(text[start:].strip()))
    return terms


def _unwrap(text: str) -> str:
    """``text`` without parentheses that enclose all of it."""
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for i, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and i < len(text) - 1:
                return text
        text = text[1:-1].strip()
    return text


def names_tenant(condition: str | None, column: str) -> bool:
    """Some top-level conjunct equates the scanned table's tenant column to a value."""
    if not condition:
        return False
    side = rf"(?:\w+\.)?{column}"
    for term in conjuncts(condition):
        equated = re.fullmatch(rf"{side} = .+", term) or re.fullmatch(rf".+ = {side}", term)
        if equated and " OR " not in term and "ANY" not in term:
            return True
    return False


SCAN_CONDITIONS = ("Index Cond", "Recheck Cond", "Filter", "TID Cond")


def _scans(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every node of a plan tree, depth first."""
    found = [plan]
    for child in plan.get("Plans", []):
        found.extend(_scans(child))
    return found


class QueryChecker:
    """Explains statements on a superuser connection and names the tenant tables
    they scan without naming the tenant."""

    def __init__(self, conn: asyncpg.Connection, catalog: Catalog,
                 functions: dict[str, asyncpg.Record]) -> None:
        self.conn = conn
        self.catalog = catalog
        self.functions = functions

    @classmethod
    async def open(cls, conn: asyncpg.Connection) -> QueryChecker:
        await conn.execute("SET plan_cache_mode = force_generic_plan")
        functions = {r["name"]: r for r in await conn.fetch(SQL_FUNCTIONS)}
        return cls(conn, await read_catalog(conn), functions)

    async def plan(self, sql: str, types: list[str] | None = None) -> dict[str, Any]:
        declared = f"({', '.join(types)})" if types else ""
        await self.conn.execute(f"PREPARE citus_check{declared} AS {sql}")
        try:
            count = await self.conn.fetchval(
                "SELECT cardinality(parameter_types) FROM pg_prepared_statements "
                "WHERE name = 'citus_check'")
            args = ", ".join(["NULL"] * count)
            raw = await self.conn.fetchval(
                f"EXPLAIN (FORMAT JSON) EXECUTE citus_check{f'({args})' if count else ''}")
        finally:
            await self.conn.execute("DEALLOCATE citus_check")
        plan: dict[str, Any] = orjson.loads(raw)[0]["Plan"]
        return plan

    async def unrouted(self, sql: str, types: list[str] | None = None,
                       seen: frozenset[str] = frozenset()) -> set[str]:
        """Tenant tables the statement scans without naming the tenant (a function of
        the schema written in SQL counts with what its body scans)."""
        found: set[str] = set()
        for node in _scans(await self.plan(sql, types)):
            table = node.get("Relation Name")
            function = node.get("Function Name")
            if function in self.functions and function not in seen:
                f = self.functions[function]
                body = f["body"]
                for i, arg in enumerate(f["arg_names"], start=1):
                    body = re.sub(rf"\b{re.escape(arg)}\b", f"${i}", body)
                found |= {f"{t} (in {function})" for t in await self.unrouted(
                    body, list(f["arg_types"]), seen | {function})}
            if table is None or node.get("Node Type") == "ModifyTable":
                continue
            column = self.catalog.tenant_column(table)
            if column is None:
                continue
            conditions = [node.get(key) for key in SCAN_CONDITIONS]
            if node["Node Type"] == "Bitmap Heap Scan":
                conditions += [n.get("Index Cond") for n in _scans(node)]
            if not any(names_tenant(c, column) for c in conditions):
                found.add(table)
        return found
