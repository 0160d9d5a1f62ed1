"""The inline read model of macro streams: ``macros``, one row per macro.

Written by ``handlers.macros`` next to the events; read by the macro routes and by
applying a macro. Every read names the reading agent: another agent's personal macro
is not found, as if it did not exist.
"""

from __future__ import annotations

from pathlib import Path

from domain.ids import TenantId
from domain.macro import Macro
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.owned import OwnedRows

Q = load_queries(Path(__file__).with_name("macros.sql"))

MACROS = OwnedRows(Q, "macro", Macro)
list_macros = MACROS.page


async def update_macro(write: Write, tenant_id: TenantId, macro: Macro) -> None:
    dumped = macro.model_dump(mode="json")
    await write(Q["update_macro"], tenant_id, macro.id, macro.name, macro.text,
                macro.visibility.value, dumped["actions"], macro.version, macro.updated_at)


async def insert_macro(write: Write, tenant_id: TenantId, macro: Macro) -> None:
    dumped = macro.model_dump(mode="json")
    await write(Q["insert_macro"], tenant_id, macro.id, macro.owner_id, macro.name, macro.text,
                macro.visibility.value, dumped["actions"], macro.version, macro.created_at,
                macro.updated_at)


__all__ = ["MACROS", "insert_macro", "list_macros", "update_macro"]
