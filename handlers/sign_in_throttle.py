"""Failed sign-ins, counted in Postgres per account and per client address, with an
exponential backoff once a key has failed too often.

Redis is the fast path when it is there: its per-address failures budget
(api/ops/ratelimit.py) turns a guessing address away before the request reaches the
database. But Redis may be absent (the embedded first run has none) or down, and the
limiter then fails open; Postgres must be up for a sign-in anyway, so these counts
cost no availability and hold with or without Redis.

The rules (``Throttle``; the defaults are documented in docs/api.md):

- Each failure counts against the **account** (the kind of sign-in, the tenant's id,
  or what was typed for it when no tenant has it, and the e-mail, lower-cased) and
  the **address** it came from. An unknown tenant, an unknown e-mail and a wrong
  password count alike, so the answers never tell an existing account from another.
- A key may fail ``allowed`` times (10 for an account, 50 for an address: a shared
  office address is a crowd); the failure that reaches that number blocks the key
  for ``backoff`` (30 s), the next one after the block for twice that, and so on up
  to ``longest`` (1 hour). So the 11th wrong password in a row is refused. A blocked
  key's sign-ins are answered 429 with ``Retry-After`` before any password is
  checked, whatever the password: the 429 is the same for an account that exists and
  one that does not, and costs no hash.
- A key quiet for ``window`` (15 minutes) starts again from nothing. A right password
  forgives the account's failures, not the address's.

Keys are stored as sha256 hashes, never as e-mails or addresses
(migration 0552). The table has no tenant: a key is counted before the tenant is
known, so it is read-only to the runtime role, which counts through the migration's
functions. Each count runs in its own short transaction on a pooled connection (no
unit of work: there is no tenant to arm), and deletes a few rows of long-quiet keys.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from handlers.errors import TooManyAttempts

Q = load_queries(Path(__file__).with_name("sign_in_throttle.sql"))


@dataclass(frozen=True, slots=True)
class Limit:
    """How many failures of one key are allowed before a pause, and how long the pauses
    are."""

    allowed: int
    window: timedelta
    backoff: timedelta
    longest: timedelta


@dataclass(frozen=True, slots=True)
class Throttle:
    """The limits of accounts and of addresses (the defaults are the documented ones)."""

    account: Limit = Limit(10, timedelta(minutes=15), timedelta(seconds=30),
                           timedelta(hours=1))
    address: Limit = Limit(50, timedelta(minutes=15), timedelta(seconds=30),
                           timedelta(hours=1))


def _hash(*parts: str) -> bytes:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class Attempt:
    """Who is trying: the account's key and the address's (None: no address known)."""

    account: bytes
    address: bytes | None

    @classmethod
    def of(cls, kind: str, tenant: str, email: str, address: str | None) -> Attempt:
        return cls(_hash("account", kind, tenant.strip().lower(), email.strip().lower()),
                   None if address is None else _hash("address", address))

    def keys(self) -> list[bytes]:
        return [self.account] + ([self.address] if self.address is not None else [])


async def check(store: EventStore, attempt: Attempt, now: datetime) -> None:
    """Raise ``TooManyAttempts`` if the account or the address is blocked now.

    Takes the store, not a unit of work: the counts are kept by account and address,
    outside any tenant, on a connection of their own."""
    async with store.connection() as conn:
        until: datetime | None = await conn.fetchval(Q["blocked_until"], attempt.keys(), now)
    if until is not None:
        raise TooManyAttempts(max(1, math.ceil((until - now).total_seconds())))


async def failed(store: EventStore, throttle: Throttle, attempt: Attempt,
                 now: datetime) -> None:
    """Count one failure against the account and the address.

    Takes the store, not a unit of work: the counts are kept by account and address,
    outside any tenant, and this one commits on its own, so nothing the refused sign-in
    rolls back undoes it."""
    limits = [(attempt.account, throttle.account)]
    if attempt.address is not None:
        limits.append((attempt.address, throttle.address))
    quiet = max(throttle.account.window + throttle.account.longest,
                throttle.address.window + throttle.address.longest)
    async with store.connection() as conn, conn.transaction():
        for key, limit in limits:
            await conn.fetchval(Q["count_failure"], key, now, limit.window, limit.allowed,
                                limit.backoff, limit.longest, now - quiet)


async def succeeded(store: EventStore, attempt: Attempt) -> None:
    """A right password: forget the account's failures.

    Takes the store, not a unit of work: the counts are kept by account and address,
    outside any tenant, on a connection of their own."""
    async with store.connection() as conn:
        await conn.execute(Q["forget"], attempt.account)


__all__ = ["Attempt", "Limit", "Throttle", "TooManyAttempts", "check", "failed", "succeeded"]
