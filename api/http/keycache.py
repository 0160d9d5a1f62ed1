"""API key lookups, remembered for a few seconds in the process.

Every request used to look its key up in Postgres (the ``api_key_lookup`` function)
before anything else: one round trip and a pooled connection per request. A key's
principal (tenant, key id, role, agent) is now kept for ``KEY_CACHE_SECONDS`` after a
lookup. The cache only ever holds keys that were valid when read; an unknown key is
looked up every time (failed authentications are rate limited per address).

Revocation takes effect at once in every process, not after the time-to-live: any
change to ``api_keys`` or ``agents`` sends ``NOTIFY helpdesk_keys`` in the changing
transaction (migration 0111), and every process empties its cache when it hears it.
While this process's LISTEN connection is down it cannot hear that, so it does not
use the cache at all until the connection is back (and empties it on reconnect). A
lookup that raced with a change is not kept: each empties the cache under a new
generation, and a lookup only stores what it read in the generation it began in.

The bound, then: a revoked key works nowhere once the revoking transaction has
committed and its notification has reached each process (milliseconds); never longer
than the time-to-live, even if a notification were lost while the connection seemed
up.

Signed-in people's sessions are remembered the same way (``session``): an access
token's signature and expiry are checked without the database, and its session (open,
within its cap, its agent active, the agent's current role) is looked up under the
token's tenant and kept like a key. Revoking a session notifies on the same channel
(migration 0450), so it stops its access tokens as promptly as a revoked key.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from api.http.principal import Principal
from api.http.tokens import Claims
from domain.ids import TenantId
from eventstore.listener import Listener
from eventstore.sqlfile import load_queries
from eventstore.store import acquire, arm
from handlers.api_keys import KEY_PREFIX, hash_secret

Q = load_queries(Path(__file__).with_name("queries.sql"))

CHANNEL = "helpdesk_keys"
MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class _Entry:
    principal: Principal
    expires: float


class KeyCache:
    """Principals of recently seen valid keys, by the sha256 of the secret."""

    def __init__(self, pool: Any, *, ttl: float, acquire_timeout: float | None = 5.0,
                 max_entries: int = MAX_ENTRIES,
                 monotonic: Callable[[], float] = time.monotonic,
                 on_lookup: Callable[[str], None] | None = None) -> None:
        self.pool = pool
        self.ttl = ttl
        self.acquire_timeout = acquire_timeout
        self.max_entries = max_entries
        self._now = monotonic
        self._entries: dict[bytes, _Entry] = {}
        self._generation = 0
        self.listener: Listener | None = None
        self._counted = on_lookup or (lambda _result: None)

    async def start(self, listen_dsn: str) -> None:
        """Listen for key and agent changes (the cache is used only while listening)."""
        if self.ttl > 0:
            self.listener = Listener(listen_dsn, CHANNEL, lambda _payload: self.clear(),
                                     self.clear)
            self.listener.start()

    async def stop(self) -> None:
        if self.listener is not None:
            await self.listener.stop()
            self.listener = None
        self.clear()

    def clear(self) -> None:
        """Forget every key (a key or an agent changed somewhere, or we reconnected)."""
        self._generation += 1
        self._entries.clear()

    @property
    def active(self) -> bool:
        return self.listener is not None and self.listener.connected.is_set()

    async def lookup(self, secret: str) -> Principal | None:
        """The key's principal, or None for an unknown or revoked key."""
        if not secret.startswith(KEY_PREFIX) or len(secret) > 200:
            return None
        digest = hash_secret(secret)
        active, generation = self.active, self._generation
        cached = self._recall(digest, active)
        if cached is not None:
            return cached
        async with acquire(self.pool, timeout=self.acquire_timeout) as conn:
            rows = await conn.fetch(Q["api_key_lookup"], digest)
        if len(rows) != 1:
            # None, or a hash two keys share: the key_hash index is no longer unique
            # across tenants (migration 0250), so an ambiguous key fails closed.
            return None
        row = rows[0]
        scopes = row["scopes"]
        principal = Principal(TenantId(row["tenant_id"]), row["key_id"], row["role"],
                              row["agent_id"], row["agent_active"],
                              scopes=None if scopes is None else frozenset(scopes))
        # A barred key (its agent deactivated) is not kept: reactivating the agent then
        # takes effect at once here, without waiting for the notification.
        if principal.barred is None:
            self._remember(digest, principal, generation, active)
        return principal

    async def session(self, claims: Claims, now: datetime) -> Principal | None:
        """The principal of a signed-in person's access token, or None when its session
        has ended (signed out, revoked, past its cap) or its agent is deactivated."""
        slot = b"s:" + claims.session_id.bytes
        active, generation = self.active, self._generation
        cached = self._recall(slot, active)
        if cached is not None:
            return cached
        async with acquire(self.pool, timeout=self.acquire_timeout) as conn, \
                conn.transaction(readonly=True):
            await arm(conn, claims.tenant_id, None)
            row = await conn.fetchrow(Q["session_principal"], claims.tenant_id,
                                      claims.session_id, claims.agent_id)
        if (row is None or row["revoked_at"] is not None or row["expires_at"] <= now
                or not row["active"]):
            return None
        principal = Principal(claims.tenant_id, claims.session_id, row["role"],
                              claims.agent_id, True, credential="session")
        self._remember(slot, principal, generation, active)
        return principal

    def _recall(self, slot: bytes, active: bool) -> Principal | None:
        """A remembered principal that is still fresh (counted as a hit, else a miss)."""
        entry = self._entries.get(slot) if active else None
        if entry is not None and entry.expires > self._now():
            self._counted("hit")
            return entry.principal
        self._counted("miss")
        return None

    def _remember(self, slot: bytes, principal: Principal, generation: int,
                  active: bool) -> None:
        """Keep a lookup's answer, unless something changed since it began."""
        if active and generation == self._generation and self.active:
            if len(self._entries) >= self.max_entries:
                self._entries.pop(next(iter(self._entries)))  # the oldest
            self._entries[slot] = _Entry(principal, self._now() + self.ttl)


__all__ = ["CHANNEL", "KeyCache"]
