"""Data keys of data subjects, one per (tenant, subject), wrapped by the
key-encryption key (``DATA_KEY``, or the ``data_key`` instance secret).

A data key is 32 random bytes, stored only wrapped (AES-256-GCM under the
key-encryption key, bound to its tenant and subject, so a wrapped key copied onto
another row does not open). Erasing a subject overwrites its wrapped key with NULL;
the row stays as a tombstone so no later append makes it a new key. Rotating the
key-encryption key re-wraps these rows only: no event is rewritten.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from uuid import UUID

import asyncpg
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from eventstore.errors import EventStoreError
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))

KEY_BYTES = 32
NONCE_BYTES = 12


class SubjectErased(EventStoreError):
    """Personal data of an erased subject cannot be written again."""

    code = "subject_erased"

    def __init__(self, subject_id: UUID) -> None:
        super().__init__(f"data subject {subject_id} was erased")
        self.subject_id = subject_id


class Keyring:
    """Wraps, unwraps, makes and reads data keys under one key-encryption key."""

    def __init__(self, secret: bytes) -> None:
        # Hashed so any secret (a setting's text, the stored random bytes) makes a
        # 256-bit key.
        self._kek = AESGCM(hashlib.sha256(b"helpdesk data keys|" + secret).digest())

    def wrap(self, tenant_id: UUID, subject_id: UUID, key: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._kek.encrypt(nonce, key, _bound(tenant_id, subject_id))

    def unwrap(self, tenant_id: UUID, subject_id: UUID, wrapped: bytes) -> bytes:
        return self._kek.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:],
                                 _bound(tenant_id, subject_id))

    async def take(self, conn: asyncpg.Connection, tenant_id: UUID, subject_id: UUID) -> bytes:
        """The subject's data key, made now if it has none, its row held FOR SHARE
        until commit; ``SubjectErased`` if the subject was erased."""
        fresh = os.urandom(KEY_BYTES)  # wrapped on the chance it is new: one round trip
        row = await conn.fetchrow(Q["data_key_take"], tenant_id, subject_id,
                                  self.wrap(tenant_id, subject_id, fresh))
        if row["made"]:
            return fresh
        if not row["found"]:
            # Another transaction made it first, and has committed by now.
            row = await conn.fetchrow(Q["data_key_hold"], tenant_id, subject_id)
        if row is None or row["wrapped"] is None:
            raise SubjectErased(subject_id)
        return self.unwrap(tenant_id, subject_id, bytes(row["wrapped"]))

    async def read(self, conn: asyncpg.Connection, tenant_id: UUID,
                   subject_ids: Iterable[UUID]) -> dict[UUID, bytes | None]:
        """The data keys of these subjects; None for an erased one (or one with none)."""
        wanted = list(set(subject_ids))
        if not wanted:
            return {}
        rows = await conn.fetch(Q["data_keys_read"], tenant_id, wanted)
        keys: dict[UUID, bytes | None] = dict.fromkeys(wanted)
        for r in rows:
            if r["wrapped"] is not None:
                keys[r["subject_id"]] = self.unwrap(tenant_id, r["subject_id"],
                                                    bytes(r["wrapped"]))
        return keys

    async def erase(self, conn: asyncpg.Connection, tenant_id: UUID, subject_id: UUID) -> None:
        """Destroy the subject's key (waiting for appends that hold it to commit)."""
        await conn.execute(Q["data_key_erase"], tenant_id, subject_id)


def _bound(tenant_id: UUID, subject_id: UUID) -> bytes:
    return f"helpdesk/data-key|{tenant_id}|{subject_id}".encode()


__all__ = ["Keyring", "SubjectErased"]
