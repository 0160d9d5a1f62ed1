"""Queries over the inline read models: ticket and message lists, agent checks.

Lists are keyset pages over ``(created_at, id)``: ``after`` is the last row of the
previous page (None for the first page), and the caller asks for ``limit + 1`` rows to
learn whether another page follows.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from domain.ticket import Ticket
from eventstore.sqlfile import load_queries
from projections.inline import state_from_json

Q = load_queries(Path(__file__).with_name("queries.sql"))

# asyncpg sends these two instants as Postgres' 'infinity' and '-infinity'.
_INFINITY = datetime.max.replace(tzinfo=UTC)
_MINUS_INFINITY = datetime.min.replace(tzinfo=UTC)
_MAX_UUID = uuid.UUID(int=(1 << 128) - 1)
_NIL_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class TicketFilters:
    """List filters; None (or an empty tuple) means "any". A tuple matches a ticket
    with any of its values (``tags``: any of the ticket's tags)."""

    states: tuple[str, ...] = ()
    priorities: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    assignee: UUID | None = None
    unassigned: bool = False
    tags: tuple[str, ...] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None


async def active_agent(conn: asyncpg.Connection, tenant_id: TenantId, agent_id: UUID) -> bool:
    """True if ``agent_id`` is an active agent of the tenant."""
    return bool(await conn.fetchval(Q["active_agent"], tenant_id, agent_id))


async def get_ticket(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                     ) -> Ticket | None:
    """One ticket from its inline row."""
    row = await conn.fetchrow(Q["ticket_state"], tenant_id, ticket_id)
    return None if row is None else state_from_json(row["state_json"])


async def list_tickets(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    filters: TicketFilters,
    after: tuple[datetime, UUID] | None,
    limit: int,
) -> list[Ticket]:
    """Tickets newest first, strictly after the keyset position ``after``."""
    at, last_id = after if after is not None else (None, _MAX_UUID)
    rows = await conn.fetch(
        Q["list_tickets"], tenant_id,
        list(filters.states) or None, list(filters.priorities) or None,
        list(filters.sources) or None, filters.assignee, filters.unassigned,
        list(filters.tags) or None,
        filters.created_after, filters.created_before,
        at if at is not None else _INFINITY, last_id, limit,
    )
    return [state_from_json(r["state_json"]) for r in rows]


async def list_messages(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    ticket_id: UUID,
    after: tuple[datetime, UUID] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """A ticket's messages oldest first, strictly after ``after``."""
    at, last_id = after if after is not None else (None, _NIL_UUID)
    rows = await conn.fetch(Q["list_messages"], tenant_id, ticket_id,
                            at if at is not None else _MINUS_INFINITY, last_id, limit)
    return [dict(r) for r in rows]


__all__ = ["TicketFilters", "active_agent", "get_ticket", "list_messages", "list_tickets"]
