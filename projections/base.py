"""What a projection is: a name, the event types it handles, and ``apply``.

Events reach a projection already read back through ``domain.mapper.from_stored``
(the one JSON boundary), wrapped with the store facts a read model needs (seq and
stream). ``apply_batch`` is the fast path the projector uses; ``apply`` is the
one-event form, equal to a batch of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

import asyncpg

from domain.events import Event
from domain.ids import TenantId


@dataclass(frozen=True, slots=True)
class Envelope:
    """One domain event with where it sits in the tenant's history."""

    tenant_id: TenantId
    seq: int
    stream_id: UUID
    event: Event
    actor_kind: str = ""
    actor_id: str = ""
    """Who appended it, as the database stamped it (the rule engine's loop guard)."""
    version: int = 0
    """Its version in its stream (0: not known), which tells the rule engine the
    stream's state right after it."""


class Projection(Protocol):
    """A read-model builder. Every write happens on ``conn`` inside the projector's
    transaction, under the tenant's context, together with the checkpoint move."""

    name: str
    handles: frozenset[str]

    async def apply(self, conn: asyncpg.Connection, event: Envelope) -> None:
        """Apply one event."""

    async def apply_batch(
        self, conn: asyncpg.Connection, tenant_id: TenantId, events: Sequence[Envelope]
    ) -> int | None:
        """Apply events in seq order; same effect as ``apply`` on each in turn. A
        projection that ends the batch early returns the seq it applied through (the
        checkpoint moves there); None: the whole batch."""

    async def reset(self, conn: asyncpg.Connection, tenant_id: TenantId) -> None:
        """Delete the tenant's rows (the first step of a rebuild)."""
