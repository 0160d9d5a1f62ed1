"""Access tokens of signed-in people: short-lived, signed, self-describing.

An access token is a JWT (RFC 7519) signed with HMAC-SHA256: it carries the tenant
(``tid``), the agent (``sub``), the session (``sid``), the role at issue (``role``) and
its expiry (``exp``, ``ACCESS_TOKEN_MINUTES`` after issue). The signing key is
``ACCESS_TOKEN_SECRET``, or else the random secret the migrations store in the
database (``instance_secrets``), so every process on a database agrees with no
configuration.

A valid signature is not enough to act: every request also finds the token's session
still open and its agent still active (api/http/keycache.py, remembered for a few
seconds and forgotten in every process the moment a session is revoked or an agent
changes), and acts with the agent's *current* role. So signing out, a refresh-token
replay and deactivating an agent stop the access tokens at once, not after their
lifetime; the role in the token is what it was at issue, for the holder to read.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

import orjson

from domain.ids import TenantId

_HEADER = base64.urlsafe_b64encode(orjson.dumps({"alg": "HS256", "typ": "JWT"})).rstrip(b"=")
ISSUER = "helpdesk"


@dataclass(frozen=True, slots=True)
class Claims:
    """What a valid access token says."""

    tenant_id: TenantId
    agent_id: UUID
    session_id: UUID
    role: str
    expires_at: datetime


def _b64(raw: bytes) -> bytes:
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def looks_like_access_token(token: str) -> bool:
    """Whether a bearer credential is an access token (API keys begin ``hd_``)."""
    return token.startswith(_HEADER.decode("ascii") + ".")


class AccessTokens:
    """Issues and checks access tokens under one signing key."""

    def __init__(self, key: bytes, ttl: timedelta, purpose: str = "access token") -> None:
        # The purpose is part of the signing key: a portal token (a customer's) is no
        # staff access token, and the other way round, whatever its claims say.
        self._raw = key
        self._key = hashlib.sha256(f"helpdesk {purpose} v1\n".encode() + key).digest()
        self.ttl = ttl

    def for_purpose(self, purpose: str, ttl: timedelta) -> AccessTokens:
        """Tokens of another kind under the same secret, that neither kind accepts for
        the other."""
        return AccessTokens(self._raw, ttl, purpose)

    def _sign(self, signing_input: bytes) -> bytes:
        return hmac.new(self._key, signing_input, hashlib.sha256).digest()

    def issue(self, *, tenant_id: TenantId, agent_id: UUID, session_id: UUID, role: str,
              now: datetime) -> tuple[str, datetime]:
        """A token for the session and when it expires (whole seconds, as in the token)."""
        issued = int(now.timestamp())
        expires = issued + int(self.ttl.total_seconds())
        payload = {"iss": ISSUER, "tid": str(tenant_id), "sub": str(agent_id),
                   "sid": str(session_id), "role": role, "iat": issued, "exp": expires}
        signing_input = _HEADER + b"." + _b64(orjson.dumps(payload))
        token = signing_input + b"." + _b64(self._sign(signing_input))
        return token.decode("ascii"), datetime.fromtimestamp(expires, UTC)

    def claims(self, token: str, now: datetime, *, expiry: bool = True) -> Claims | None:
        """The token's claims, or None when it is malformed, forged or (unless
        ``expiry`` is false) expired."""
        if len(token) > 2000 or token.count(".") != 2:
            return None
        signing_input, _, signature = token.rpartition(".")
        try:
            given = _unb64(signature)
            if not hmac.compare_digest(given, self._sign(signing_input.encode("ascii"))):
                return None
            payload = orjson.loads(_unb64(signing_input.split(".")[1]))
            expires = datetime.fromtimestamp(int(payload["exp"]), UTC)
            claims = Claims(TenantId(uuid.UUID(payload["tid"])), uuid.UUID(payload["sub"]),
                            uuid.UUID(payload["sid"]), str(payload["role"]), expires)
        except (binascii.Error, ValueError, KeyError, TypeError, AttributeError,
                OverflowError, OSError, UnicodeEncodeError, orjson.JSONDecodeError):
            # A claim of the wrong type (a number for a uuid) or out of range (an
            # expiry the platform's clock cannot hold) makes the token as bad as a forged one.
            return None
        if payload.get("iss") != ISSUER or (expiry and expires <= now):
            return None
        return claims


__all__ = ["AccessTokens", "Claims", "looks_like_access_token"]
