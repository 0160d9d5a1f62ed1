"""Ticket fields in the database, as the runtime role: each tenant sees and writes only
its own definitions, values and field analytics; a definition and its stream commit
together; a lost race to define one key is a conflict, not a second field."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg
import pytest

from domain.errors import AlreadyExists
from domain.field_definitions import DefineField, UpdateField, field_stream_id
from domain.fields import FieldType
from eventstore.errors import ConcurrencyError
from eventstore.types import StoreActor
from handlers.ticket_fields import define_field, list_fields, update_field

ACTOR = StoreActor("operator", "test")
AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
NOTE = DefineField(key="note", title="Note", type=FieldType.TEXT, at=AT)


async def test_each_tenant_sees_only_its_own_fields(pool, store, make_tenant):
    one, two = (await make_tenant("One")).tenant_id, (await make_tenant("Two")).tenant_id
    async with store.unit_of_work(one, ACTOR) as s:
        await define_field(s, NOTE)
    async with store.unit_of_work(two, ACTOR) as s:
        assert await list_fields(s) == []
        for table in ("ticket_fields", "analytics_field_daily"):
            assert await s.conn.fetchval(f"SELECT count(*) FROM {table}") == 0
    async with pool.acquire() as conn:
        # No tenant armed: no rows, and no writes.
        assert await conn.fetchval("SELECT count(*) FROM ticket_fields") == 0
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute(
                "INSERT INTO ticket_fields VALUES ($1, 'x', $1, 'text', 1, '{}', now(), now())",
                one)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        async with store.unit_of_work(two, ACTOR) as s:
            await s.conn.execute(
                "INSERT INTO analytics_field_daily (tenant_id, field_key, day, value) "
                "VALUES ($1, 'note', '2026-06-01', 'x')", one)
    async with store.unit_of_work(one, ACTOR) as s:
        [field] = await list_fields(s)
        assert field.key == "note"
        assert [e.type for e in await s.read_stream(field_stream_id(one, "note"))] == [
            "TicketFieldDefined"]


async def test_a_key_is_defined_once_even_in_a_race(store, make_tenant):
    t = (await make_tenant()).tenant_id

    async def attempt() -> str:
        try:
            async with store.unit_of_work(t, ACTOR) as s:
                await define_field(s, NOTE)
            return "defined"
        except (ConcurrencyError, AlreadyExists):
            return "refused"

    results = sorted(await asyncio.gather(attempt(), attempt(), attempt()))
    assert results == ["defined", "refused", "refused"]
    async with store.unit_of_work(t, ACTOR) as s:
        assert len(await s.read_stream(field_stream_id(t, "note"))) == 1
        with pytest.raises(AlreadyExists):
            await define_field(s, NOTE)


async def test_an_update_moves_the_row_and_the_stream_together(store, make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, ACTOR) as s:
        await define_field(s, NOTE)
    async with store.unit_of_work(t, ACTOR) as s:
        after = await update_field(s, "note", UpdateField(changes={"title": "Notes"}, at=AT),
                                   expected_version=1)
    assert (after.version, after.title) == (2, "Notes")
    with pytest.raises(ConcurrencyError):
        async with store.unit_of_work(t, ACTOR) as s:
            await update_field(s, "note", UpdateField(changes={"title": "x"}, at=AT),
                               expected_version=1)
    async with store.unit_of_work(t, ACTOR) as s:
        assert [e.version for e in await s.read_stream(field_stream_id(t, "note"))] == [1, 2]
        [field] = await list_fields(s)
        assert (field.title, field.version) == ("Notes", 2)
