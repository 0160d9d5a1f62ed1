"""The inline read model of macro streams: ``macros``, one row per macro.

Written by ``handlers.macros`` next to the events; read by the macro routes and by
applying a macro. Every read names the reading agent: another agent's personal macro
is not found, as if it did not exist.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from domain.macro import Macro
from eventstore.sqlfile import load_queries
from eventstore.types import Write

Q = load_queries(Path(__file__).with_name("macros.sql"))


def _macro(row: asyncpg.Record) -> Macro:
    return Macro.model_validate(dict(row))


async def load_macro(conn: asyncpg.Connection, tenant_id: TenantId, macro_id: UUID,
                     reader: UUID | None) -> Macro | None:
    row = await conn.fetchrow(Q["get_macro"], tenant_id, macro_id, reader)
    return None if row is None else _macro(row)


async def macro_for_update(conn: asyncpg.Connection, tenant_id: TenantId, macro_id: UUID
                           ) -> Macro | None:
    """The macro whoever owns it, its row locked until commit (a change's state)."""
    row = await conn.fetchrow(Q["macro_for_update"], tenant_id, macro_id)
    return None if row is None else _macro(row)


async def update_macro(write: Write, tenant_id: TenantId, macro: Macro) -> None:
    dumped = macro.model_dump(mode="json")
    await write(Q["update_macro"], tenant_id, macro.id, macro.name, macro.text,
                macro.visibility.value, dumped["actions"], macro.version, macro.updated_at)


async def delete_macro(write: Write, tenant_id: TenantId, macro_id: UUID) -> None:
    await write(Q["delete_macro"], tenant_id, macro_id)


async def insert_macro(write: Write, tenant_id: TenantId, macro: Macro) -> None:
    dumped = macro.model_dump(mode="json")
    await write(Q["insert_macro"], tenant_id, macro.id, macro.owner_id, macro.name, macro.text,
                macro.visibility.value, dumped["actions"], macro.version, macro.created_at,
                macro.updated_at)


async def list_macros(conn: asyncpg.Connection, tenant_id: TenantId, reader: UUID | None,
                      after: tuple[datetime, UUID] | None, limit: int) -> list[Macro]:
    """The shared macros and the reader's own, in ``(created_at, id)`` order."""
    at, last = after if after is not None else (None, None)
    return [_macro(r) for r in await conn.fetch(Q["list_macros"], tenant_id, reader, at, last,
                                                limit)]


__all__ = ["delete_macro", "insert_macro", "list_macros", "load_macro", "macro_for_update",
           "update_macro"]
