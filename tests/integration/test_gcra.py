"""The rate limiter's GCRA, as it runs: the Lua script in a real Redis.

Windows are an hour long, so the microseconds that pass between calls cannot move a
figure that is rounded to whole seconds or requests.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from api.ops.ratelimit import Caller, Decision, Policy, RateLimiter
from api.ops.redis_guard import RedisGuard
from tests.support.redis import RedisServer

pytestmark = pytest.mark.slow  # starts a redis-server

HOUR = 3600
FOUR_AN_HOUR = Policy("four", 4, HOUR)  # one every 900 s, a burst of four


@pytest.fixture
async def limiter(redis_server: RedisServer) -> AsyncIterator[RateLimiter]:
    guard = RedisGuard(redis_server.url)
    try:
        yield RateLimiter(guard, per_key=FOUR_AN_HOUR, per_address=Policy("two", 2, HOUR))
    finally:
        await guard.close()


async def test_a_full_burst_passes_then_each_request_waits_one_interval(limiter: RateLimiter):
    caller = Caller("hd:rl:k:burst", FOUR_AN_HOUR)
    burst = [await limiter.hit(caller) for _ in range(4)]
    # remaining counts down; the quota is back when every spent interval has passed.
    assert burst == [Decision(True, 3, 0, 900), Decision(True, 2, 0, 1800),
                     Decision(True, 1, 0, 2700), Decision(True, 0, 0, 3600)]
    refused = await limiter.hit(caller)
    assert refused == Decision(False, 0, 900, 3600)
    # A refused request is not charged: the next one is told the same.
    assert await limiter.hit(caller) == Decision(False, 0, 900, 3600)


async def test_a_bucket_lives_in_redis_only_until_its_quota_is_back(
        limiter: RateLimiter, redis_server: RedisServer):
    await limiter.hit(Caller("hd:rl:k:ttl", FOUR_AN_HOUR))
    client = Redis.from_url(redis_server.url)
    try:
        ttl_ms = await client.pttl("hd:rl:k:ttl")
    finally:
        await client.aclose()
    assert 899_000 < ttl_ms <= 900_001


async def test_buckets_are_apart(limiter: RateLimiter):
    for _ in range(4):
        await limiter.hit(Caller("hd:rl:k:one", FOUR_AN_HOUR))
    assert (await limiter.hit(Caller("hd:rl:k:one", FOUR_AN_HOUR))).allowed is False
    assert await limiter.hit(Caller("hd:rl:k:two", FOUR_AN_HOUR)) == Decision(True, 3, 0, 900)
    # A route's own count goes in the bucket it names, under the limiter's prefix.
    assert await limiter.count("route:one", FOUR_AN_HOUR) == Decision(True, 3, 0, 900)
    assert (await limiter.count("k:one", FOUR_AN_HOUR)).allowed is False


async def test_failed_authentications_close_the_gate_without_charging_the_bucket(
        limiter: RateLimiter):
    caller = limiter.identify("Bearer made-up", "10.0.0.7")
    assert caller.failures == "hd:rl:f:10.0.0.7"
    assert await limiter.hit(caller) == Decision(True, 3, 0, 900)
    # The gate has the address policy (two an hour) under the name auth-failures.
    await limiter.failed_authentication(caller)
    assert (await limiter.hit(caller)).allowed
    await limiter.failed_authentication(caller)
    gated = await limiter.hit(caller)
    assert gated == Decision(False, 0, 1800, 3600, gated=True)
    # Gated requests are charged to nothing: the key's own bucket still has two.
    other_address = Caller(caller.bucket, caller.policy, failures="hd:rl:f:10.0.0.8")
    assert await limiter.hit(other_address) == Decision(True, 1, 0, 2700)


async def test_without_redis_no_decision_is_made():
    rl = RateLimiter(RedisGuard(None), per_key=FOUR_AN_HOUR, per_address=FOUR_AN_HOUR)
    assert await rl.hit(Caller("hd:rl:k:x", FOUR_AN_HOUR)) is None
    assert await rl.count("x", FOUR_AN_HOUR) is None
