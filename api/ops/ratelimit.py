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
request is served without limit headers (see ``api.ops.redis_guard``). A key is
identified by the sha256 of its bearer token, so no database lookup happens here.

That alone would give every made-up token a fresh budget, and each costs a key
lookup in Postgres. So a response of 401 to a request that carried a token is also
counted against its client address (the per-address policy, in a bucket of its own:
``auth-failures``), and once an address has used that budget up, its requests with
tokens are refused with 429 before they reach authentication, until the bucket
drains. Both checks run in one Redis call. A shared address (a NAT) with a
misbehaving client shares the refusal; valid requests never count against it.

Slack's Events API requests carry a signature, not a bearer token, and come from
Slack's addresses for every workspace at once: they are counted per Slack connection
(the id in their path), at a key's rate, and gated by their address's failures like
the other operations without a bearer credential, so forged signatures are refused
before they are checked.

Signing in presents a credential in the body (or the refresh cookie) rather than a
bearer token, so the operations that take no bearer credential (``OPEN`` in
api/http/access.py) are counted per address and gated by the same failures bucket: a
wrong password is a 401 that counts, and an address that guesses too often is refused
with 429 before its password is even hashed.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

from redis.asyncio import Redis
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http import problems
from api.http.access import OPEN
from api.http.headers import bearer_token
from api.ops.redis_guard import RedisGuard

# KEYS[1] = bucket, KEYS[2] (optional) = a gate bucket checked first without being
# charged; ARGV = emission interval (us), burst (requests), cost, then the gate's
# interval and burst. Returns {allowed, remaining, retry_after_us, reset_us, gated}:
# gated = 1 when the gate refused (KEYS[1] is then left alone).
GCRA_LUA = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function gcra(key, interval, burst, cost, charge)
  local tau = interval * burst
  local tat = tonumber(redis.call('GET', key))
  if tat == nil or tat < now then tat = now end
  local new_tat = tat + interval * cost
  local allow_at = new_tat - tau
  if now < allow_at then
    return {0, 0, math.ceil(allow_at - now), math.ceil(tat - now)}
  end
  if charge then
    local ttl_ms = math.ceil((new_tat - now) / 1000) + 1
    redis.call('SET', key, string.format('%.0f', new_tat), 'PX', ttl_ms)
  end
  return {1, math.floor((now - allow_at) / interval), 0, math.ceil(new_tat - now)}
end
if KEYS[2] then
  local gate = gcra(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), 1, false)
  if gate[1] == 0 then
    gate[5] = 1
    return gate
  end
end
local r = gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), true)
r[5] = 0
return r
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
    gated: bool = False  # refused by the gate (too many failed authentications)


@dataclass(frozen=True, slots=True)
class Caller:
    """Where a request is counted: its bucket and policy, and for a request with a
    token, the bucket its address's failed authentications are counted in."""

    bucket: str
    policy: Policy
    failures: str | None = None


def policy_header(policy: Policy) -> str:
    return f'"{policy.name}";q={policy.limit};w={policy.window}'


def state_header(policy: Policy, decision: Decision) -> str:
    return f'"{policy.name}";r={decision.remaining};t={decision.reset}'


_SLACK_EVENTS = re.compile(r"^/v1/inbound/slack/([0-9A-Fa-f-]{1,36})$")
"""Slack's Events API route (api/routes/slack.py), with the connection id it names."""


