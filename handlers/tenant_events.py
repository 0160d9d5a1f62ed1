"""The tenant-level stream: configuration changes as events.

API keys, agents, settings and webhooks are inline read models; every change to them
is also an event on the stream whose id is the tenant id, appended in the same
transaction, so the tenant's event feed is the complete audit trail. Nothing writes
an audit row by hand.
"""

from __future__ import annotations

from domain.events import Event
from domain.mapper import to_stored
from eventstore.store import Session
from eventstore.types import NewEvent


async def record(session: Session, event: Event) -> None:
    """Append ``event`` to the session's tenant stream, at whatever version it is when
    the unit of work commits. The store serialises writers of one stream, so ``None``
    as the expected version never loses an event.
    """
    type_, schema_version, data = to_stored(event)
    await session.append(session.tenant_id, None, [NewEvent(type_, data, schema_version)])
