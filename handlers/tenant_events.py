"""The tenant-level stream: the events of the tenant's own aggregates and records.

Agents, API keys, settings and webhooks are aggregates decided in ``domain`` whose
state is their row; sign-ins, sessions, invitations and portal links are records
(docs/architecture.md). Every change to either is an event on the stream whose id is
the tenant id, appended in the same transaction as the row, so the tenant's event feed
is the complete audit trail. Nothing writes an audit row by hand.
"""

from __future__ import annotations

from collections.abc import Iterable

from domain.events import Event
from domain.mapper import to_stored
from eventstore.store import UnitOfWork
from eventstore.types import NewEvent


async def record(session: UnitOfWork, event: Event) -> None:
    """Append ``event`` to the session's tenant stream, at whatever version it is when
    the unit of work commits. The store serialises writers of one stream, so ``None``
    as the expected version never loses an event.
    """
    type_, schema_version, data = to_stored(event)
    await session.append(session.tenant_id, None, [NewEvent(type_, data, schema_version)])


async def record_all(session: UnitOfWork, events: Iterable[Event]) -> None:
    """``record`` each event, in order: what an aggregate on the tenant stream decided."""
    for event in events:
        await record(session, event)
