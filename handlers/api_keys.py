"""API keys: how secrets look and are hashed, and issuing, revoking and listing keys.

A key is ``hd_`` followed by 43 url-safe characters (256 random bits). Only its
sha256 is stored; the first 10 characters are kept as a ``prefix`` so a person can
tell keys apart in a listing. Issuing and revoking are ``ApiKeyIssued`` /
``ApiKeyRevoked`` events on the tenant stream, in the same transaction.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.events import ApiKeyIssued, ApiKeyRevoked
from domain.ids import ApiKeyId, TenantId
from domain.values import Role
from eventstore.sqlfile import load_queries
from eventstore.store import Session
from handlers.errors import Invalid, Missing
from handlers.tenant_events import record

Q = load_queries(Path(__file__).with_name("queries.sql"))

ROLES = tuple(r.value for r in Role)
KEY_PREFIX = "hd_"
# Keys that act as a person may name the agent they act as; machine roles may not.
LINKABLE = frozenset({Role.ADMIN, Role.AGENT})


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


@dataclass(frozen=True, slots=True)
class IssueKey:
    """Issue a key with ``role``; ``agent_id`` names the agent an admin or agent key
    acts as."""

    name: str
    role: Role
    at: datetime
    agent_id: UUID | None = None
    key_id: UUID | None = None


async def issue_key(uow: Session, command: IssueKey) -> IssuedKey:
    """Insert the key and record ``ApiKeyIssued``. Refuses an agent key without an
    agent and an agent link for a machine role (422 ``validation_failed``, naming
    ``agent_id``), and an agent that is not active (``unknown_agent``).

    An agent key is a person's key: what it does is attributed to its agent, and it
    works only while that agent is active (api/http/auth.py ``Principal.barred``).
    Admin keys may act as an agent or as themselves; machine roles never as a person.
    """
    if command.role is Role.AGENT and command.agent_id is None:
        raise Invalid("validation_failed",
                      "an agent key must belong to an agent: give the agent_id of an active "
                      "agent", field="agent_id", reason="required for an agent key",
                      kind="missing")
    if command.agent_id is not None:
        if command.role not in LINKABLE:
            raise Invalid("validation_failed",
                          f"a {command.role.value} key cannot act as an agent; agent_id is "
                          "for admin and agent keys", field="agent_id")
        agent = await uow.conn.fetchrow(Q["get_agent"], uow.tenant_id, command.agent_id)
        if agent is None or not agent["active"]:
            raise Invalid("unknown_agent", "agent_id names no active agent of this tenant",
                          field="agent_id")
    secret = new_secret()
    row = await uow.conn.fetchrow(
        Q["insert_api_key"], uow.tenant_id, command.key_id or uuid.uuid4(), command.name,
        command.role.value, secret[:10], hash_secret(secret), command.agent_id)
    assert row is not None
    issued = IssuedKey(TenantId(row["tenant_id"]), row["id"], row["name"], row["role"],
                       row["prefix"], row["agent_id"], row["created_at"], secret)
    await record(uow, ApiKeyIssued(key_id=ApiKeyId(issued.id), name=issued.name,
                                   role=command.role, prefix=issued.prefix, at=command.at))
    return issued


async def revoke_key(uow: Session, key_id: UUID, at: datetime) -> dict[str, Any]:
    """Revoke a key (revoking twice keeps the first instant and records one event);
    returns the key's row."""
    row = await uow.conn.fetchrow(Q["revoke_api_key"], uow.tenant_id, key_id, at)
    if row is None:
        raise Missing("not_found", "no such API key")
    if row["changed"]:
        await record(uow, ApiKeyRevoked(key_id=ApiKeyId(key_id), at=at))
    out = dict(row)
    del out["changed"]
    return out


async def list_keys(uow: Session, after: tuple[datetime, UUID] | None,
                    limit: int) -> Sequence[Any]:
    """The tenant's keys in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    rows: Sequence[Any] = await uow.conn.fetch(Q["list_api_keys"], uow.tenant_id, at, last,
                                              limit)
    return rows


__all__ = ["KEY_PREFIX", "LINKABLE", "ROLES", "IssueKey", "IssuedKey", "hash_secret",
           "issue_key", "list_keys", "new_secret", "revoke_key"]
