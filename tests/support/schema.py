"""The schema the migrations build, described as sorted, readable text.

``tests/integration/schema.txt`` is the committed description of a freshly migrated
database, and ``tests/integration/test_migrations.py`` compares every run's migrations
with it, so a change to what they build (a column, an index, a function body, a
grant, a policy, a role's attributes) fails the suite until the file is regenerated,
and shows in review as a diff of that file. Regenerate it with::

    .venv/bin/python -m tests.support.schema

which migrates a scratch database on ``TEST_DATABASE_URL`` (a superuser URL), or on an
embedded Postgres when that is unset, writes its description to the file and drops
the database.

The description comes from a handful of pg_catalog queries (``schema.sql``), not from
pg_dump, whose output changes between versions. It covers the roles the migrations
create or alter; schemas, tables, views and sequences with their owners, columns,
constraints, indexes, triggers, row-level security, policies and privileges;
functions with their attributes, SET clauses, privileges and full bodies; enum and
domain types; extensions; default privileges. It leaves out the contents of tables
(the checksums and timestamps of ``schema_migrations`` included), comments, rules
other than views, statistics objects, publications and event triggers.

Each object is one block: an unindented header line (``table events``, ``function
events_before_insert()``), then its indented details, blocks sorted by kind and name,
so a diff names the objects it touches (``changed_objects``).
"""

from __future__ import annotations

import asyncio
import difflib
import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import asyncpg

from eventstore.sqlfile import load_queries
from migrations.runner import OWNER_ROLE, RUNTIME_GROUP
from tests.support.pg import RUNTIME_USER, Databases, server_url, with_database

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "tests" / "integration" / "schema.txt"
REGENERATE = ".venv/bin/python -m tests.support.schema"
# The roles `helpdesk migrate` creates; the runtime login is the one the suite migrates
# with (DATABASE_URL names it in a deployment).
DESCRIBED_ROLES = (OWNER_ROLE, RUNTIME_GROUP, RUNTIME_USER)

_QUERIES = load_queries(Path(__file__).with_name("schema.sql"))
_PREAMBLE = (
    "# The schema a fresh `helpdesk migrate` builds, as tests/support/schema.py describes it.\n"
    f"# Do not edit: regenerate with `{REGENERATE}`.\n"
)
_INDENT = "    "
_RELATION_KINDS = {
    "r": "table", "p": "partitioned table", "v": "view", "m": "materialized view",
    "S": "sequence", "f": "foreign table", "c": "composite type",
}
_FUNCTION_KINDS = {"f": "function", "p": "procedure", "a": "aggregate", "w": "window function"}
_VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}
_PARALLEL = {"s": "parallel safe", "r": "parallel restricted", "u": "parallel unsafe"}
_POLICY_COMMANDS = {"*": "ALL", "r": "SELECT", "a": "INSERT", "w": "UPDATE", "d": "DELETE"}
_TRIGGER_STATES = {"O": "", "D": " (disabled)", "R": " (enabled on replica only)",
                   "A": " (enabled always)"}
_DEFAULT_ACL_KINDS = {"r": "tables", "S": "sequences", "f": "functions", "T": "types",
                      "n": "schemas"}


async def describe(conn: asyncpg.Connection, roles: Sequence[str] = DESCRIBED_ROLES) -> str:
    """The description of the database ``conn`` is connected to (see the module docstring).

    Runs inside a transaction of its own (a savepoint if one is open), so it also
    describes uncommitted DDL of that transaction.
    """
    async with conn.transaction():
        # Deparsed expressions qualify what is not on the search path: pin it.
        await conn.execute("SET LOCAL search_path = public")
        blocks: list[tuple[tuple[int, str], list[str]]] = []
        blocks += [((0, r["rolname"]), _role(r)) for r in
                   await conn.fetch(_QUERIES["roles"], list(roles))]
        present = {header[1] for header, _ in blocks}
        blocks += [((0, name), [f"role {name}", _INDENT + "does not exist"])
                   for name in roles if name not in present]
        blocks += [((1, r["name"]), _schema(r)) for r in await conn.fetch(_QUERIES["schemas"])]
        blocks += [((2, r["name"]), [f"extension {r['name']}", f"{_INDENT}schema {r['schema']}"])
                   for r in await conn.fetch(_QUERIES["extensions"])]
        blocks += [((3, r["name"]), _type(r)) for r in await conn.fetch(_QUERIES["types"])]
        blocks += await _relations(conn)
        blocks += [((5, r["identity"]), _function(r))
                   for r in await conn.fetch(_QUERIES["functions"])]
        blocks += [((6, f"{r['role']} {r['schema']} {r['kind']}"), _default_privileges(r))
                   for r in await conn.fetch(_QUERIES["default_privileges"])]
    blocks.sort(key=lambda block: block[0])
    return _PREAMBLE + "".join("\n" + "\n".join(lines) + "\n" for _, lines in blocks)


def split_blocks(text: str) -> dict[str, str]:
    """``{header line: whole block}`` of a description."""
    blocks: dict[str, str] = {}
    header = ""
    for line in text.splitlines(keepends=True):
        if line.strip() and not line[0].isspace():
            header = line.rstrip("\n")
        blocks[header] = blocks.get(header, "") + line
    return blocks


