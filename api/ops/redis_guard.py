"""Redis that is allowed to die: short timeouts and a circuit breaker, failing open.

Redis only ever makes the service better (rate limits, a cache); it never decides
whether a request is served. So every Redis operation goes through ``RedisGuard.call``,
which gives the caller its fallback instead of an error when Redis is unset
(dormant), slow, broken or gone:

- each operation is bounded by a short timeout (socket and overall);
- after ``failure_threshold`` consecutive failures the breaker opens and Redis is
  skipped entirely for ``cooldown`` seconds, so requests do not each pay the timeout;
- then one probe is let through (half-open): success closes the breaker, failure
  opens it again. Nothing has to be restarted when Redis comes back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from api.ops.readiness import CheckResult

log = logging.getLogger("helpdesk.redis")

T = TypeVar("T")

CLOSED, HALF_OPEN, OPEN = "closed", "half_open", "open"
STATE_VALUES = {CLOSED: 0, HALF_OPEN: 1, OPEN: 2}
"""Numeric form of the breaker state for the ``helpdesk_redis_circuit_state`` gauge."""


class Breaker:
    """A consecutive-failure circuit breaker with a single half-open probe."""

    def __init__(
        self,
        failure_threshold: int,
        cooldown: float,
        *,
        now: Callable[[], float] = time.monotonic,
        on_change: Callable[[str], None] | None = None,
    ) -> None:
        self.failure_threshold = failure_threshold
        self.cooldown = cooldown
        self._now = now
        self._on_change = on_change
        self.state = CLOSED
        self.failures = 0
        self._opened_at = 0.0
        self._probing = False

    def _set(self, state: str) -> None:
        if state != self.state:
            log.warning("redis circuit %s -> %s", self.state, state)
            self.state = state
            if self._on_change is not None:
                self._on_change(state)

    def allow(self) -> bool:
        """May an operation try Redis now? (In half-open, only one probe at a time.)"""
        if self.state == CLOSED:
            return True
        if self.state == OPEN:
            if self._now() - self._opened_at < self.cooldown:
                return False
            self._set(HALF_OPEN)
        if self._probing:
            return False
        self._probing = True
        return True

    def success(self) -> None:
        self.failures = 0
        self._probing = False
        self._set(CLOSED)

    def failure(self) -> None:
        self._probing = False
        self.failures += 1
        if self.state == HALF_OPEN or self.failures >= self.failure_threshold:
            self._opened_at = self._now()
            self._set(OPEN)

    def is_open(self) -> bool:
        """True while Redis is being skipped (open and still cooling down)."""
        return self.state == OPEN and self._now() - self._opened_at < self.cooldown


class RedisGuard:
    """Fail-open access to an optional Redis. ``url=None`` makes it dormant."""

    def __init__(
        self,
        url: str | None,
        *,
        socket_timeout: float = 0.1,
        connect_timeout: float = 0.1,
        failure_threshold: int = 3,
        cooldown: float = 5.0,
        on_state: Callable[[str], None] | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.timeout = max(socket_timeout, connect_timeout) * 2
        self.breaker = Breaker(failure_threshold, cooldown, now=now, on_change=on_state)
        self.client: Redis | None = None
        if url:
            # No retries inside the client: one bounded attempt, then the breaker decides.
            self.client = Redis.from_url(
                url,
                socket_timeout=socket_timeout,
                socket_connect_timeout=connect_timeout,
                retry=Retry(NoBackoff(), 0),
                retry_on_timeout=False,
                health_check_interval=0,
            )

    @property
    def dormant(self) -> bool:
        return self.client is None

    async def call(self, op: Callable[[Redis], Awaitable[T]], fallback: T) -> T:
        """Run ``op`` against Redis, or return ``fallback`` if Redis is unset, skipped
        by the open breaker, or fails in any way within the timeout."""
        if self.client is None or not self.breaker.allow():
            return fallback
        try:
            async with asyncio.timeout(self.timeout):
                result = await op(self.client)
        except asyncio.CancelledError:
            self.breaker.failure()
            await self._drop_connections()
            raise
        except Exception as exc:  # any Redis trouble means "serve without Redis"
            log.debug("redis operation failed: %s: %s", type(exc).__name__, exc)
            self.breaker.failure()
            await self._drop_connections()
            return fallback
        self.breaker.success()
        return result

    async def _drop_connections(self) -> None:
        # A timed-out or broken connection may still hold a half-read reply: never
        # reuse it. The next attempt connects afresh.
        if self.client is None:
            return
        try:
            async with asyncio.timeout(self.timeout):
                await self.client.connection_pool.disconnect()
        except Exception:
            log.debug("dropping redis connections failed", exc_info=True)

    async def check(self) -> CheckResult:
        """Readiness part: ``ok``, ``degraded`` or ``dormant``; never critical."""
        if self.client is None:
            return CheckResult("dormant")
        if self.breaker.is_open():
            return CheckResult("degraded", detail="circuit open: Redis is being skipped")

        async def ping(client: Redis) -> bool:
            return bool(await client.ping())

        if await self.call(ping, False):
            return CheckResult("ok")
        return CheckResult("degraded", detail="Redis is configured but not answering")

    async def close(self) -> None:
        if self.client is not None:
            try:
                await self.client.aclose()
            except Exception:  # closing a dead connection must not fail shutdown
                log.debug("closing redis client failed", exc_info=True)
