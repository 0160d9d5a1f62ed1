"""API keys: how secrets look and are hashed, and issuing, revoking and listing keys.

A key is ``hd_`` followed by 43 url-safe characters (256 random bits). Only its
sha256 is stored; the first 10 characters are kept as a ``prefix`` so a person can
tell keys apart in a listing. Each key is an aggregate (``domain.api_key``) whose
events (``ApiKeyIssued``, ``ApiKeyRevoked``) are on the tenant stream; its
``api_keys`` row is its state, written in the same transaction as the events. Here
the secret is minted, and the rule that needs the tenant's rows is checked: the agent
a key acts as is an active agent of the tenant.
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

from domain.api_key import (
    LINKABLE,
    AgentLinkRefused,
    ApiKey,
    IssueApiKey,
    RevokeApiKey,
    ScopesRefused,
    decide_api_key,
)
from domain.events import ApiKeyIssued
from domain.ids import AgentId, ApiKeyId, TenantId
from domain.values import Role
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Invalid, Missing
from handlers.tenant_events import record_all

Q = load_queries(Path(__file__).with_name("queries.sql"))

ROLES = tuple(r.value for r in Role)
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
    scopes: list[str] | None
    created_at: datetime
    secret: str


@dataclass(frozen=True, slots=True)
class IssueKey:
    """Issue a key with ``role``; ``agent_id`` names the agent an admin or agent key
    acts as; ``scopes`` narrow it to those permissions (None: all its role's), which
    must lie within ``role_permissions`` while what it holds lies within
    ``issuer_permissions`` (None: not checked; the operator and the demo issue keys
    as nobody). The request: the handler mints the id (unless given) and the secret,
    and the domain decides ``IssueApiKey``."""

    name: str
    role: Role
    at: datetime
    agent_id: UUID | None = None
    key_id: UUID | None = None
    scopes: frozenset[str] | None = None
    role_permissions: frozenset[str] | None = None
    issuer_permissions: frozenset[str] | None = None


async def issue_key(uow: UnitOfWork, command: IssueKey) -> IssuedKey:
    """Insert the key and record ``ApiKeyIssued``. Refuses an agent key without an
    agent and an agent link for a machine role (422 ``validation_failed``, naming
    ``agent_id``), an agent that is not active (``unknown_agent``), and scopes beyond
    the role's or beyond what the issuer holds (``excess_scopes``, naming the excess).

    An agent key is a person's key: what it does is attributed to its agent, and it
    works only while that agent is active (api/http/auth.py ``Principal.barred``).
    Admin keys may act as an agent or as themselves; machine roles never as a person.
    """
    secret = new_secret()
    agent_id = None if command.agent_id is None else AgentId(command.agent_id)
    decided = IssueApiKey(key_id=ApiKeyId(command.key_id or uuid.uuid4()), name=command.name,
                          role=command.role, prefix=secret[:10], agent_id=agent_id,
                          scopes=None if command.scopes is None else tuple(command.scopes),
                          role_permissions=command.role_permissions,
                          issuer_permissions=command.issuer_permissions, at=command.at)
    try:
        events = decide_api_key(decided, None)
    except AgentLinkRefused as exc:
        raise Invalid("validation_failed", exc.message, field=exc.field, reason=exc.reason,
                      kind=exc.kind) from exc
    except ScopesRefused as exc:
        if not exc.excess:
            raise Invalid("validation_failed", exc.message, field="scopes") from exc
        raise Invalid("excess_scopes", exc.message, field="scopes",
                      excess=exc.excess) from exc
    issued_scopes = events[0].scopes if isinstance(events[0], ApiKeyIssued) else None
    if command.agent_id is not None:
        agent = await uow.conn.fetchrow(Q["get_agent"], uow.tenant_id, command.agent_id)
        if agent is None or not agent["active"]:
            raise Invalid("unknown_agent", "agent_id names no active agent of this tenant",
                          field="agent_id")
    row = await uow.conn.fetchrow(
        Q["insert_api_key"], uow.tenant_id, decided.key_id, decided.name, decided.role.value,
        decided.prefix, hash_secret(secret), decided.agent_id,
        None if issued_scopes is None else list(issued_scopes))
    assert row is not None
    issued = IssuedKey(TenantId(row["tenant_id"]), row["id"], row["name"], row["role"],
                       row["prefix"], row["agent_id"], row["scopes"], row["created_at"],
                       secret)
    await record_all(uow, events)
    return issued


def key_of_row(row: Any) -> ApiKey:
    """A key's state from its row."""
    return ApiKey.model_validate({k: row[k] for k in ApiKey.model_fields})


async def revoke_key(uow: UnitOfWork, key_id: UUID, at: datetime) -> dict[str, Any]:
    """Revoke a key (revoking twice keeps the first instant and records one event);
    returns the key's row."""
    row = await uow.conn.fetchrow(Q["get_api_key_for_update"], uow.tenant_id, key_id)
    if row is None:
        raise Missing("not_found", "no such API key")
    events = decide_api_key(RevokeApiKey(at=at), key_of_row(row))
    if not events:
        return dict(row)
    revoked = await uow.conn.fetchrow(Q["revoke_api_key"], uow.tenant_id, key_id, at)
    assert revoked is not None
    await record_all(uow, events)
    return dict(revoked)


async def list_keys(uow: UnitOfWork, after: tuple[datetime, UUID] | None,
                    limit: int) -> Sequence[Any]:
    """The tenant's keys in ``(created_at, id)`` order, after ``after``."""
    at, last = after if after is not None else (None, None)
    rows: Sequence[Any] = await uow.conn.fetch(Q["list_api_keys"], uow.tenant_id, at, last,
                                              limit)
    return rows


__all__ = ["KEY_PREFIX", "LINKABLE", "ROLES", "IssueKey", "IssuedKey", "hash_secret",
           "issue_key", "list_keys", "new_secret", "revoke_key"]
