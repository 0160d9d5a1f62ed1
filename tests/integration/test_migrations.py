"""The migrations build the committed schema; the runner is idempotent, safe to run
concurrently and strict about edits.

``schema.txt`` next to this module describes what a fresh migration builds: tables,
columns, constraints, indexes, triggers, functions and their bodies, privileges,
row-level security and policies, the roles (tests/support/schema.py). After changing
the migrations, regenerate it and commit it with them::

    .venv/bin/python -m tests.support.schema
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import asyncpg
import pytest

from migrations.runner import SQL_DIR, MigrationError, discover, migrate
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, with_database
from tests.support.schema import (
    REGENERATE,
    SCHEMA_FILE,
    changed_objects,
    describe,
    mismatch_report,
)


@pytest.fixture
async def empty_db(pg_server: str):
    name = f"hd_mig_{uuid.uuid4().hex[:10]}"
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    yield with_database(pg_server, name)
    admin = await asyncpg.connect(pg_server)
    await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    await admin.close()


async def _describe(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return await describe(conn)
    finally:
        await conn.close()


async def test_the_migrations_build_the_committed_schema(db):
    expected = SCHEMA_FILE.read_text(encoding="utf-8")
    actual = await _describe(db.admin_url)
    if actual != expected:
        pytest.fail(mismatch_report(expected, actual), pytrace=False)


async def test_an_edited_function_body_is_caught(db):
    conn = await asyncpg.connect(db.admin_url)
    try:
        # Replace the trigger function as a superuser might by hand: same signature,
        # attributes and owner, one message changed.
        definition = await conn.fetchval(
            "SELECT pg_get_functiondef('events_before_insert()'::regprocedure)")
        edited = definition.replace("'unknown tenant %'", "'no such tenant %'")
        assert edited != definition
        await conn.execute(edited)
        actual = await describe(conn)
    finally:
        await conn.close()
    expected = SCHEMA_FILE.read_text(encoding="utf-8")
    assert changed_objects(expected, actual) == ["function events_before_insert()"]
    report = mismatch_report(expected, actual).splitlines()
    assert [line.split()[:4] for line in report if line[:2] in ("- ", "+ ")] == [
        ["-", "RAISE", "EXCEPTION", "'unknown"], ["+", "RAISE", "EXCEPTION", "'no"]]
    assert f"    {REGENERATE}" in report


@pytest.mark.parametrize(("edit", "changed", "line"), [
    pytest.param("DROP POLICY worker_read ON tenants", "table tenants",
                 "-    policy worker_read permissive for SELECT to PUBLIC",
                 id="dropped-policy"),
    pytest.param("GRANT DELETE ON events TO helpdesk_runtime", "table events",
                 "+    grant DELETE, INSERT, SELECT to helpdesk_runtime",
                 id="table-grant"),
    pytest.param("GRANT EXECUTE ON FUNCTION events_before_insert() TO PUBLIC",
                 "function events_before_insert()", "+    grant EXECUTE to PUBLIC",
                 id="function-grant"),
    pytest.param("ALTER FUNCTION api_key_lookup(bytea) SECURITY INVOKER",
                 "function api_key_lookup(bytea)",
                 "+    language sql, stable, security invoker,",
                 id="security-definer"),
    pytest.param("ALTER TABLE webhooks NO FORCE ROW LEVEL SECURITY", "table webhooks",
                 "+    row level security enabled, not forced",
                 id="forced-rls"),
    pytest.param("ALTER TABLE events DISABLE TRIGGER events_no_update", "table events",
                 "FOR EACH ROW EXECUTE FUNCTION events_refuse_change() (disabled)",
                 id="disabled-trigger"),
    pytest.param("ALTER TABLE tenants DROP CONSTRAINT tenants_head_fkey", "table tenants",
                 "-    constraint tenants_head_fkey FOREIGN KEY (id) REFERENCES tenant_heads",
                 id="dropped-foreign-key"),
])
async def test_a_changed_privilege_policy_or_attribute_is_caught(
    db, edit: str, changed: str, line: str
):
    conn = await asyncpg.connect(db.admin_url)
    try:
        await conn.execute(edit)
        actual = await describe(conn)
    finally:
        await conn.close()
    expected = SCHEMA_FILE.read_text(encoding="utf-8")
    assert changed_objects(expected, actual) == [changed]
    assert line in mismatch_report(expected, actual)


async def test_running_twice_is_a_no_op(empty_db: str):
    first = await migrate(empty_db, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
    assert first == [m.name for m in discover()]
    before = await _describe(empty_db)
    assert await migrate(empty_db) == []
    assert await _describe(empty_db) == before


async def test_concurrent_runs_apply_each_file_once(empty_db: str):
    results = await asyncio.gather(*(migrate(empty_db) for _ in range(4)))
    applied = [name for r in results for name in r]
    assert sorted(applied) == sorted(m.name for m in discover())
    conn = await asyncpg.connect(empty_db)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == len(discover())
    finally:
        await conn.close()


async def test_databases_of_one_server_migrate_at_once(pg_server: str):
    """Roles are the server's: four databases migrating together all alter and grant
    the same roles (the runtime login's password too), and every one comes up."""
    names = [f"hd_mig_{uuid.uuid4().hex[:10]}" for _ in range(4)]
    admin = await asyncpg.connect(pg_server)
    try:
        for name in names:
            await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            results = await asyncio.gather(*(
                migrate(with_database(pg_server, name), runtime_user=RUNTIME_USER,
                        runtime_password=RUNTIME_PASSWORD) for name in names))
            assert all(len(r) == len(discover()) for r in results)
        finally:
            for name in names:
                await admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def test_an_edited_applied_file_is_reported(empty_db: str, tmp_path: Path):
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    await migrate(empty_db, sql_dir=sql_dir)
    first = sorted(sql_dir.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- an innocent-looking edit\n")
    with pytest.raises(MigrationError, match=first.stem + r"\.sql was changed"):
        await migrate(empty_db, sql_dir=sql_dir)


async def test_a_failing_migration_applies_nothing_of_itself(empty_db: str, tmp_path: Path):
    sql_dir = tmp_path / "sql"
    shutil.copytree(SQL_DIR, sql_dir)
    (sql_dir / "9999_broken.sql").write_text(
        "CREATE TABLE half_done (id int);\nSELECT no_such_function();\n")
    with pytest.raises(MigrationError, match=r"9999_broken\.sql failed"):
        await migrate(empty_db, sql_dir=sql_dir)
    conn = await asyncpg.connect(empty_db)
    try:
        assert await conn.fetchval("SELECT to_regclass('half_done')") is None
    finally:
        await conn.close()


async def test_a_migration_gets_the_trusted_extensions_it_declares(empty_db: str,
                                                                   tmp_path: Path):
    # The owner role may not create extensions; the runner creates those a file
    # declares, as the migrating role, and only trusted ones.
    sql_dir = tmp_path / "sql"
    sql_dir.mkdir()
    (sql_dir / "0001_words.sql").write_text(
        "-- requires extension: btree_gin\n"
        "CREATE TABLE words (id int, word text);\n"
        "CREATE INDEX words_gin ON words USING gin (id, word);\n")
    await migrate(empty_db, sql_dir=sql_dir)
    (sql_dir / "0002_more.sql").write_text("-- requires extension: no_such_extension\n")
    with pytest.raises(MigrationError, match="no_such_extension"):
        await migrate(empty_db, sql_dir=sql_dir)
    conn = await asyncpg.connect(empty_db)
    try:
        assert await conn.fetchval(
            "SELECT extowner::regrole::text FROM pg_extension WHERE extname = 'btree_gin'"
        ) == await conn.fetchval("SELECT current_user")
        assert await conn.fetchval("SELECT max(version) FROM schema_migrations") == 1
    finally:
        await conn.close()


def test_file_names_are_checked(tmp_path: Path):
    (tmp_path / "1_bad.sql").write_text("")
    with pytest.raises(MigrationError, match=r"NNNN_name\.sql"):
        discover(tmp_path)
