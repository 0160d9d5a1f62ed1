"""A Redis cache for analytics answers that is never older than the read model.

An answer is stored under ``(tenant, query, checkpoint)``, where the checkpoint is
the projection position the caller read just before asking (e.g. the projection's
``last_seq``). Once the projection moves on, the key changes, so a stale answer can
never be served: old entries simply expire. Reading the checkpoint is one cheap
indexed query; computing the answer is the expensive part this saves.

Fails open like everything on Redis: without Redis the answer is just computed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from redis.asyncio import Redis

from api.ops.redis_guard import RedisGuard

_MISS = object()


class AnalyticsCache:
    """``get_or_compute`` over a guarded Redis; entries live ``ttl`` seconds."""

    def __init__(self, guard: RedisGuard, *, ttl: int = 300, metrics: Any = None,
                 prefix: str = "hd:cache:") -> None:
        self.guard = guard
        self.ttl = ttl
        self.metrics = metrics
        self.prefix = prefix

    def key(self, tenant: object, query_key: str, checkpoint: object) -> str:
        """The Redis key of one answer. ``query_key`` names the query and all its
        parameters (it is hashed, so it may be long)."""
        digest = hashlib.sha256(query_key.encode("utf-8")).hexdigest()[:40]
        return f"{self.prefix}{tenant}:{digest}:{checkpoint}"

    def _count(self, result: str) -> None:
        if self.metrics is not None:
            self.metrics.cache.labels(result).inc()

    async def get_or_compute(
        self,
        tenant: object,
        query_key: str,
        checkpoint: object,
        compute: Callable[[], Awaitable[Any]],
    ) -> Any:
        """The cached answer for this checkpoint, or ``await compute()`` (then stored).

        ``compute`` must return something orjson can serialise; the cached value comes
        back as plain JSON types (str, int, float, bool, None, list, dict).
        """
        key = self.key(tenant, query_key, checkpoint)

        async def get(client: Redis) -> Any:
            raw = await client.get(key)
            return _MISS if raw is None else orjson.loads(raw)

        if self.guard.dormant:
            self._count("bypass")
            return await compute()
        cached = await self.guard.call(get, _MISS)
        if cached is not _MISS:
            self._count("hit")
            return cached
        self._count("miss")
        value = await compute()
        payload = orjson.dumps(value)

        async def put(client: Redis) -> None:
            await client.set(key, payload, ex=self.ttl)

        await self.guard.call(put, None)
        # Callers get the same shape on a miss as on a hit.
        return orjson.loads(payload)