def changed_objects(expected: str, actual: str) -> list[str]:
    """The header lines of the blocks that differ, added or went missing, sorted."""
    old, new = split_blocks(expected), split_blocks(actual)
    return sorted(h for h in old.keys() | new.keys()
                  if old.get(h, "").strip() != new.get(h, "").strip())


def mismatch_report(expected: str, actual: str) -> str:
    """What a developer needs when the migrated schema is not the committed one."""
    rel = SCHEMA_FILE.relative_to(ROOT)
    diff = difflib.unified_diff(expected.splitlines(keepends=True),
                                actual.splitlines(keepends=True),
                                fromfile=f"{rel} (committed)",
                                tofile="migrated database", n=5)
    changed = "".join(f"  {h}\n" for h in changed_objects(expected, actual))
    return (f"the migrated schema differs from {rel} in:\n{changed}"
            "If the migrations are meant to build this, regenerate the file (on\n"
            "TEST_DATABASE_URL, or an embedded Postgres when it is unset) and commit it:\n"
            f"    {REGENERATE}\n\n" + "".join(diff))


def _grant_lines(grants: Iterable[Any], owner: str | None = None,
                 owner_default: Sequence[str] = (), on: str = "") -> list[str]:
    """``grant X, Y to role`` lines, one per grantee (and grant option), sorted.

    The owner's default privileges render as ALL: their list grows with Postgres
    versions (MAINTAIN in 17), while whether the owner still holds them all does not.
    """
    held: dict[tuple[str, bool], set[str]] = {}
    for grantee, privilege, grantable in grants:
        held.setdefault((grantee, grantable), set()).add(privilege)
    lines = []
    for (grantee, grantable), privileges in sorted(held.items()):
        if grantee == owner and not grantable and privileges == set(owner_default):
            listed = "ALL"
        else:
            listed = ", ".join(sorted(privileges))
        lines.append(f"{_INDENT}grant {listed}{on} to {grantee}"
                     + (" (owner)" if grantee == owner else "")
                     + (" with grant option" if grantable else ""))
    return lines


def _role(r: asyncpg.Record) -> list[str]:
    flags = [("LOGIN", r["rolcanlogin"]), ("SUPERUSER", r["rolsuper"]),
             ("CREATEDB", r["rolcreatedb"]), ("CREATEROLE", r["rolcreaterole"]),
             ("INHERIT", r["rolinherit"]), ("REPLICATION", r["rolreplication"]),
             ("BYPASSRLS", r["rolbypassrls"])]
    attributes = " ".join(name if on else "NO" + name for name, on in flags)
    lines = [f"role {r['rolname']}",
             f"{_INDENT}{attributes} CONNECTION LIMIT {r['rolconnlimit']}"]
    lines += [f"{_INDENT}set {setting}" for setting in sorted(r["config"])]
    lines += [f"{_INDENT}member of {group}" for group in r["member_of"]]
    return lines


def _schema(r: asyncpg.Record) -> list[str]:
    return [f"schema {r['name']}", f"{_INDENT}owner {r['owner']}",
            *_grant_lines(r["grants"], r["owner"], r["owner_default"])]


def _type(r: asyncpg.Record) -> list[str]:
    if r["typtype"] == "e":
        labels = ", ".join("'" + label.replace("'", "''") + "'" for label in r["labels"])
        return [f"enum type {r['name']}", f"{_INDENT}owner {r['owner']}",
                f"{_INDENT}labels {labels}"]
    base = r["base_type"] + (" not null" if r["typnotnull"] else "")
    if r["typdefault"] is not None:
        base += f" default {r['typdefault']}"
    return [f"domain {r['name']}", f"{_INDENT}owner {r['owner']}", f"{_INDENT}{base}",
            *(f"{_INDENT}constraint {c}" for c in r["constraints"])]


async def _relations(conn: asyncpg.Connection) -> list[tuple[tuple[int, str], list[str]]]:
    relations = await conn.fetch(_QUERIES["relations"])
    oids = [r["oid"] for r in relations]
    details: dict[int, dict[str, list[asyncpg.Record]]] = {oid: {} for oid in oids}
    for part in ("columns", "constraints", "indexes", "triggers", "policies"):
        for row in await conn.fetch(_QUERIES[part], oids):
            details[row["relation"]].setdefault(part, []).append(row)
    return [((4, r["name"]), _relation(r, details[r["oid"]])) for r in relations]


