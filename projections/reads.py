"""Queries over the inline read models: ticket and message lists, agent checks.

Lists are keyset pages over ``(created_at, id)`` (the ticket list also over
``(sla_due, id)``): ``after`` is the last row of the
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
from eventstore.sqlfile import load_queries
from projections.inline import state_from_json
from projections.search import ticket_filter
from projections.views import ticket_json

Q = load_queries(Path(__file__).with_name("queries.sql"))

# asyncpg sends these two instants as Postgres' 'infinity' and '-infinity'.
INFINITY = datetime.max.replace(tzinfo=UTC)
_MINUS_INFINITY = datetime.min.replace(tzinfo=UTC)
MAX_UUID = uuid.UUID(int=(1 << 128) - 1)
_NIL_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class FieldFilter:
    """A condition on a ticket field's value: ``op`` is a ``FIELD_FILTERS`` kind;
    ``value`` its parameter (a tuple for the any-of kinds)."""

    key: str
    op: str
    value: Any


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
    group_id: UUID | None = None
    no_group: bool = False
    fields: tuple[FieldFilter, ...] = ()
    """Ticket field conditions, all of which must hold (``FIELD_FILTERS``)."""
    requester_id: UUID | None = None
    no_requester: bool = False
    organization_id: UUID | None = None
    no_organization: bool = False
    updated_after: datetime | None = None
    q: str | None = None
    member: UUID | None = None
    """Tickets in any group this agent is a member of (``group_id=mine``)."""


async def active_agent(conn: asyncpg.Connection, tenant_id: TenantId, agent_id: UUID) -> bool:
    """True if ``agent_id`` is an active agent of the tenant."""
    return bool(await conn.fetchval(Q["active_agent"], tenant_id, agent_id))


async def whoami(conn: asyncpg.Connection, tenant_id: TenantId, key_id: UUID,
                 agent_id: UUID | None) -> asyncpg.Record | None:
    """The names of a caller's tenant, key and agent (``tenant_name``, ``key_name``,
    ``agent_name``, ``agent_email``); None when the tenant is not visible."""
    row: asyncpg.Record | None = await conn.fetchrow(Q["whoami"], tenant_id, key_id, agent_id)
    return row


@dataclass(frozen=True, slots=True)
class TicketView:
    """A ticket's API document as stored (``view``: JSON bytes, sent as they are),
    with what a list or a get needs beside it."""

    id: UUID
    version: int
    sort_key: datetime
    """The row's key in the order it was read in: ``created_at``, or the SLA due time
    of ``sort=sla_due`` (with ``id``, its keyset position)."""
    view: bytes


def ticket_view_of(row: asyncpg.Record) -> TicketView:
    if row["view"] is not None:
        document = row["view"].encode()
    else:
        # A row from before documents were stored; `helpdesk migrate` fills these in.
        document = ticket_json(state_from_json(row["state_json"]))
    key = row["sort_key"]
    # asyncpg reads 'infinity' (no running SLA clock) as a naive datetime.max.
    return TicketView(row["id"], row["version"],
                      key if key.tzinfo is not None else key.replace(tzinfo=UTC), document)


async def get_ticket(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                     ) -> TicketView | None:
    """One ticket's stored document."""
    row = await conn.fetchrow(Q["ticket_view"], tenant_id, ticket_id)
    return None if row is None else ticket_view_of(row)


# One condition per filter of the ticket list; ``{n}`` is its parameter's number.
TICKET_FILTERS: dict[str, str] = {
    "states": "AND state = ANY (${n}::text[])",
    "priorities": "AND priority = ANY (${n}::text[])",
    "sources": "AND source = ANY (${n}::text[])",
    "assignee": "AND assignee = ${n}::uuid",
    "unassigned": "AND assignee IS NULL AND ${n}::boolean",
    "tags": "AND tags && ${n}::text[]",
    "created_after": "AND created_at >= ${n}::timestamptz",
    "created_before": "AND created_at < ${n}::timestamptz",
    "group_id": "AND group_id = ${n}::uuid",
    "no_group": "AND group_id IS NULL AND ${n}::boolean",
    "requester_id": "AND contact_id = ${n}::uuid",
    "no_requester": "AND contact_id IS NULL AND ${n}::boolean",
    "organization_id": "AND organization_id = ${n}::uuid",
    "no_organization": "AND organization_id IS NULL AND ${n}::boolean",
    "updated_after": "AND updated_at >= ${n}::timestamptz",
    "member": ("AND group_id IN (SELECT g.id FROM groups g"
               " WHERE g.tenant_id = $1 AND ${n}::uuid = ANY (g.members))"),
    # The list is for agents and admins, who search internal notes too.
    "q": ticket_filter(staff=True),
}


