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

The tenant's SLA policies are parsed into the matcher a command decides with
(``TenantSla``) once per revision of them (migration 0680) and kept in the unit of
work's memo (eventstore/memo.py): the read gives the tenant's revision and, only when
the process holds none or another, the policies and their calendars, from the same
snapshot. Every write of a policy or a calendar takes a revision never given before,
so a kept matcher serves exactly the commands that read the revision it was parsed
at, in whichever process the change was made; the number of policies costs a command
nothing until they change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.business_hours import Calendar
from domain.fields import NO_FIELDS, FieldCatalog
from domain.ids import TenantId
from domain.sla import PolicyMatcher
from domain.target_policy import TargetPolicy, policy_matcher
from domain.ticket import Ticket
from domain.ticket.commands import ThreadMessage
from eventstore.memo import MemoKind, TenantMemo
from eventstore.sqlfile import load_queries
from projections.fields import definition_from_json
from projections.tenant_settings import DEFAULT_SETTINGS, TenantSettings, read_document

Q = load_queries(Path(__file__).with_name("ticket_state.sql"))


@dataclass(frozen=True, slots=True)
class TenantSla:
    """A tenant's SLA policies as ticket commands decide with them, parsed once."""

    matcher: PolicyMatcher | None
    """The policies in the order they are tried, each on its calendar as it is now,
    with no organization (``handlers.sla_policies.sla_policy_for`` adds the ticket's);
    None: the tenant has no policies, its settings' targets serve."""
    asks_organization: bool
    """Whether a policy has a condition on the requester's organization."""


NO_SLA = TenantSla(None, False)
SLA_POLICIES: MemoKind[TenantSla] = MemoKind("sla_policies")


def tenant_sla(policies: list[TargetPolicy],
               calendars: dict[UUID, tuple[int, Calendar]]) -> TenantSla:
    """The matcher of ``policies`` (in no order) on ``calendars`` (``{id: (version,
    hours)}``, as they are now)."""
    if not policies:
        return NO_SLA
    return TenantSla(policy_matcher(policies, calendars),
                     any(c.field == "organization_id" for p in policies for c in p.conditions))


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
    sla: TenantSla = NO_SLA
    """The tenant's SLA policies, at the revision read with the ticket."""


async def load_ticket(
    conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID, *, for_update: bool = False
) -> Ticket | None:
    """The ticket's state; ``for_update`` locks its row until commit."""
    query = Q["ticket_state_for_update" if for_update else "ticket_state"]
    row = await conn.fetchrow(query, tenant_id, ticket_id)
    return None if row is None else Ticket.model_validate(row["state_json"])


async def load_for_command(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID, *,
                           with_catalog: bool, requester_email: str | None = None,
                           memo: TenantMemo | None = None) -> CommandState:
    """The ticket (its row locked until commit) with its requester's data key (held),
    the tenant's settings and SLA policies and, when ``with_catalog``, its field
    definitions, in one round trip; with ``requester_email``, that e-mail's requester
    lock is taken too (``people.lock_requester``). The policies come from ``memo``
    when it holds them at the tenant's revision, and are kept there when parsed."""
    kept = None if memo is None else memo.get(SLA_POLICIES, tenant_id)
    row = await conn.fetchrow(Q["command_state"], tenant_id, ticket_id, with_catalog,
                              requester_email, None if kept is None else kept[0])
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
    revision: int = row["policy_revision"]
    if kept is not None and kept[0] == revision:
        sla = kept[1]
    else:
        sla = tenant_sla(
            [TargetPolicy.model_validate(p) for p in row["policies"] or ()],
            {UUID(c["id"]): (c["version"], Calendar.model_validate(c["hours"]))
             for c in row["calendars"] or ()})
        if memo is not None:
            memo.put(SLA_POLICIES, tenant_id, revision, sla)
    return CommandState(ticket, doc.settings(), catalog, key, sla)


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


async def own_messages(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                       ) -> tuple[ThreadMessage, ...]:
    """The messages on the ticket's own thread, oldest first (what a split may move)."""
    return tuple(ThreadMessage(message_id=r["id"], visibility=r["visibility"],
                               author_kind=r["author_kind"], at=r["created_at"])
                 for r in await conn.fetch(Q["own_messages"], tenant_id, ticket_id))


async def lock_duplicate_links(conn: asyncpg.Connection, tenant_id: TenantId) -> None:
    """Take the tenant's duplicate-link lock until commit."""
    await conn.execute(Q["lock_duplicate_links"], tenant_id)


__all__ = ["MERGES_MAX", "NO_SLA", "SLA_POLICIES", "CommandState", "TenantSla",
           "load_for_command", "load_ticket", "lock_duplicate_links", "merged_target",
           "open_ticket_ids", "own_messages", "tenant_sla", "thread_message_ids"]


async def open_ticket_ids(conn: asyncpg.Connection, tenant_id: TenantId) -> list[UUID]:
    """Every ticket of the tenant that is not closed, oldest first."""
    return [r["id"] for r in await conn.fetch(Q["open_ticket_ids"], tenant_id)]