def _relation(r: asyncpg.Record, parts: dict[str, list[asyncpg.Record]]) -> list[str]:
    kind = r["relkind"]
    lines = [f"{_RELATION_KINDS[kind]} {r['name']}", f"{_INDENT}owner {r['owner']}"]
    if r["relpersistence"] == "u":
        lines.append(f"{_INDENT}unlogged")
    if kind in ("r", "p"):
        rls = ("enabled" if r["relrowsecurity"] else "disabled") + (
            ", forced" if r["relforcerowsecurity"] else ", not forced")
        lines.append(f"{_INDENT}row level security {rls}")
    if r["partition_key"]:
        lines.append(f"{_INDENT}partition by {r['partition_key']}")
    if r["partition_of"]:
        lines.append(f"{_INDENT}partition of {r['partition_of']}")
    if r["options"]:
        lines.append(f"{_INDENT}with ({', '.join(sorted(r['options']))})")
    if r["sequence"]:
        lines.append(f"{_INDENT}{r['sequence']}")
    if r["owned_by"]:
        lines.append(f"{_INDENT}owned by {r['owned_by']}")
    # A sequence's columns are its state (last_value, is_called), not its definition.
    columns = parts.get("columns", []) if kind != "S" else []
    lines += [_column(c) for c in columns]
    if r["definition"]:
        lines.append(f"{_INDENT}definition")
        lines += _body(r["definition"])
    lines += sorted(f"{_INDENT}constraint {c['name']} {c['definition']}"
                    for c in parts.get("constraints", []))
    lines += sorted(f"{_INDENT}{i['definition']}" for i in parts.get("indexes", []))
    lines += sorted(f"{_INDENT}{t['definition']}{_TRIGGER_STATES[t['enabled']]}"
                    for t in parts.get("triggers", []))
    for p in sorted(parts.get("policies", []), key=lambda p: p["name"]):
        lines.append(f"{_INDENT}policy {p['name']} "
                     + ("permissive" if p["polpermissive"] else "restrictive")
                     + f" for {_POLICY_COMMANDS[p['polcmd']]} to {', '.join(p['roles'])}")
        if p["using"] is not None:
            lines.append(f"{_INDENT * 2}using {p['using']}")
        if p["with_check"] is not None:
            lines.append(f"{_INDENT * 2}with check {p['with_check']}")
    if kind != "c":  # a composite type's privileges are its type's, not its relation's
        lines += _grant_lines(r["grants"], r["owner"], r["owner_default"])
    for c in columns:
        lines += _grant_lines(c["grants"], on=f" ({c['name']})")
    return lines


def _column(c: asyncpg.Record) -> str:
    text = f"{_INDENT}column {c['name']} {c['type']}"
    if c["collation"]:
        text += f" collate {c['collation']}"
    if c["attnotnull"]:
        text += " not null"
    if c["attcompression"]:  # empty: the server's default_toast_compression
        # (lz4 is not in every build: the embedded server's has none, so no migration
        # may name it)
        text += " compression " + {"p": "pglz", "l": "lz4"}[c["attcompression"]]
    if c["attidentity"]:
        text += " generated " + ("always" if c["attidentity"] == "a" else "by default") \
            + " as identity"
    if c["attgenerated"]:
        text += f" generated always as ({c['default']}) stored"
    elif c["default"] is not None:
        text += f" default {c['default']}"
    return text


def _function(r: asyncpg.Record) -> list[str]:
    attributes = [f"language {r['language']}", _VOLATILITY[r["provolatile"]]]
    attributes += ["strict"] if r["proisstrict"] else []
    attributes += ["leakproof"] if r["proleakproof"] else []
    attributes += ["security definer" if r["prosecdef"] else "security invoker",
                   _PARALLEL[r["proparallel"]], f"cost {r['procost']:g}"]
    attributes += [f"rows {r['prorows']:g}"] if r["prorows"] else []
    lines = [f"{_FUNCTION_KINDS[r['prokind']]} {r['identity']}",
             f"{_INDENT}owner {r['owner']}",
             f"{_INDENT}arguments ({r['arguments']})"]
    if r["result"] is not None:
        lines.append(f"{_INDENT}returns {r['result']}")
    lines.append(f"{_INDENT}{', '.join(attributes)}")
    lines += [f"{_INDENT}set {setting}" for setting in r["config"]]
    lines += _grant_lines(r["grants"], r["owner"], r["owner_default"])
    lines.append(f"{_INDENT}body")
    lines += _body(r["body"])
    return lines


def _default_privileges(r: asyncpg.Record) -> list[str]:
    where = f" in schema {r['schema']}" if r["schema"] else ""
    return [f"default privileges of {r['role']}{where} on {_DEFAULT_ACL_KINDS[r['kind']]}",
            *_grant_lines(r["grants"])]


def _body(text: str) -> list[str]:
    """Source text indented under its block. Its common indentation, trailing spaces and
    the blank lines around it are dropped: they mean nothing to the function, and an
    editor trimming them would otherwise make a diff of nothing."""
    lines = [line.rstrip() for line in textwrap.dedent(text).splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return [_INDENT * 2 + line if line else "" for line in lines]


async def describe_fresh_database(server: str) -> str:
    """Migrate a scratch database on ``server`` the way the suite does, describe it,
    drop it."""
    databases = Databases(server)
    await databases.create_template()
    try:
        conn = await asyncpg.connect(with_database(server, databases.template))
        try:
            return await describe(conn)
        finally:
            await conn.close()
    finally:
        await databases.drop(databases.template)


def main() -> None:
    """Regenerate ``SCHEMA_FILE``."""
    with server_url() as server:
        text = asyncio.run(describe_fresh_database(server))
    SCHEMA_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {SCHEMA_FILE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
