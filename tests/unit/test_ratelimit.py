"""The pure parts of the rate limiter (api/ops/ratelimit.py): a policy's emission
interval, the header fields it writes, and which bucket a request is counted in.

The GCRA itself runs in Redis (one Lua script); tests/integration/test_gcra.py runs it
there, and tests/e2e/test_rate_limits.py through the HTTP surface.
"""

from __future__ import annotations

import hashlib

import pytest

from api.ops.ratelimit import Caller, Decision, Policy, RateLimiter, policy_header, state_header
from api.ops.redis_guard import RedisGuard


@pytest.mark.parametrize(("limit", "window", "interval_us"), [
    (120, 60, 500_000),
    (1, 1, 1_000_000),
    (3, 10, 3_333_333),  # rounded down: a burst of ``limit`` always fits the window
    (7, 3600, 514_285_714),
    (3_000_000, 1, 1),  # finer than a microsecond: one, never zero
])
def test_the_emission_interval_is_the_window_shared_by_the_limit(limit: int, window: int,
                                                                 interval_us: int):
    assert Policy("p", limit, window).interval_us == interval_us


def test_policy_and_state_are_structured_fields_naming_the_policy():
    policy = Policy("per-key", 120, 60)
    assert policy_header(policy) == '"per-key";q=120;w=60'
    assert state_header(policy, Decision(True, 119, 0, 1)) == '"per-key";r=119;t=1'
    assert state_header(policy, Decision(False, 0, 1, 60)) == '"per-key";r=0;t=60'


def limiter() -> RateLimiter:
    return RateLimiter(RedisGuard(None), per_key=Policy("per-key", 120, 60),
                       per_address=Policy("per-address", 30, 60))


def test_a_bearer_token_is_counted_by_its_hash_with_its_address_failures():
    rl = limiter()
    digest = hashlib.sha256(b"hd_secret").hexdigest()[:32]
    caller = rl.identify("Bearer hd_secret", "10.1.2.3", "GET /v1/tickets")
    assert caller == Caller(f"hd:rl:k:{digest}", rl.per_key, failures="hd:rl:f:10.1.2.3")
    # The scheme in any case, spaces around the token: the same key, the same bucket.
    assert rl.identify("bearer  hd_secret ", "10.9.9.9").bucket == caller.bucket
    assert "hd_secret" not in caller.bucket


def test_without_a_token_a_request_is_counted_by_its_address():
    rl = limiter()
    assert rl.identify(None, "10.1.2.3", "GET /v1/tickets") == Caller(
        "hd:rl:a:10.1.2.3", rl.per_address)
    # Another scheme is no bearer token: counted by address too.
    assert rl.identify("Basic dXNlcjpwdw==", "10.1.2.3").bucket == "hd:rl:a:10.1.2.3"
    assert rl.identify("Bearer ", "10.1.2.3").bucket == "hd:rl:a:10.1.2.3"
    assert rl.identify(None, None).bucket == "hd:rl:a:unknown"


def test_operations_that_take_no_bearer_credential_are_gated_by_address_failures():
    rl = limiter()
    assert rl.identify(None, "10.1.2.3", "POST /v1/auth/sign-in").failures == \
        "hd:rl:f:10.1.2.3"
    assert rl.identify(None, "10.1.2.3", "POST /v1/portal/auth/password").failures == \
        "hd:rl:f:10.1.2.3"
    assert rl.identify(None, "10.1.2.3", "GET /v1/tickets").failures is None


def test_slacks_events_are_counted_per_connection_and_gated_by_address_failures():
    rl = limiter()
    connection = "6f1c1e0e-9a51-4f7e-9d6c-0c2b8a3f4e11"
    caller = rl.identify(None, "10.1.2.3", f"POST /v1/inbound/slack/{connection}")
    assert caller == Caller(f"hd:rl:s:{connection}", rl.per_key, failures="hd:rl:f:10.1.2.3")
    # From another of Slack's addresses: the same connection's bucket.
    assert rl.identify(None, "10.9.9.9", f"POST /v1/inbound/slack/{connection}").bucket == \
        caller.bucket
    assert rl.identify(None, "10.1.2.3", "POST /v1/inbound/slack/x/y").bucket == \
        "hd:rl:a:10.1.2.3"


def test_the_failures_gate_has_the_address_budget_under_its_own_name():
    rl = limiter()
    assert rl.auth_failures == Policy("auth-failures", 30, 60)
    assert RateLimiter(RedisGuard(None), per_key=rl.per_key, per_address=rl.per_address,
                       prefix="x:").identify(None, "a").bucket == "x:a:a"