class RateLimiter:
    """Checks and counts one request against a caller's bucket."""

    def __init__(self, guard: RedisGuard, *, per_key: Policy, per_address: Policy,
                 prefix: str = "hd:rl:") -> None:
        self.guard = guard
        self.per_key = per_key
        self.per_address = per_address
        self.auth_failures = Policy("auth-failures", per_address.limit, per_address.window)
        self.prefix = prefix

    def identify(self, authorization: str | None, client: str | None,
                 operation: str = "") -> Caller:
        """The bucket and policy of a request: its key's hash, or else its address;
        with the address's failures bucket when it presents a credential."""
        address = client or "unknown"
        failures = f"{self.prefix}f:{address}"
        token = bearer_token(authorization)
        if token is not None:
            digest = hashlib.sha256(token.encode("utf-8")).hexdigest()[:32]
            return Caller(f"{self.prefix}k:{digest}", self.per_key, failures=failures)
        method, _, path = operation.partition(" ")
        slack = _SLACK_EVENTS.match(path) if method == "POST" else None
        if slack is not None:
            return Caller(f"{self.prefix}s:{slack.group(1)}", self.per_key, failures=failures)
        return Caller(f"{self.prefix}a:{address}", self.per_address,
                      failures=failures if operation in OPEN else None)

    async def hit(self, caller: Caller) -> Decision | None:
        """Count a request; None when Redis is not available (no limit applies)."""
        gate = self.auth_failures
        if caller.failures is None:
            keys: tuple[str, ...] = (caller.bucket,)
            extra: tuple[int, ...] = ()
        else:
            keys = (caller.bucket, caller.failures)
            extra = (gate.interval_us, gate.limit)
        return await self._eval(keys, caller.policy, extra)

    async def count(self, bucket: str, policy: Policy) -> Decision | None:
        """Count one event against a bucket of the caller's choosing (a route's own
        limit, on top of the per-request ones); None when Redis is not available."""
        return await self._eval((f"{self.prefix}{bucket}",), policy, ())

    async def failed_authentication(self, caller: Caller) -> None:
        """Count a 401 against the address the token came from."""
        if caller.failures is not None:
            await self._eval((caller.failures,), self.auth_failures, ())

    async def _eval(self, keys: tuple[str, ...], policy: Policy,
                    extra: tuple[int, ...]) -> Decision | None:
        async def run(client: Redis) -> Decision:
            raw = await client.eval(GCRA_LUA, len(keys), *keys, policy.interval_us,
                                    policy.limit, 1, *extra)
            allowed, remaining, retry_us, reset_us, gated = (int(x) for x in raw)
            return Decision(bool(allowed), max(0, remaining), math.ceil(retry_us / 1e6),
                            math.ceil(reset_us / 1e6), bool(gated))

        return await self.guard.call(run, None)


class RateLimitMiddleware:
    """ASGI middleware limiting every HTTP request under ``prefixes``."""

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...] = ("/v1/", "/v1")) -> None:
        self.app = app
        self.prefixes = prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        limiter = _limiter(scope)
        path: str = scope.get("path", "")
        if (scope["type"] != "http" or limiter is None or limiter.guard.dormant
                or not any(path == p or path.startswith(p) for p in self.prefixes)):
            # Dormant (no REDIS_URL): no limits apply, so no caller is worked out either.
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        auth = headers.get(b"authorization")
        client = scope.get("client")
        caller = limiter.identify(auth.decode("latin-1") if auth else None,
                                  client[0] if client else None,
                                  f"{scope.get('method', '')} {path}")
        decision = await limiter.hit(caller)
        if decision is None:
            await self.app(scope, receive, send)
            return
        policy = limiter.auth_failures if decision.gated else caller.policy
        fields = [(b"ratelimit-policy", policy_header(policy).encode()),
                  (b"ratelimit", state_header(policy, decision).encode())]
        if not decision.allowed:
            scope["state"]["services"].metrics.rate_limited.inc()
            what = ("failed authentications from this address" if decision.gated
                    else "requests")
            response = problems.problem_response(
                429, "rate_limited",
                f"rate limit of {policy.limit} {what} per {policy.window} s exceeded; "
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
                if message.get("status") == 401:
                    await limiter.failed_authentication(caller)
            await send(message)

        await self.app(scope, receive, send_with_fields)


def _limiter(scope: Scope) -> RateLimiter | None:
    services = (scope.get("state") or {}).get("services")
    if services is None:
        return None
    limiter: RateLimiter = services.limiter
    return limiter
