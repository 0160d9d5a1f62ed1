"""Tell listeners that a tenant's events committed: ``helpdesk_events`` notifications.

Notifications are sent right after an append commits, not from inside the appending
transaction. A transaction that calls NOTIFY takes a database-wide lock at commit and
holds it through its WAL flush, which serialises the commits of every tenant; sent
afterwards, in a statement of their own with ``synchronous_commit`` off (a
notification carries no data worth a flush), they no longer queue one tenant's commits
behind another's.

Payload: ``'<tenant_id>'``: a tenant's events committed; listeners read from the last
seq they saw. (Appends go out with their COMMIT, so the appender does not learn the
seqs it got.) Sends are coalesced: while one is in flight, and for ``min_interval``
after it, later commits only add their tenant to the pending set, and the next send
names each once. Under load a process thus sends at most one
notifying statement per interval, whatever its commit rate; listeners wake at most
``min_interval`` later. (Measured on one tenant with 8 writers, same database, after a
warm-up: 2,173-2,282 appends/s sending after every commit, 2,354-2,398 with a 5 ms
interval.)

A notification is a wake-up hint, never the data: a listener that misses one (its
connection dropped, this process died between commit and send) catches up on its next
poll of the event store.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import asyncpg

from domain.ids import TenantId
from eventstore.pool import discard

CHANNEL = "helpdesk_events"
log = logging.getLogger("helpdesk.eventstore")

SEND = (
    "SELECT set_config('synchronous_commit', 'off', true), "
    "count(pg_notify($1, p)) FROM unnest($2::text[]) AS p"
)
"""One statement sending many notifications on one channel: $1 the channel, $2 the
payloads (text[]), with ``synchronous_commit`` off (a notification carries no data
worth a flush)."""


class CommitNotifier:
    """Coalescing sender of ``helpdesk_events`` notifications for one process."""

    def __init__(self, pool: Any, *, min_interval: float = 0.005) -> None:
        self._pool = pool
        self._min_interval = min_interval
        self._pending: set[TenantId] = set()
        self._task: asyncio.Task[None] | None = None

    def committed(self, tenant_id: TenantId) -> None:
        """Record that events of ``tenant_id`` committed; send soon."""
        self._pending.add(tenant_id)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, set()
            payloads = [str(t) for t in batch]
            try:
                async with self._pool.acquire() as conn:
                    try:
                        await conn.fetchval(SEND, CHANNEL, payloads)
                    except asyncpg.InternalClientError:
                        # The server ended the connection between statements: never
                        # hand it out again (see eventstore/store.py, UNAVAILABLE).
                        discard(conn)
                        raise
            except (asyncpg.PostgresError, OSError, TimeoutError, asyncpg.InterfaceError,
                    asyncpg.InternalClientError) as exc:
                # Listeners poll as well; a lost wake-up only delays them.
                log.warning("could not notify %s: %s", CHANNEL, exc)
            if self._min_interval > 0:
                await asyncio.sleep(self._min_interval)

    async def flush(self) -> None:
        """Wait until every recorded commit has been notified (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