# One condition per kind of ticket field filter; ``{k}`` is the parameter of the field's
# key, ``{n}`` of its value. Values were checked against the field's type, and a key
# is never reused for another type, so the casts never meet a value of another kind.
# Dates are YYYY-MM-DD, whose text order is their order.
FIELD_FILTERS: dict[str, str] = {
    "any": "AND fields ->> ${k}::text = ANY (${n}::text[])",  # checkbox, dropdown
    "any_of_list": "AND fields -> ${k}::text ?| ${n}::text[]",  # multiselect
    "number_gte": "AND (fields ->> ${k}::text)::numeric >= ${n}::numeric",
    "number_lte": "AND (fields ->> ${k}::text)::numeric <= ${n}::numeric",
    "date_gte": "AND fields ->> ${k}::text >= ${n}::text",
    "date_lte": "AND fields ->> ${k}::text <= ${n}::text",
}


TICKET_ORDERS = ("created", "sla_due")
"""The orders of the ticket list: newest first, or the next SLA deadline soonest first."""


def ticket_list_query(filters: TicketFilters, order: str = "created"
                      ) -> tuple[str, list[Any]]:
    """The list statement for the filters in use and the order, and the filters'
    parameters (from $5)."""
    conditions, values = filter_conditions(filters, first=5)
    statement = Q["list_tickets" if order == "created" else "list_tickets_by_sla_due"]
    return statement.replace("{filters}", "\n   ".join(conditions)), values


def filter_conditions(filters: TicketFilters, *, first: int) -> tuple[list[str], list[Any]]:
    """The conditions of the filters in use and their parameters, numbered from
    ``$first``: for any statement over rows with the ticket list's columns."""
    conditions: list[str] = []
    values: list[Any] = []
    for name, condition in TICKET_FILTERS.items():
        value = getattr(filters, name)
        if value is None or value == () or value is False:
            continue
        values.append(list(value) if isinstance(value, tuple) else value)
        conditions.append(condition.format(n=first - 1 + len(values)))
    for f in filters.fields:
        values += [f.key, list(f.value) if isinstance(f.value, tuple) else f.value]
        conditions.append(FIELD_FILTERS[f.op].format(k=first - 2 + len(values),
                                                     n=first - 1 + len(values)))
    return conditions, values


async def list_tickets(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    filters: TicketFilters,
    after: tuple[datetime, UUID] | None,
    limit: int,
    order: str = "created",
) -> list[TicketView]:
    """Tickets in ``order`` (``TICKET_ORDERS``), strictly after the keyset position
    ``after`` (a ``sort_key`` and an id)."""
    query, values = ticket_list_query(filters, order)
    if order == "created":
        at, last_id = after if after is not None else (INFINITY, MAX_UUID)
    else:
        at, last_id = after if after is not None else (_MINUS_INFINITY, _NIL_UUID)
    rows = await conn.fetch(query, tenant_id, at, last_id, limit, *values)
    return [ticket_view_of(r) for r in rows]


async def ticket_thread(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                        ) -> list[UUID] | None:
    """The tickets whose messages a ticket's thread lists: itself, then those merged
    into it; None when there is no such ticket."""
    ids = await conn.fetchval(Q["ticket_thread"], tenant_id, ticket_id)
    return None if ids is None else list(ids)


async def list_messages(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    ticket_id: UUID | list[UUID],
    after: tuple[datetime, UUID] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """A ticket's messages oldest first, strictly after ``after``; given a thread
    (``ticket_thread``), the messages of every ticket in it."""
    at, last_id = after if after is not None else (None, _NIL_UUID)
    if isinstance(ticket_id, list) and len(ticket_id) == 1:
        ticket_id = ticket_id[0]  # its own index order: no merge to interleave
    query = Q["list_thread_messages" if isinstance(ticket_id, list) else "list_messages"]
    rows = await conn.fetch(query, tenant_id, ticket_id,
                            at if at is not None else _MINUS_INFINITY, last_id, limit)
    return [dict(r) for r in rows]


__all__ = [
    "FIELD_FILTERS",
    "INFINITY",
    "MAX_UUID",
    "TICKET_FILTERS",
    "TICKET_ORDERS",
    "FieldFilter",
    "TicketFilters",
    "TicketView",
    "active_agent",
    "filter_conditions",
    "get_ticket",
    "list_messages",
    "list_tickets",
    "ticket_list_query",
    "ticket_thread",
    "ticket_view_of",
    "whoami",
]
