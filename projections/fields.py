"""The inline read model of ticket field definitions: ``ticket_fields``, one row per
field, written in the command's own transaction from the state its stream folds to.

Ticket commands read the whole catalog from here (one indexed read), so they check
values against the definitions as they are when the command is decided.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.errors import CorruptStream
from domain.fields import FieldDefinition
from domain.ids import TenantId
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))


def definition_from_json(doc: dict[str, Any]) -> FieldDefinition:
    return FieldDefinition.model_validate(doc)


def field_document(d: FieldDefinition) -> dict[str, Any]:
    """A definition as the API shows it (``TicketFieldOut``)."""
    return {
        "key": d.key, "title": d.title, "type": d.type.value,
        "options": [{"value": o.value, "title": o.title, "active": o.active}
                    for o in d.options],
        "required_on": None if d.required_on is None else d.required_on.value,
        "active": d.active, "intake": d.intake, "customer_read_only": d.customer_read_only,
        "personal": d.personal,
        "version": d.version, "created_at": d.created_at, "updated_at": d.updated_at,
    }


async def load_catalog(conn: asyncpg.Connection, tenant_id: TenantId
                       ) -> dict[str, FieldDefinition]:
    """Every field of the tenant by key, inactive ones included."""
    rows = await conn.fetch(Q["ticket_field_catalog"], tenant_id)
    out = {}
    for row in rows:
        d = definition_from_json(row["definition"])
        out[d.key] = d
    return out


async def load_field(conn: asyncpg.Connection, tenant_id: TenantId, key: str, *,
                     for_update: bool = False) -> FieldDefinition | None:
    query = Q["ticket_field_for_update" if for_update else "ticket_field"]
    row = await conn.fetchrow(query, tenant_id, key)
    return None if row is None else definition_from_json(row["definition"])


async def count_fields(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    count: int = await conn.fetchval(Q["count_ticket_fields"], tenant_id)
    return count


async def write_field(conn: asyncpg.Connection, tenant_id: TenantId, stream_id: UUID,
                      d: FieldDefinition) -> bool:
    """Store ``d`` (version 1: a new row). False when a concurrent command got the
    row first (a new key taken, or a version already moved on)."""
    doc = d.model_dump(mode="json")
    if d.version == 1:
        status = await conn.execute(Q["insert_ticket_field"], tenant_id, d.key, stream_id,
                                    d.type.value, d.version, doc, d.created_at, d.updated_at)
        return bool(status == "INSERT 0 1")
    status = await conn.execute(Q["update_ticket_field"], tenant_id, d.key, d.version, doc,
                                d.updated_at, d.version - 1)
    if status != "UPDATE 1":
        raise CorruptStream(f"field {d.key} is not at version {d.version - 1}")
    return True


__all__ = ["count_fields", "definition_from_json", "field_document", "load_catalog",
           "load_field", "write_field"]
