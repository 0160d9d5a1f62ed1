"""Data keys of data subjects, one per (tenant, subject), wrapped by the
key-encryption key (``DATA_KEY``, or the ``data_key`` instance secret).

A data key is 32 random bytes, stored only wrapped (AES-256-GCM under the
key-encryption key, bound to its tenant and subject, so a wrapped key copied onto
another row does not open). Erasing a subject overwrites its wrapped key with NULL;
the row stays as a tombstone so no later append makes it a new key.

Each row names the key-encryption key that wraps it by a fingerprint (``kek``; NULL
for rows wrapped before rows named it). A keyring knows the current key-encryption
key and, while it is being rotated, the previous one: it wraps with the current one
and unwraps with whichever the row names. Rotating re-wraps these rows only
(``rewrap``), in batches; no event is rewritten. A key-encryption key that does not
unwrap a row is ``WrongDataKey``, never a crash.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from uuid import UUID

import asyncpg
from cryptography.exceptions import InvalidTag
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


class WrongDataKey(EventStoreError):
    """The key-encryption key of this process does not unwrap a data key: DATA_KEY
    differs from the key that wrapped it (or DATA_KEY_PREVIOUS is missing while a
    rotation is under way)."""

    code = "data_key_mismatch"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Kek:
    """One key-encryption key and its fingerprint (which names it in ``data_keys.kek``
    and says nothing about it)."""

    def __init__(self, secret: bytes) -> None:
        # Hashed so any secret (a setting's text, the stored random bytes) makes a
        # 256-bit key.
        key = hashlib.sha256(b"helpdesk data keys|" + secret).digest()
        self.aead = AESGCM(key)
        self.fingerprint = hashlib.sha256(b"helpdesk kek fingerprint|" + key).hexdigest()[:16]


class Keyring:
    """Wraps, unwraps, makes and reads data keys under the current key-encryption key
    (``secret``), and unwraps those still wrapped by the ``previous`` one."""

    def __init__(self, secret: bytes, previous: bytes | None = None) -> None:
        self._current = _Kek(secret)
        self._keks = {self._current.fingerprint: self._current}
        self.mismatch: str | None = None
        """The last data key this keyring could not unwrap, said as ``WrongDataKey``
        said it (for readiness); None while every one opened."""
        if previous is not None:
            old = _Kek(previous)
            self._keks.setdefault(old.fingerprint, old)

    @property
    def fingerprint(self) -> str:
        """The current key-encryption key's fingerprint: what new rows are wrapped by."""
        return self._current.fingerprint

    @property
    def fingerprints(self) -> frozenset[str]:
        """Every key-encryption key this keyring unwraps with."""
        return frozenset(self._keks)

    def wrap(self, tenant_id: UUID, subject_id: UUID, key: bytes) -> bytes:
        nonce = os.urandom(NONCE_BYTES)
        return nonce + self._current.aead.encrypt(nonce, key, _bound(tenant_id, subject_id))

    def unwrap(self, tenant_id: UUID, subject_id: UUID, wrapped: bytes,
               kek: str | None = None) -> bytes:
        """The data key in ``wrapped``, under the key-encryption key named ``kek`` (any
        this keyring knows when None); ``WrongDataKey`` when none of them opens it."""
        if kek is None:
            candidates = list(self._keks.values())
        elif kek in self._keks:
            candidates = [self._keks[kek]]
        else:
            self.mismatch = (f"data keys are wrapped by key-encryption key {kek}, and "
                             f"DATA_KEY is {self.fingerprint}: set DATA_KEY (and "
                             "DATA_KEY_PREVIOUS during a rotation) to the key that wrapped "
                             "them")
            raise WrongDataKey(self.mismatch)
        for candidate in candidates:
            try:
                return candidate.aead.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:],
                                              _bound(tenant_id, subject_id))
            except InvalidTag:
                continue
        self.mismatch = (f"DATA_KEY ({self.fingerprint}) does not unwrap the data key of "
                         f"subject {subject_id}: set DATA_KEY to the key that wrapped it "
                         "(or the row was altered)")
        raise WrongDataKey(self.mismatch)

    async def take(self, conn: asyncpg.Connection, tenant_id: UUID, subject_id: UUID) -> bytes:
        """The subject's data key, made now if it has none, its row held FOR SHARE
        until commit; ``SubjectErased`` if the subject was erased."""
        fresh, wrapped = self.make(tenant_id, subject_id)  # on the chance it is new:
        row = await conn.fetchrow(Q["data_key_take"], tenant_id, subject_id, wrapped,
                                  self.fingerprint)  # one round trip either way
        if row["made"]:
            return fresh
        if not row["found"]:
            # Another transaction made it first, and has committed by now.
            row = await conn.fetchrow(Q["data_key_hold"], tenant_id, subject_id)
        if row is None or row["wrapped"] is None:
            raise SubjectErased(subject_id)
        return self.unwrap(tenant_id, subject_id, bytes(row["wrapped"]), row["kek"])

    def make(self, tenant_id: UUID, subject_id: UUID) -> tuple[bytes, bytes]:
        """A new data key for a subject and its wrapped form, to store with
        ``data_key_new`` (eventstore/queries.sql)."""
        fresh = os.urandom(KEY_BYTES)
        return fresh, self.wrap(tenant_id, subject_id, fresh)

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
                                                    bytes(r["wrapped"]), r["kek"])
        return keys

    async def erase(self, conn: asyncpg.Connection, tenant_id: UUID, subject_id: UUID) -> None:
        """Destroy the subject's key (waiting for appends that hold it to commit)."""
        await conn.execute(Q["data_key_erase"], tenant_id, subject_id)

    async def rewrap(self, conn: asyncpg.Connection, tenant_id: UUID, batch: int,
                     after: UUID | None = None) -> list[UUID]:
        """Re-wrap up to ``batch`` of the tenant's live data keys not yet wrapped by the
        current key-encryption key, in subject order after ``after``; the subjects
        re-wrapped. Rows are locked (an append holding one commits first, an erasure
        waits) and change in the caller's transaction: commit it per batch, and call
        again after the last subject until none is left. Already re-wrapped rows are
        never picked again, so a rotation stopped half way resumes where it was."""
        rows = await conn.fetch(Q["data_keys_stale"], tenant_id, self.fingerprint, batch,
                                after)
        if not rows:
            return []
        subjects = [r["subject_id"] for r in rows]
        wrapped = [self.wrap(tenant_id, r["subject_id"],
                             self.unwrap(tenant_id, r["subject_id"], bytes(r["wrapped"]),
                                         r["kek"]))
                   for r in rows]
        await conn.execute(Q["data_keys_rewrap"], tenant_id, subjects, wrapped,
                           self.fingerprint)
        return subjects


async def kek_census(conn: asyncpg.Connection) -> dict[str | None, int]:
    """Every tenant's live data keys counted by the key-encryption key that wraps them
    (None: rows from before rows named it). Fingerprints and counts only."""
    return {r["kek"]: r["keys"] for r in await conn.fetch(Q["data_key_census"])}


def unknown_keks(keyring: Keyring, census: dict[str | None, int]) -> dict[str, int]:
    """The key-encryption keys of the census this keyring cannot unwrap with."""
    return {kek: n for kek, n in census.items()
            if kek is not None and kek not in keyring.fingerprints}


def _bound(tenant_id: UUID, subject_id: UUID) -> bytes:
    return f"helpdesk/data-key|{tenant_id}|{subject_id}".encode()


__all__ = ["Keyring", "SubjectErased", "WrongDataKey", "kek_census", "unknown_keks"]
