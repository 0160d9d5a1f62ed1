"""Rate limits per API key (or per client address), enforced in Redis with GCRA.

The generic cell rate algorithm keeps one number per caller: the theoretical
arrival time (TAT) of the next request. One Lua script reads and moves it, so the
check is atomic across any number of API processes, and Redis's own clock is the
only clock involved. With ``limit`` requests per ``window`` seconds the emission
interval is ``T = window / limit`` and a full burst of ``limit`` is allowed.

Callers are told where they stand on every limited response (the IETF
``RateLimit-Policy`` / ``RateLimit`` fields, structured-field form), and a refused
request gets 429 problem+json with ``Retry-After``.

The limiter fails open: with Redis unset, unreachable or behind an open breaker the
request is served without limit headers (see ``api.redis_guard``). A key is
identified by the sha256 of its bearer token, so no database lookup happens here.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

from redis.asyncio import Redis
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import problems
from api.auth import bearer_token
from api.redis_guard import RedisGuard

# KEYS[1] = bucket; ARGV = emission interval (us), burst (requests), cost.
# Returns {allowed, remaining, retry_after_us, reset_us}.
GCRA_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tau = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local new_tat = tat + interval * cost
local allow_at = new_tat - tau
if now < allow_at then
  return {0, 0, math.ceil(allow_at - now), math.ceil(tat - now)}
end
local ttl_ms = math.ceil((new_tat - now) / 1000) + 1
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', ttl_ms)
return {1, math.floor((now - allow_at) / interval), 0, math.ceil(new_tat - now)}
"""


@dataclass(frozen=True, slots=True)
class Policy:
    """``limit`` requests per ``window`` seconds, named in the headers."""

    name: str
    limit: int
    window: int

    @property
    def interval_us(self) -> int:
        return max(1, self.window * 1_000_000 // self.limit)


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    remaining: int
    retry_after: int  # seconds, rounded up
    reset: int  # seconds until the full quota is back, rounded up


def policy_header(policy: Policy) -> str:
    return f'"{policy.name}";q={policy.limit};w={policy.window}'


def state_header(policy: Policy, decision: Decision) -> str:
    return f'"{policy.name}";r={decision.remaining};t={decision.reset}'


class RateLimiter:
    """Checks and counts one request against a caller's bucket."""

    def __init__(self, guard: RedisGuard, *, per_key: Policy, per_address: Policy,
                 prefix: str = "hd:rl:") -> None:
        self.guard = guard
        self.per_key = per_key
        self.per_address = per_address
        self.prefix = prefix

    def identify(self, authorization: str | None, client: str | None) -> tuple[str, Policy]:
        """The bucket and policy of a request: its key's hash, or else its address."""
        token = bearer_token(authorization)
        if token is not None:
            digest = hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]
            return f"{self.prefix}k:{digest}", self.per_key
        return f"{self.prefix}a:{client or 'unknown'}", self.per_address

    async def hit(self, bucket: str, policy: Policy) -> Decision | None:
        """Count a request; None when Redis is not available (no limit applies)."""

        async def run(client: Redis) -> Decision:
            raw = await client.eval(GCRA_LUA, 1, bucket, policy.interval_us, policy.limit, 1)
            allowed, remaining, retry_us, reset_us = (int(x) for x in raw)
            return Decision(bool(allowed), max(0, remaining), math.ceil(retry_us / 1e6),
                            math.ceil(reset_us / 1e6))

        return await self.guard.call(run, None)


class RateLimitMiddleware:
    """ASGI middleware limiting every HTTP request under ``prefixes``."""

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...] = ("/v1/", "/v1")) -> None:
        self.app = app
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limiter = _limiter(scope)
        path: str = scope.get("path", "")
        if (scope["type"] != "http" or limiter is None
                or not any(path == p or path.startswith(p) for p in self.prefixes)):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        auth = headers.get(b"authorization")
        client = scope.get("client")
        bucket, policy = limiter.identify(auth.decode("latin-1") if auth else None,
                                          client[0] if client else None)
        decision = await limiter.hit(bucket, policy)
        if decision is None:
            await self.app(scope, receive, send)
            return
        fields = [(b"ratelimit-policy", policy_header(policy).encode()),
                  (b"ratelimit", state_header(policy, decision).encode())]
        if not decision.allowed:
            metrics = scope["state"]["services"].extras.get("metrics")
            if metrics is not None:
                metrics.rate_limited.inc()
            response = problems.problem_response(
                429, "rate_limited",
                f"rate limit of {policy.limit} requests per {policy.window} s exceeded; "
                f"retry in {decision.retry_after} s",
                instance=path,
                headers={"Retry-After": str(max(1, decision.retry_after))},
            )
            response.raw_headers.extend(fields)
            await response(scope, receive, send)
            return

        async def send_with_fields(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *fields]}
            await send(message)

        await self.app(scope, receive, send_with_fields)


def _limiter(scope: Scope) -> RateLimiter | None:
    services = (scope.get("state") or {}).get("services")
    if services is None:
        return None
    limiter = services.extras.get("rate_limiter")
    return limiter if isinstance(limiter, RateLimiter) else None
