"""Redaction of an erased contact's personal data from the inline read models.

The events keep their sealed fields (unreadable once the key is gone); the read
models held the same data in the clear for reads, so erasure overwrites it there:
the contact's tickets keep their state, with an empty subject, a requester that
names the contact id only and empty values of the fields declared personal, and their
messages keep everything but their bodies. An
empty text is also what a replay of an erased field gives (domain/mapper.py), so a
rebuild agrees with a redacted row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.fields import personal_keys
from domain.ids import ContactId, TenantId
from domain.values import Requester
from eventstore.sqlfile import load_queries
from projections.fields import load_catalog
from projections.inline import state_from_json, state_to_json
from projections.views import message_document, ticket_json

Q = load_queries(Path(__file__).with_name("people.sql"))


async def lock_contact_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                               contact_id: UUID) -> list[UUID]:
    """The ids of the contact's tickets, their rows locked until commit."""
    rows = await conn.fetch(Q["lock_contact_tickets"], tenant_id, contact_id)
    return [r["id"] for r in rows]


async def redact_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                         contact_id: UUID) -> list[UUID]:
    """Blank the subject, requester, personal field values and message bodies of the
    contact's tickets; the ids of the tickets redacted."""
    rows = await conn.fetch(Q["lock_contact_tickets"], tenant_id, contact_id)
    requester = Requester(email="", name=None, contact_id=ContactId(contact_id))
    personal = personal_keys(await load_catalog(conn, tenant_id)) if rows else frozenset()
    for row in rows:
        state = state_from_json(row["state_json"])
        fields = {k: "" if k in personal else v for k, v in state.fields.items()}
        ticket = state.model_copy(update={"subject": "", "requester": requester,
                                          "fields": fields})
        stored = state_to_json(ticket)
        await conn.execute(Q["redact_ticket"], tenant_id, row["id"], "",
                           requester.model_dump(mode="json"), stored,
                           ticket_json(ticket).decode(), stored["fields"])
    ids = [r["id"] for r in rows]
    await conn.execute(Q["redact_messages"], tenant_id, ids)
    return ids


async def contact_tickets(conn: asyncpg.Connection, tenant_id: TenantId, contact_id: UUID
                          ) -> tuple[list[UUID], list[bytes], list[dict[str, Any]]]:
    """The contact's ticket ids, their stored documents, and their messages (for an
    export of everything held about the contact)."""
    rows = await conn.fetch(Q["contact_ticket_views"], tenant_id, contact_id)
    ids = [r["id"] for r in rows]
    views = [(r["view"] or "null").encode() for r in rows]
    messages = [message_document(m) for m in
                await conn.fetch(Q["contact_messages"], tenant_id, ids)]
    return ids, views, messages


__all__ = ["contact_tickets", "lock_contact_tickets", "redact_tickets"]
