"""Rules in tests: create them through the handler, run the engine, count what rules did."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from domain.ids import TenantId
from domain.rule import CreateRule
from domain.rule_parts import Action, Condition
from eventstore.store import EventStore
from handlers.rule_engine import RuleEngine
from handlers.rules import create_rule
from projections.projector import BatchHook, Projector
from tests.support.desk import ACTOR


async def make_rule(store: EventStore, tenant: TenantId, at: datetime,
                    conditions: Sequence[dict[str, Any]], actions: Sequence[dict[str, Any]],
                    *, name: str = "rule", position: int = 0) -> uuid.UUID:
    """Create a rule through its handler; returns its id."""
    command = CreateRule(rule_id=uuid.uuid4(), name=name, position=position,
                         conditions=tuple(Condition(**c) for c in conditions),
                         actions=tuple(Action(**a) for a in actions), at=at)
    async with store.unit_of_work(tenant, ACTOR) as s:
        rule = await create_rule(s, command)
    return rule.id


def engine(pool: asyncpg.Pool, store: EventStore, *, batch_size: int = 500,
           before_commit: BatchHook | None = None, **kw: Any) -> Projector:
    """A projector that runs the rule engine only, as the service starts it."""
    return Projector(pool, [RuleEngine(store.keyring)], batch_size=batch_size,
                     before_commit=before_commit, **kw)


async def by_rule(store: EventStore, tenant: TenantId, rule_id: uuid.UUID | None = None
                  ) -> list[asyncpg.Record]:
    """The events rules appended (one rule's, with ``rule_id``), in seq order."""
    async with store.unit_of_work(tenant, readonly=True) as s:
        rows: list[asyncpg.Record] = await s.conn.fetch(
            "SELECT seq, stream_id, type, actor_id, data FROM events WHERE tenant_id = $1 "
            "AND actor_kind = 'rule' AND ($2::text IS NULL OR actor_id = $2) ORDER BY seq",
            tenant, None if rule_id is None else str(rule_id))
    return rows
