"""The analytics cache against a real redis-server: keyed by tenant, query and
checkpoint, so an answer is never older than the read model; bypassed when Redis
is gone."""

from __future__ import annotations

from typing import Any

import pytest

from api.ops.cache import AnalyticsCache
from api.ops.metrics import Metrics
from api.ops.redis_guard import RedisGuard
from tests.support.redis import RedisServer


class Computer:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return {"answer": self.calls, "rows": [1, 2.5, None]}


@pytest.mark.slow  # starts a redis-server
async def test_answers_are_reused_only_for_the_same_tenant_query_and_checkpoint(
    redis_server: RedisServer,
) -> None:
    guard = RedisGuard(redis_server.url)
    metrics = Metrics()
    cache = AnalyticsCache(guard, ttl=60, metrics=metrics)
    compute = Computer()
    try:
        first = await cache.get_or_compute("t1", "summary?group_by=priority", 10, compute)
        again = await cache.get_or_compute("t1", "summary?group_by=priority", 10, compute)
        assert first == again == {"answer": 1, "rows": [1, 2.5, None]}
        assert compute.calls == 1

        # The projection moved on: the old answer is not served.
        moved = await cache.get_or_compute("t1", "summary?group_by=priority", 11, compute)
        assert moved["answer"] == 2
        # Another query, another tenant: their own entries.
        assert (await cache.get_or_compute("t1", "summary?group_by=day", 11, compute))[
            "answer"] == 3
        assert (await cache.get_or_compute("t2", "summary?group_by=priority", 11, compute))[
            "answer"] == 4
        assert compute.calls == 4

        ttl = await guard.client.ttl(cache.key("t1", "summary?group_by=priority", 10))
        assert 0 < ttl <= 60
        text = metrics.render().decode()
        assert 'helpdesk_cache_requests_total{result="hit"} 1.0' in text
        assert 'helpdesk_cache_requests_total{result="miss"} 4.0' in text

        # Redis gone: every call computes, none fails.
        redis_server.kill()
        assert (await cache.get_or_compute("t1", "summary?group_by=priority", 11, compute))[
            "answer"] == 5
        assert (await cache.get_or_compute("t1", "summary?group_by=priority", 11, compute))[
            "answer"] == 6
    finally:
        await guard.close()


async def test_without_redis_the_cache_is_bypassed() -> None:
    metrics = Metrics()
    cache = AnalyticsCache(RedisGuard(None), metrics=metrics)
    compute = Computer()
    assert (await cache.get_or_compute("t", "q", 1, compute))["answer"] == 1
    assert (await cache.get_or_compute("t", "q", 1, compute))["answer"] == 2
    assert 'helpdesk_cache_requests_total{result="bypass"} 2.0' in metrics.render().decode()
