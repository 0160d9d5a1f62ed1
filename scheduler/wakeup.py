"""LISTEN ``helpdesk_jobs`` on a dedicated connection and wake the loop on news.

The connection is the loop's only long-lived one and must not go through a
transaction-pooling PgBouncer (LISTEN needs a session), hence its own URL. When the
connection drops (Postgres restarted, network cut), the listener reconnects by
itself with a growing delay, and wakes the loop once connected in case it missed
notifications meanwhile; the loop's capped sleep covers the gap in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import asyncpg

from eventstore.pool import connect

CHANNEL = "helpdesk_jobs"
log = logging.getLogger("helpdesk.scheduler")


class Listener:
    """Calls ``wake()`` on every notification that announces ready work."""

    def __init__(self, dsn: str, wake: Callable[[], None], *,
                 max_retry_delay: float = 5.0) -> None:
        self.dsn = dsn
        self.wake = wake
        self.max_retry_delay = max_retry_delay
        self.connected = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="scheduler-listen")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _on_notify(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        # Payload is the earliest run_at among the new ready rows; empty means none.
        if payload:
            self.wake()

    async def _run(self) -> None:
        delay = 0.1
        while True:
            conn: asyncpg.Connection | None = None
            lost = asyncio.Event()
            try:
                conn = await connect(self.dsn)
                conn.add_termination_listener(lambda _c, lost=lost: lost.set())
                await conn.add_listener(CHANNEL, self._on_notify)
                self.connected.set()
                delay = 0.1
                self.wake()  # anything added while we were not listening
                await self._watch(conn, lost)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # any failure: drop the connection and retry
                log.warning("job listener lost its connection: %s", exc)
            finally:
                self.connected.clear()
                if conn is not None and not conn.is_closed():
                    conn.terminate()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.max_retry_delay)

    async def _watch(self, conn: asyncpg.Connection, lost: asyncio.Event) -> None:
        """Return when the connection is gone; a silent half-open socket is caught by
        a cheap query every few seconds."""
        while not lost.is_set():
            try:
                await asyncio.wait_for(lost.wait(), timeout=5.0)
            except TimeoutError:
                await asyncio.wait_for(conn.fetchval("SELECT 1"), timeout=5.0)
