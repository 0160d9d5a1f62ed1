"""The replay seal: an answer that holds a secret, kept inside its idempotency record.

An issued API key's answer carries the key's secret, which is stored nowhere else
(only its hash is). To replay that answer, the record keeps the answer's bytes sealed
with AES-256-GCM under a key derived, with HMAC-SHA256, from two things:

- ``IDEMPOTENCY_SECRET``, a process setting that is never written to the database, so
  the database alone (a dump, a backup, a read-only role) cannot open a seal;
- the record's identity (tenant, API key, method and route, Idempotency-Key), also
  bound as associated data, so a sealed answer moved to another record does not open.

A seal lives exactly as long as its record (24 hours). Without the setting nothing is
sealed, and after the setting changes old seals no longer open: either way the replay
is refused with a problem naming what was created, never answered without the secret.

Nothing here is shared with eventstore/sealing.py, which seals personal data in events
under each contact's data key so that erasure reaches it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_LABEL = b"helpdesk idempotency seal v1\n"
_NONCE = 12


def _identity(ident: Sequence[object]) -> bytes:
    return "\n".join(str(part) for part in ident).encode("utf-8")


def _key(server_secret: str, ident: Sequence[object]) -> bytes:
    root = hashlib.sha256(server_secret.encode("utf-8")).digest()
    return hmac.new(root, _LABEL + _identity(ident), hashlib.sha256).digest()


def seal_answer(server_secret: str, ident: Sequence[object], content: bytes) -> bytes:
    """``content`` sealed for the record ``ident``: nonce, then ciphertext and tag."""
    nonce = secrets.token_bytes(_NONCE)
    return nonce + AESGCM(_key(server_secret, ident)).encrypt(nonce, content, _identity(ident))


def open_answer(server_secret: str | None, ident: Sequence[object], sealed: bytes | None
                ) -> bytes | None:
    """The sealed content, or None when it cannot be opened here (no secret set, or
    another secret, or nothing was sealed)."""
    if server_secret is None or sealed is None or len(sealed) <= _NONCE:
        return None
    try:
        return AESGCM(_key(server_secret, ident)).decrypt(sealed[:_NONCE], sealed[_NONCE:],
                                                          _identity(ident))
    except InvalidTag:
        return None


__all__ = ["open_answer", "seal_answer"]
