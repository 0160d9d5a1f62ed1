"""The tenant tables as the catalog knows them, and rows for the ones a seed left empty.

Isolation tests enumerate tables from ``pg_catalog`` rather than from a list, so a
table is covered the day a migration creates it. ``fill_row`` writes one minimal row
of a table for a tenant, as the owner role, from the catalog alone: the column defaults
where there are any, values of each column's type otherwise, and for every foreign
key that carries the tenant, the key of a row the tenant already has in the table it
references. A table it cannot fill (a CHECK it does not satisfy, a reference to an
empty table) is reported with the database's reason: seed it through its handler.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import asyncpg

TENANT_KEY = {"tenants": "id"}
"""Tables whose tenant is not a ``tenant_id`` column: the column that is."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    not_null: bool
    has_default: bool
    generated: bool


async def public_tables(conn: asyncpg.Connection) -> list[str]:
    """Every ordinary or partitioned table of the public schema."""
    rows = await conn.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY c.relname")
    return [r["relname"] for r in rows]


async def tenant_tables(conn: asyncpg.Connection) -> dict[str, str]:
    """Every public table with a ``tenant_id`` column (and ``tenants`` itself), mapped
    to the column that holds its tenant."""
    rows = await conn.fetch(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' "
        "AND NOT a.attisdropped WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') "
        "ORDER BY c.relname")
    found = {r["relname"]: "tenant_id" for r in rows}
    for table, column in TENANT_KEY.items():
        if table in await public_tables(conn):
            found[table] = column
    return dict(sorted(found.items()))


async def columns(conn: asyncpg.Connection, table: str) -> list[Column]:
    rows = await conn.fetch(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull, "
        "a.atthasdef, a.attgenerated <> '' OR a.attidentity <> '' AS generated "
        "FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum", f"public.{table}")
    return [Column(r["attname"], r["type"], r["attnotnull"], r["atthasdef"], r["generated"])
            for r in rows]


def ident(name: str) -> str:
    """``name`` quoted as an SQL identifier (a column may be called ``default``)."""
    return '"' + name.replace('"', '""') + '"'


async def writable_columns(conn: asyncpg.Connection, table: str) -> list[str]:
    """The columns an INSERT may name (not generated, not identity)."""
    return [c.name for c in await columns(conn, table) if not c.generated]


_LITERALS = {
    "uuid": "gen_random_uuid()", "text": "'x'", "integer": "1", "bigint": "1",
    "smallint": "1", "numeric": "1", "boolean": "false", "jsonb": "'{}'::jsonb",
    "json": "'{}'::json", "bytea": "'\\x00'::bytea", "tsvector": "''::tsvector",
    "date": "current_date", "timestamp with time zone": "now()",
}


def _literal(column: Column) -> str:
    """An SQL value of a column's type."""
    if column.type.endswith("[]"):
        return f"'{{}}'::{column.type}"
    if column.type in _LITERALS:
        return _LITERALS[column.type]
    raise LookupError(f"no value for {column.name}, of type {column.type}")


async def _references(conn: asyncpg.Connection, table: str) -> list[tuple[list[str], str,
                                                                            list[str]]]:
    """Foreign keys of ``table`` that carry more than the tenant: (columns, referenced
    table, referenced columns)."""
    rows = await conn.fetch(
        "SELECT (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(c.conkey) "
        "        WITH ORDINALITY k(n, i) JOIN pg_attribute a "
        "        ON a.attrelid = c.conrelid AND a.attnum = k.n) AS cols, "
        "       c.confrelid::regclass::text AS target, "
        "       (SELECT array_agg(a.attname ORDER BY k.i) FROM unnest(c.confkey) "
        "        WITH ORDINALITY k(n, i) JOIN pg_attribute a "
        "        ON a.attrelid = c.confrelid AND a.attnum = k.n) AS target_cols "
        "FROM pg_constraint c WHERE c.conrelid = $1::regclass AND c.contype = 'f'",
        f"public.{table}")
    return [(list(r["cols"]), r["target"], list(r["target_cols"])) for r in rows
            if len(r["cols"]) > 1]


async def fill_row(conn: asyncpg.Connection, table: str, tenant_column: str,
                   tenant: uuid.UUID) -> None:
    """Insert one minimal row of ``table`` for ``tenant`` (``conn`` acts as the owner
    role with the tenant armed, or as a superuser): with NULL in every nullable column without a
    default first, and if a CHECK refuses that, with a value in every column. Raises
    what the database says when neither will do."""
    try:
        async with conn.transaction():
            await _insert(conn, table, tenant_column, tenant, every_column=False)
    except asyncpg.CheckViolationError:
        await _insert(conn, table, tenant_column, tenant, every_column=True)


async def _insert(conn: asyncpg.Connection, table: str, tenant_column: str,
                  tenant: uuid.UUID, *, every_column: bool) -> None:
    values: dict[str, str] = {tenant_column: "$1"}
    args: list[Any] = [tenant]
    for cols, target, target_cols in await _references(conn, table):
        tenant_at = cols.index(tenant_column) if tenant_column in cols else None
        if tenant_at is None:
            continue
        found = await conn.fetchrow(
            f"SELECT {', '.join(target_cols)} FROM {target} "
            f"WHERE {target_cols[tenant_at]} = $1 LIMIT 1", tenant)
        if found is None:
            raise LookupError(f"{table} references {target}, where the tenant has no row")
        for col, target_col in zip(cols, target_cols, strict=True):
            if col not in values:
                args.append(found[target_col])
                values[col] = f"${len(args)}"
    for column in await columns(conn, table):
        if column.generated or column.name in values:
            continue
        if column.has_default or not (column.not_null or every_column):
            continue
        values[column.name] = _literal(column)
    await conn.execute(f"INSERT INTO {table} ({', '.join(map(ident, values))}) "
                       f"VALUES ({', '.join(values.values())})", *args)
