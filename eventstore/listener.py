"""A LISTEN connection of its own, reconnecting by itself.

The WebSocket hub and the projectors listen on ``helpdesk_events`` (sent by the
store after commit, ``'<tenant_id>'``), the scheduler on
``helpdesk_jobs``. A notification only ever says "look": readers read the data
themselves. Notifications sent while the connection was down are lost, so every
(re)connect calls ``on_connect``, and the reader catches up from what it last saw.

LISTEN needs a session of its own, so its URL must not go through a
transaction-pooling PgBouncer (``LISTEN_DATABASE_URL``). A closed socket is noticed
at once; a silent half-open one by a keepalive query.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Sequence

import asyncpg

from eventstore.background import cancel_and_wait
from eventstore.errors import StoreUnavailable
from eventstore.pool import connect

log = logging.getLogger("helpdesk.listen")


class Listener:
    """Keeps one LISTEN connection on ``channel`` (or several channels) open; calls
    back on every notification (with its payload) and after every (re)connect."""

    def __init__(
        self,
        dsn: str,
        channel: str | Sequence[str],
        on_notify: Callable[[str], None],
        on_connect: Callable[[], None],
        *,
        keepalive: float = 10.0,
        max_backoff: float = 5.0,
    ) -> None:
        self.dsn = dsn
        self.channels = (channel,) if isinstance(channel, str) else tuple(channel)
        self.channel = ",".join(self.channels)
        self.on_notify = on_notify
        self.on_connect = on_connect
        self.keepalive = keepalive
        self.max_backoff = max_backoff
        self.connects = 0
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"listen-{self.channel}")

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
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
                for channel in self.channels:
                    await conn.add_listener(channel, self._deliver)
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
                log.warning("LISTEN %s connection lost: %s", self.channel, exc)
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
