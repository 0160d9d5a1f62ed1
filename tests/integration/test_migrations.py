"""The migration runner: idempotent, safe to run concurrently, strict about edits."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import asyncpg
import pytest

from migrations.runner import SQL_DIR, MigrationError, discover, migrate
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, with_database


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


async def _schema(url: str) -> list[tuple]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT table_name, column_name, data_type, is_nullable, column_default "
            "FROM information_schema.columns WHERE table_schema = 'public' "
            "ORDER BY table_name, ordinal_position")
        policies = await conn.fetch(
            "SELECT tablename, policyname, qual, with_check FROM pg_policies ORDER BY 1, 2")
        return [tuple(r) for r in rows] + [tuple(p) for p in policies]
    finally:
        await conn.close()


async def test_running_twice_is_a_no_op(empty_db: str):
    first = await migrate(empty_db, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
    assert first == [m.name for m in discover()]
    before = await _schema(empty_db)
    assert await migrate(empty_db) == []
    assert await _schema(empty_db) == before


async def test_fresh_database_equals_the_template(empty_db: str, db):
    await migrate(empty_db)
    assert await _schema(empty_db) == await _schema(db.admin_url)


async def test_concurrent_runs_apply_each_file_once(empty_db: str):
    results = await asyncio.gather(*(migrate(empty_db) for _ in range(4)))
    applied = [name for r in results for name in r]
    assert sorted(applied) == sorted(m.name for m in discover())
    conn = await asyncpg.connect(empty_db)
    try:
        assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == len(discover())
    finally:
        await conn.close()


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


def test_file_names_are_checked(tmp_path: Path):
    (tmp_path / "1_bad.sql").write_text("")
    with pytest.raises(MigrationError, match=r"NNNN_name\.sql"):
        discover(tmp_path)
