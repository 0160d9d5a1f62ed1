"""serve and worker refuse roles for which row-level security would not apply."""

from __future__ import annotations

import asyncpg
import pytest

from api.root import UnsafeRole, check_runtime_role


async def test_runtime_role_is_accepted(db):
    conn = await asyncpg.connect(db.runtime_url)
    try:
        await check_runtime_role(conn)
    finally:
        await conn.close()


async def test_superuser_is_refused(db):
    conn = await asyncpg.connect(db.admin_url)
    try:
        with pytest.raises(UnsafeRole, match="superuser"):
            await check_runtime_role(conn)
    finally:
        await conn.close()


async def test_owner_and_bypassrls_roles_are_refused(db):
    admin = await asyncpg.connect(db.admin_url)
    name = "hd_unsafe_" + db.name[-8:]
    try:
        await admin.execute(f"CREATE ROLE {name} LOGIN BYPASSRLS IN ROLE helpdesk_owner")
        conn = await asyncpg.connect(db.admin_url, user=name)
        try:
            with pytest.raises(UnsafeRole) as info:
                await check_runtime_role(conn)
            assert "BYPASSRLS" in str(info.value) and "owns the tables" in str(info.value)
        finally:
            await conn.close()
    finally:
        await admin.execute(f"DROP ROLE IF EXISTS {name}")
        await admin.close()


async def test_unmigrated_database_is_refused(pg_server):
    conn = await asyncpg.connect(pg_server)
    try:
        with pytest.raises(UnsafeRole, match="not migrated"):
            await check_runtime_role(conn)
    finally:
        await conn.close()
