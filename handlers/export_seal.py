"""The rows of a tenant export, sealed so that the file shows nothing of the tenant
without the transport key (handlers/tenant_move.py).

The events of an export hold their personal fields sealed by their subjects' data keys
(eventstore/sealing.py), and those keys travel wrapped by the transport key. The read
models do not: ``contacts``, ``tickets``, ``messages``, ``search_documents`` and their
neighbours keep names, addresses and bodies as text, which is how they are queried. So
every row of the export travels sealed: the export makes a data key of its own (the
state key), wraps it by the transport key as the tenant's data keys are wrapped (bound
to the tenant and to ``STATE_SUBJECT``), and seals each batch of rows with it
(AES-256-GCM). The associated data binds the tenant, the table and the line's place
among the state lines, so a batch moved to another table or place, or altered, fails to
open, and the end line's count catches one left out.

Pure computation: the caller reads and writes the lines.
"""

from __future__ import annotations

import base64
import os
import uuid
from dataclasses import dataclass
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from eventstore.keys import Keyring, WrongDataKey

STATE_SUBJECT = uuid.UUID("5eed0000-0000-4000-8000-00000000e0e0")
"""The subject the state key is wrapped for: no contact's (contact ids are random)."""

NONCE_BYTES = 12


class SealBroken(Exception):
    """A sealed part of the export did not open: not the transport key, or altered."""


@dataclass(frozen=True, slots=True)
class StateSeal:
    """The state key of one export, for one tenant."""

    tenant_id: UUID
    key: bytes

    @classmethod
    def new(cls, tenant_id: UUID) -> StateSeal:
        return cls(tenant_id, AESGCM.generate_key(bit_length=256))

    @classmethod
    def unwrapped(cls, tenant_id: UUID, transport: Keyring, wrapped_hex: str) -> StateSeal:
        """The state key of an export header, opened by the transport key."""
        try:
            key = transport.unwrap(tenant_id, STATE_SUBJECT, bytes.fromhex(wrapped_hex))
        except (WrongDataKey, ValueError) as exc:  # ValueError: not hex, not a key
            raise SealBroken("the state key of the export does not open with the "
                             "transport key") from exc
        return cls(tenant_id, key)

    def wrapped(self, transport: Keyring) -> str:
        """The state key wrapped by the transport key, as the header carries it."""
        return transport.wrap(self.tenant_id, STATE_SUBJECT, self.key).hex()

    def _aad(self, table: str, line: int) -> bytes:
        return f"helpdesk/export-rows|{self.tenant_id}|{table}|{line}".encode()

    def seal(self, table: str, line: int, plain: bytes) -> str:
        """``plain`` (rows of ``table`` on state line ``line``) sealed, as base64."""
        nonce = os.urandom(NONCE_BYTES)
        box = AESGCM(self.key).encrypt(nonce, plain, self._aad(table, line))
        return base64.b64encode(nonce + box).decode("ascii")

    def open(self, table: str, line: int, sealed: str) -> bytes:
        """What ``seal`` sealed; ``SealBroken`` when it does not open there."""
        try:
            # A line that is not base64, or too short to hold a nonce, was altered too.
            raw = base64.b64decode(sealed, validate=True)
            return AESGCM(self.key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:],
                                            self._aad(table, line))
        except (InvalidTag, ValueError) as exc:
            raise SealBroken(f"the rows of {table} on state line {line} do not open: the "
                             "export was altered") from exc


__all__ = ["STATE_SUBJECT", "SealBroken", "StateSeal"]
