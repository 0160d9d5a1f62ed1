"""The whole desk as of any moment: reads over ``ticket_versions`` (migration 0611).

A command's inline projection keeps every version of a ticket it makes
(projections/inline.py), and the trigger on ``events`` stamps the seqs each is valid
between, so the tickets as they stood at seq N are the versions with
``valid_from_seq <= N < valid_to_seq``: an index walk in the list's order, the same
documents the API sent then, never a replay. The list takes the current list's
filters (projections/reads.py ``TICKET_FILTERS``) on the columns each version kept;
an organization is the contact's as it was when the version was made.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from projections.reads import (
    INFINITY,
    MAX_UUID,
    TicketFilters,
    TicketView,
    filter_conditions,
    ticket_view_of,
)
from projections.views import TICKET_KEYS

Q = load_queries(Path(__file__).with_name("ticket_versions.sql"))


class SeqAhead(Exception):
    """The seq asked for is beyond the tenant's head."""

    def __init__(self, seq: int, head: int) -> None:
        super().__init__(f"seq {seq} is ahead of the tenant's head ({head})")
        self.seq = seq
        self.head = head


async def seq_at(conn: asyncpg.Connection, tenant_id: TenantId, at: datetime) -> int:
    """The last seq recorded at or before ``at`` (0 before the first event)."""
    return int(await conn.fetchval(Q["seq_at"], tenant_id, at))


async def instant_of(conn: asyncpg.Connection, tenant_id: TenantId, seq: int
                     ) -> datetime | None:
    """When the event at ``seq`` was recorded (None for seq 0); ``SeqAhead`` beyond
    the head."""
    row = await conn.fetchrow(Q["seq_instant"], tenant_id, seq)
    if seq > row["head"]:
        raise SeqAhead(seq, row["head"])
    at: datetime | None = row["at"]
    return at


async def list_as_of(conn: asyncpg.Connection, tenant_id: TenantId, seq: int,
                     filters: TicketFilters, after: tuple[datetime, UUID] | None,
                     limit: int) -> list[TicketView]:
    """Tickets as they stood at ``seq``, newest first, strictly after the keyset
    position ``after``, under ``filters`` (all but ``q``, which searches the current
    text)."""
    conditions, values = filter_conditions(filters, first=6)
    query = Q["list_as_of"].replace("{filters}", "\n   ".join(conditions))
    at, last_id = after if after is not None else (INFINITY, MAX_UUID)
    rows = await conn.fetch(query, tenant_id, at, last_id, limit, seq, *values)
    return [ticket_view_of(r) for r in rows]


async def backlog_as_of(conn: asyncpg.Connection, tenant_id: TenantId, seq: int,
                        at: datetime) -> list[dict[str, Any]]:
    """Open work at ``seq`` by state, priority and age at ``at``, as analytics'
    backlog counts it now."""
    return [dict(r) for r in await conn.fetch(Q["backlog_as_of"], tenant_id, seq, at)]


async def fill_version_views(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Give each kept version whose document lacks a key of the document now its
    ticket's (the same version, rendered anew by ``fill_views``); returns how many."""
    status = await conn.execute(Q["versions_as_their_tickets"], tenant_id, list(TICKET_KEYS))
    return int(status.split()[-1])


async def redact_versions(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID,
                          *, subject: bool, requester: bool, fields: Collection[str],
                          nameless: Collection[str],
                          by_version: Mapping[int, tuple[bool, Collection[str]]] | None = None,
                          erased: Collection[UUID] = ()) -> None:
    """Blank in every kept version of the ticket what an erasure blanks in its row: the
    subject, the requester's e-mail and name, personal field values, file names, and
    the CCs naming an ``erased`` contact.

    ``by_version`` says, per version, whether its requester then was an erased contact
    and which fields then held an erased contact's values (a ticket moved away by a
    merge, a value since changed or cleared); a version it does not name takes the
    row's ``requester`` and ``fields``, and a requester naming an ``erased`` contact is
    blanked in any version. The ``fields`` column is redacted on its own, so a key it
    holds that the document does not show is blanked too."""
    parts = by_version or {}
    erased_ids = {str(c) for c in erased}
    for row in await conn.fetch(Q["versions_to_redact"], tenant_id, ticket_id):
        doc = orjson.loads(row["view"])
        gone_requester, gone_fields = parts.get(row["version"], (requester, fields))
        gone = set(fields) | set(gone_fields)
        if subject:
            doc["subject"] = ""
        named = doc.get("requester") or {}
        if gone_requester or (named.get("contact_id") is not None
                              and str(named["contact_id"]) in erased_ids):
            doc["requester"] = named | {"email": "", "name": None}
        if doc.get("ccs"):  # an erased contact copied on it is copied no more
            kept = [c for c in doc["ccs"] if str(c.get("contact_id")) not in erased_ids]
            if kept:
                doc["ccs"] = kept
            else:
                del doc["ccs"]
        doc["fields"] = {k: "" if k in gone else v
                         for k, v in (doc.get("fields") or {}).items()}
        doc["attachments"] = [a | {"name": ""} if str(a.get("id")) in nameless else a
                              for a in doc.get("attachments") or []]
        column = _json_value(row["fields"])
        if isinstance(column, dict):
            column = {k: "" if k in gone else v for k, v in column.items()}
        await conn.execute(Q["redact_version"], tenant_id, ticket_id, row["version"],
                           orjson.dumps(doc).decode(), column)


def _json_value(value: Any) -> Any:
    """A jsonb column's value as read (text when the connection has no codec for it)."""
    return orjson.loads(value) if isinstance(value, str | bytes) else value


__all__ = ["SeqAhead", "backlog_as_of", "fill_version_views", "instant_of", "list_as_of",
           "redact_versions", "seq_at"]
