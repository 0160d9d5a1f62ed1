"""API key secrets: how they look, how they are hashed, how they are issued.

A key is ``hd_`` followed by 43 url-safe characters (256 random bits). Only its
sha256 is stored; the first 10 characters are kept as a ``prefix`` so a person can
tell keys apart in a listing.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))

ROLES = ("admin", "agent", "intake", "analyst", "auditor")
KEY_PREFIX = "hd_"


def new_secret() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


@dataclass(frozen=True, slots=True)
class IssuedKey:
    """A freshly issued key; ``secret`` is shown once and never stored."""

    tenant_id: TenantId
    id: UUID
    name: str
    role: str
    prefix: str
    agent_id: UUID | None
    created_at: datetime
    secret: str


async def insert_key(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    *,
    name: str,
    role: str,
    agent_id: UUID | None = None,
    key_id: UUID | None = None,
) -> IssuedKey:
    """Insert a new key row (inside the caller's tenant-armed transaction)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    secret = new_secret()
    kid = key_id or uuid.uuid4()
    row = await conn.fetchrow(
        Q["insert_api_key"], tenant_id, kid, name, role, secret[:10], hash_secret(secret),
        agent_id,
    )
    assert row is not None
    return IssuedKey(TenantId(row["tenant_id"]), row["id"], row["name"], row["role"],
                     row["prefix"], row["agent_id"], row["created_at"], secret)
