"""The inline read model of rule streams (``rules``) and the engine's record of what
it did (``rule_firings``).

``rules`` is written by the rule handlers in the command's own transaction, next to
the events (``handlers.rules``) and read by the rule routes, the engine and the dry
run. ``rule_firings`` is written by the engine (``handlers.rule_engine``) in the
transaction that commits a rule's actions and the engine's checkpoint.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.events import Event
from domain.ids import TenantId
from domain.mapper import from_stored
from domain.rule import Rule
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.rows import RecordRows, records_of_rows

Q = load_queries(Path(__file__).with_name("rules.sql"))


def _row(tenant_id: TenantId, rule: Rule) -> tuple[Any, ...]:
    dumped = rule.model_dump(mode="json")
    return (tenant_id, rule.id, rule.name, rule.position, rule.active, dumped["conditions"],
            dumped["actions"], rule.version, rule.created_at, rule.updated_at, dumped["time"])


load_rule = RecordRows(Rule, Q["get_rule"], Q["rule_for_update"]).load


async def count_rules(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """How many rules the tenant has, with the lock that makes the count hold until
    commit against another creation."""
    await conn.execute(Q["lock_rule_count"], tenant_id)
    count: int = await conn.fetchval(Q["count_rules"], tenant_id)
    return count


async def insert_rule(write: Write, tenant_id: TenantId, rule: Rule) -> None:
    await write(Q["insert_rule"], *_row(tenant_id, rule))


async def update_rule(write: Write, tenant_id: TenantId, rule: Rule) -> None:
    """Overwrite a rule's row with its new state (the caller holds the row lock)."""
    await write(Q["update_rule"], *_row(tenant_id, rule))


async def list_rules(conn: asyncpg.Connection, tenant_id: TenantId,
                     after: tuple[datetime, UUID] | None, limit: int) -> list[Rule]:
    """The tenant's rules in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    return await records_of_rows(conn, Rule, Q["list_rules"], tenant_id, at, last, limit)


async def active_rules(conn: asyncpg.Connection, tenant_id: TenantId) -> list[Rule]:
    """The tenant's active rules in the order they run."""
    return await records_of_rows(conn, Rule, Q["active_rules"], tenant_id)


async def all_rules(conn: asyncpg.Connection, tenant_id: TenantId) -> list[Rule]:
    """Every rule of the tenant, active or not, in the order they run."""
    return await records_of_rows(conn, Rule, Q["all_rules"], tenant_id)


async def chain_depth(conn: asyncpg.Connection, tenant_id: TenantId, seq: int) -> int:
    """The depth of the rule firing that appended event ``seq`` (0: none did)."""
    depth: int | None = await conn.fetchval(Q["chain_depth"], tenant_id, seq)
    return depth or 0


async def record_firings(conn: asyncpg.Connection, tenant_id: TenantId,
                         firings: list[dict[str, Any]]) -> None:
    """Record a batch's firings in one statement; each has ``trigger_seq``, ``rule_id``,
    ``ticket_id``, ``depth``, ``first_seq``, ``last_seq``, ``outcome``, ``detail`` and
    ``fired_at``."""
    if not firings:
        return
    columns = ("trigger_seq", "rule_id", "ticket_id", "depth", "first_seq", "last_seq",
               "outcome", "detail", "fired_at")
    await conn.execute(Q["record_firings"], tenant_id,
                       *([f[c] for f in firings] for c in columns))


async def firings_of_ticket(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID,
                            limit: int) -> list[dict[str, Any]]:
    """What rules did on a ticket, newest first."""
    return [dict(r) for r in await conn.fetch(Q["firings_of_ticket"], tenant_id, ticket_id,
                                              limit)]


async def upsert_ticket_times(conn: asyncpg.Connection, tenant_id: TenantId,
                              rows: list[dict[str, Any]]) -> None:
    """Move tickets' time-rule clocks in one statement; each row has ``ticket_id``,
    ``created``, ``updated``, ``pending_changed``, ``pending_since``, ``customer`` and
    ``agent`` (None: no change, but for ``pending_since``, which ``pending_changed``
    says)."""
    if not rows:
        return
    await conn.execute(Q["upsert_ticket_times"], tenant_id,
                       [r["ticket_id"] for r in rows], [r["created"] for r in rows],
                       [r["updated"] for r in rows], [r["pending_changed"] for r in rows],
                       [r["pending_since"] for r in rows], [r["customer"] for r in rows],
                       [r["agent"] for r in rows])


