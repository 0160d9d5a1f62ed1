"""Row-level security on the contact and organization read models, as the runtime
role: a tenant reads and writes only its own rows, and no tenant context means none."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import asyncpg
import pytest

from domain.contact import ContactFields
from handlers import contacts, organizations
from tests.support.desk import ACTOR

TABLES = ("contacts", "organizations", "organization_domains")


async def test_each_new_table_shows_a_tenant_only_its_own_rows(store, make_tenant, db):
    a = (await make_tenant()).tenant_id
    b = (await make_tenant()).tenant_id
    at = datetime(2026, 6, 1, 9, tzinfo=UTC)
    async with store.unit_of_work(a, ACTOR) as s:
        org = await organizations.create_organization(s, organizations.NewOrganization(
            name="Acme", domains=("acme.test",), at=at))
        ann = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="ann@acme.test"), at=at))
    assert ann.organization_id == org.organization.id

    conn = await asyncpg.connect(db.runtime_url)
    try:
        assert not await conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                       "WHERE rolname = current_user")
        for table in TABLES:
            # No tenant armed: nothing at all.
            assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(b))
            for table in TABLES:
                assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 0, table
            assert await conn.execute("UPDATE contacts SET name = 'x'") == "UPDATE 0"
            assert await conn.execute("UPDATE organizations SET name = 'x'") == "UPDATE 0"
            assert await conn.execute("DELETE FROM organization_domains") == "DELETE 0"
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(a))
            for table in TABLES:
                assert await conn.fetchval(f"SELECT count(*) FROM {table}") == 1, table
        for table, row in (
            ("contacts", "(tenant_id, id, version, email, created_at, updated_at) "
                         "VALUES ($1, gen_random_uuid(), 1, 'x@y.test', now(), now())"),
            ("organizations", "(tenant_id, id, version, name, created_at, updated_at) "
                              "VALUES ($1, gen_random_uuid(), 1, 'X', now(), now())"),
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                async with conn.transaction():
                    await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(b))
                    await conn.execute(f"INSERT INTO {table} {row}", a)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("DELETE FROM contacts")  # never granted
    finally:
        await conn.close()
    assert uuid.UUID(str(ann.id))
