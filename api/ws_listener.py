"""The process's one LISTEN connection on ``helpdesk_events``, reconnecting by itself.

Postgres delivers a notification per tenant per committing statement
(``'<tenant_id>:<last seq>'``). A notification only says "look": the hub reads the
events themselves under the tenant's row-level security context. Notifications sent
while this connection was down are lost, so every (re)connect calls ``on_connect``
and the hub catches up each tenant it serves from its last known seq.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable

import asyncpg

from eventstore.errors import StoreUnavailable
from eventstore.pool import connect

CHANNEL = "helpdesk_events"
log = logging.getLogger("helpdesk.ws")


class Listener:
    """Keeps one LISTEN connection open; calls back on every notification."""

    def __init__(
        self,
        dsn: str,
        on_notify: Callable[[str], None],
        on_connect: Callable[[], None],
        *,
        keepalive: float = 10.0,
        max_backoff: float = 5.0,
    ) -> None:
        self.dsn = dsn
        self.on_notify = on_notify
        self.on_connect = on_connect
        self.keepalive = keepalive
        self.max_backoff = max_backoff
        self.connects = 0
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="helpdesk-ws-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _deliver(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self.on_notify(payload)

    async def _run(self) -> None:
        failures = 0
        while True:
            conn: asyncpg.Connection | None = None
            try:
                conn = await connect(self.dsn, timeout=5.0)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                await conn.add_listener(CHANNEL, self._deliver)
                failures = 0
                self.connects += 1
                self.connected.set()
                # Listening from here on: anything committed earlier is caught up by
                # reading from each tenant's last known seq.
                self.on_connect()
                await self._watch(conn, lost)
            except asyncio.CancelledError:
                raise
            except (StoreUnavailable, OSError, TimeoutError, asyncpg.PostgresError,
                    asyncpg.InterfaceError) as exc:
                log.warning("event listener connection lost: %s", exc)
            finally:
                self.connected.clear()
                if conn is not None and not conn.is_closed():
                    conn.terminate()
            failures += 1
            delay = min(self.max_backoff, 0.05 * 2 ** min(failures, 10))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    async def _watch(self, conn: asyncpg.Connection, lost: asyncio.Event) -> None:
        # A closed socket fires the termination listener; a silent network needs the
        # keepalive query to notice.
        while not lost.is_set():
            try:
                await asyncio.wait_for(lost.wait(), self.keepalive)
            except TimeoutError:
                await conn.fetchval("SELECT 1", timeout=self.keepalive)
        raise StoreUnavailable("the listen connection was closed")