SINCE_COLUMNS = {"created": "created_at", "updated": "updated_at", "pending": "pending_since",
                 "customer_reply": "customer_reply_at", "agent_reply": "agent_reply_at"}
"""The ``rule_ticket_times`` column of each kind of time rule's start."""


async def ticket_times(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID
                       ) -> dict[str, datetime | None] | None:
    """A ticket's time-rule clocks by ``since`` (None: the ticket has none yet)."""
    row = await conn.fetchrow(Q["ticket_times"], tenant_id, ticket_id)
    if row is None:
        return None
    return {since: row[column] for since, column in SINCE_COLUMNS.items()}


async def time_due(conn: asyncpg.Connection, tenant_id: TenantId,
                   rules: list[dict[str, Any]]) -> list[asyncpg.Record]:
    """(rule_id, ticket_id, episode) due now, with the ticket's state, priority,
    source, group_id, assignee, organization_id, tags and fields; ``rules`` as the
    statement's ``$2`` describes them."""
    rows: list[asyncpg.Record] = await conn.fetch(Q["time_due"], tenant_id, rules)
    return rows


async def ticket_states(conn: asyncpg.Connection, tenant_id: TenantId,
                        ticket_ids: list[UUID]) -> dict[UUID, Any]:
    """The folded state documents of these tickets, by id."""
    rows = await conn.fetch(Q["ticket_states"], tenant_id, ticket_ids)
    return {r["id"]: r["state_json"] for r in rows}


async def ticket_events(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID,
                        after_version: int, through_version: int) -> list[Event]:
    """The ticket's events with ``after_version < version <= through_version``, in
    order, as stored (a sealed field reads as empty text: no condition asks for one)."""
    rows = await conn.fetch(Q["ticket_events"], tenant_id, ticket_id, after_version,
                            through_version)
    return [from_stored(r["type"], r["schema_version"], r["data"]) for r in rows]


async def time_firings_of_ticket(conn: asyncpg.Connection, tenant_id: TenantId,
                                 ticket_id: UUID, rule_ids: list[UUID]
                                 ) -> dict[tuple[UUID, datetime], str]:
    """The outcome of each (time rule, episode) that fired on the ticket."""
    rows = await conn.fetch(Q["time_firings_of_ticket"], tenant_id, ticket_id, rule_ids)
    return {(r["rule_id"], r["episode"]): r["outcome"] for r in rows}


async def claim_time_firing(conn: asyncpg.Connection, tenant_id: TenantId, rule_id: UUID,
                            ticket_id: UUID, episode: datetime, at: datetime) -> bool:
    """Record the episode's firing; False when it fired already."""
    return await conn.fetchval(Q["claim_time_firing"], tenant_id, rule_id, ticket_id,
                               episode, at) is not None


async def refuse_time_firing(conn: asyncpg.Connection, tenant_id: TenantId, rule_id: UUID,
                             ticket_id: UUID, episode: datetime, detail: str) -> None:
    await conn.execute(Q["refuse_time_firing"], tenant_id, rule_id, ticket_id, episode, detail)


async def arm_rule_actor(conn: asyncpg.Connection, rule_id: UUID) -> None:
    """Stamp what is appended from here on in this transaction as the rule's."""
    await conn.execute(Q["arm_rule_actor"], str(rule_id))


__all__ = [
    "SINCE_COLUMNS",
    "active_rules",
    "all_rules",
    "arm_rule_actor",
    "chain_depth",
    "claim_time_firing",
    "count_rules",
    "firings_of_ticket",
    "insert_rule",
    "list_rules",
    "load_rule",
    "record_firings",
    "refuse_time_firing",
    "ticket_events",
    "ticket_states",
    "ticket_times",
    "time_due",
    "time_firings_of_ticket",
    "update_rule",
    "upsert_ticket_times",
]
