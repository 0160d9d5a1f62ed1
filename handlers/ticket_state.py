"""The write side's store of ticket state: what a ticket command locks, loads and
decides on.

A ticket's folded state lives in its ``tickets`` row (``state_json``), written by the
inline projection in the command's own transaction (projections/inline.py), so the
next command decides on it without folding the stream. This module is the command's
way in to that state: it locks the row and reads it, in one round trip, with what the
decision needs beside it (the tenant's settings, the field definitions, the requester's
data key, the requester lock of a new ticket), from SQL of its own
(handlers/ticket_state.sql). Nothing here is a read model: lists and gets read
``tickets.view`` through projections/reads.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.business_hours import Calendar
from domain.fields import NO_FIELDS, FieldCatalog
from domain.ids import TenantId
from domain.target_policy import TargetPolicy
from domain.ticket import Ticket
from eventstore.sqlfile import load_queries
from projections.fields import definition_from_json
from projections.tenant_settings import DEFAULT_SETTINGS, TenantSettings, read_document

Q = load_queries(Path(__file__).with_name("ticket_state.sql"))


@dataclass(frozen=True, slots=True)
class CommandState:
    """What a ticket command decides on (``load_for_command``)."""

    ticket: Ticket | None
    settings: TenantSettings
    catalog: FieldCatalog
    key: tuple[UUID, bytes | None, str | None] | None
    """The ticket's requester contact, its wrapped data key (None: erased) and the
    fingerprint of the key-encryption key that wraps it, held FOR SHARE until commit;
    None when the ticket has no contact or the contact no key yet."""
    policies: list[TargetPolicy] = field(default_factory=list)
    """The tenant's SLA policies, in no order (none: its settings' targets serve)."""
    calendars: dict[UUID, tuple[int, Calendar]] = field(default_factory=dict)
    """The calendars of those policies as they are now: ``{id: (version, hours)}``."""


async def load_ticket(
    conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID, *, for_update: bool = False
) -> Ticket | None:
    """The ticket's state; ``for_update`` locks its row until commit."""
    query = Q["ticket_state_for_update" if for_update else "ticket_state"]
    row = await conn.fetchrow(query, tenant_id, ticket_id)
    return None if row is None else Ticket.model_validate(row["state_json"])


async def load_for_command(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID, *,
                           with_catalog: bool, requester_email: str | None = None
                           ) -> CommandState:
    """The ticket (its row locked until commit) with its requester's data key (held),
    the tenant's settings and, when ``with_catalog``, its field definitions, in one
    round trip; with ``requester_email``, that e-mail's requester lock is taken too
    (``people.lock_requester``)."""
    row = await conn.fetchrow(Q["command_state"], tenant_id, ticket_id, with_catalog,
                              requester_email)
    assert row is not None
    doc = DEFAULT_SETTINGS if row["settings"] is None else read_document(row["settings"])
    catalog: FieldCatalog = NO_FIELDS
    if with_catalog:
        catalog = {d.key: d for d in map(definition_from_json, row["catalog"])}
    ticket = None if row["state_json"] is None else Ticket.model_validate(row["state_json"])
    key = None
    if row["has_key"]:
        wrapped = row["wrapped"]
        key = (row["contact_id"], None if wrapped is None else bytes(wrapped), row["kek"])
    policies = [TargetPolicy.model_validate(p) for p in row["policies"] or ()]
    calendars = {UUID(c["id"]): (c["version"], Calendar.model_validate(c["hours"]))
                 for c in row["calendars"] or ()}
    return CommandState(ticket, doc.settings(), catalog, key, policies, calendars)


MERGES_MAX = 100
"""The longest chain of merges ``merged_target`` follows."""


async def merged_target(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                        ) -> UUID:
    """The ticket that now holds ``ticket_id``'s thread: itself unless it was merged,
    else the ticket it was merged into (followed on, if that was merged too)."""
    for _ in range(MERGES_MAX):
        ticket = await load_ticket(conn, tenant_id, ticket_id)
        if ticket is None or ticket.merged_into is None:
            return ticket_id
        ticket_id = ticket.merged_into
    return ticket_id


async def thread_message_ids(conn: asyncpg.Connection, tenant_id: TenantId,
                             ticket_ids: list[UUID]) -> list[UUID]:
    """The ids of the messages of a thread (a ticket and those merged into it), oldest
    first."""
    return [r["id"] for r in await conn.fetch(Q["thread_message_ids"], tenant_id, ticket_ids)]


async def lock_duplicate_links(conn: asyncpg.Connection, tenant_id: TenantId) -> None:
    """Take the tenant's duplicate-link lock until commit."""
    await conn.execute(Q["lock_duplicate_links"], tenant_id)


__all__ = ["MERGES_MAX", "CommandState", "load_for_command", "load_ticket",
           "lock_duplicate_links", "merged_target",
           "open_ticket_ids", "thread_message_ids"]


async def open_ticket_ids(conn: asyncpg.Connection, tenant_id: TenantId) -> list[UUID]:
    """Every ticket of the tenant that is not closed, oldest first."""
    return [r["id"] for r in await conn.fetch(Q["open_ticket_ids"], tenant_id)]
