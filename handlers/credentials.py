"""How people's secrets look and are checked: argon2id passwords and opaque tokens.

Passwords are hashed with argon2id (``argon2-cffi``). The parameters come from the
process settings; a stored hash made with other parameters is rehashed when its owner
next signs in with the right password (``Passwords.needs_rehash``). A check for a
person who has no password (an unknown e-mail, another tenant's, an agent never
invited) still runs one hash, against a decoy made with the same parameters, so the
time a sign-in takes does not tell whether the e-mail exists.

Refresh and invitation tokens are opaque: a prefix, then the tenant's id and 256
random bits, url-safe base64. The tenant travels in the token so it can be looked up
under that tenant's row-level security without a lookup across tenants; only the
sha256 of the whole token is stored, so a database read does not yield a usable token.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import secrets
import uuid
from dataclasses import dataclass

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

from domain.ids import TenantId
from handlers.errors import Invalid

REFRESH_PREFIX = "hdr_"
INVITATION_PREFIX = "hdi_"
MIN_PASSWORD = 10
MAX_PASSWORD = 200
_RANDOM = 32


class Passwords:
    """argon2id hashing with the process's parameters (CPU-bound: call from a thread)."""

    def __init__(self, *, memory_kib: int, time_cost: int, parallelism: int = 4) -> None:
        self.hasher = PasswordHasher(time_cost=time_cost, memory_cost=memory_kib,
                                     parallelism=parallelism, type=Type.ID)

    @functools.cached_property
    def _decoy(self) -> str:
        # Made on first use, not at start-up: a process nobody signs in to pays nothing.
        return self.hasher.hash(secrets.token_urlsafe(16))

    def hash(self, password: str) -> str:
        return self.hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored``; with nothing stored, a decoy hash is
        checked instead (and the answer is no), so both take the same time."""
        try:
            return self.hasher.verify(stored or self._decoy, password) and stored is not None
        except (VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, stored: str) -> bool:
        return self.hasher.check_needs_rehash(stored)


def check_password(password: str) -> str:
    """A password a person may choose: 10 to 200 characters, not only spaces."""
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD or not password.strip():
        raise Invalid("validation_failed",
                      f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters",
                      field="password")
    return password


def new_password() -> str:
    """A random password (the demo's logins)."""
    return secrets.token_urlsafe(12)


@dataclass(frozen=True, slots=True)
class TokenRef:
    """What a presented token points at: its tenant and the hash it is stored under."""

    tenant_id: TenantId
    digest: bytes


def new_token(prefix: str, tenant_id: TenantId) -> tuple[str, TokenRef]:
    """A fresh token for ``tenant_id`` and the reference it is stored under."""
    raw = tenant_id.bytes + secrets.token_bytes(_RANDOM)
    token = prefix + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return token, TokenRef(tenant_id, hash_token(token))


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def parse_token(prefix: str, token: str | None) -> TokenRef | None:
    """The reference of a presented token, or None if it cannot be one of ours."""
    if not token or not token.startswith(prefix) or len(token) > 200:
        return None
    body = token[len(prefix):]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 16 + _RANDOM:
        return None
    return TokenRef(TenantId(uuid.UUID(bytes=raw[:16])), hash_token(token))


__all__ = ["INVITATION_PREFIX", "REFRESH_PREFIX", "Passwords", "TokenRef", "check_password",
           "hash_token", "new_password", "new_token", "parse_token"]
