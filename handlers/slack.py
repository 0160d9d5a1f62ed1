"""A tenant's Slack connection: the channel tickets come in from and replies go out to.

One per tenant, dormant until an admin connects it with a channel id, the app's bot
token (``xoxb-...``) and its signing secret. Both secrets are sealed by the
key-encryption key (``Keyring.wrap``, bound to the tenant and the connection's id, as a
mailbox's passwords are) and never returned. Nothing here calls Slack: a wrong token or
channel is found out when a post fails, and says so in ``last_error``.

The connection is configuration of the tenant, like its mailboxes: connecting,
changing and disconnecting are events on the tenant stream (``SlackConnected``,
``SlackChanged``, ``SlackDisconnected``) in the row's own transaction, holding what the
API shows (never a secret; a change says whether a new one was given). Disconnecting
keeps the threads of Slack tickets: connected again to the same channel, their replies
thread on; posts still queued when it went find no connection and go ``dead``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.events import SlackChanged, SlackConnected, SlackDisconnected
from domain.ids import TenantId
from domain.slack import NOTICES
from eventstore.keys import Keyring
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, Missing
from handlers.tenant_events import record

Q = load_queries(Path(__file__).with_name("slack.sql"))


@dataclass(frozen=True, slots=True)
class ConnectSlack:
    """Connect, or change the connection. A secret left None keeps the current one (and
    must be given to connect); ``notices`` None keeps the current choice."""

    channel_id: str
    bot_user_id: str | None
    bot_token: str | None
    signing_secret: str | None
    notices: dict[str, bool] | None
    at: datetime


@dataclass(frozen=True, slots=True)
class SlackAccess:
    """What posting needs: the channel and the opened bot token."""

    integration_id: UUID
    channel_id: str
    bot_token: str
    notices: dict[str, bool]


def integration_document(row: Any) -> dict[str, Any]:
    """The connection as the API shows it: never a secret."""
    return {"id": row["id"], "channel_id": row["channel_id"],
            "bot_user_id": row["bot_user_id"], "notices": notices_of(row["notices"]),
            "events_url": f"/v1/inbound/slack/{row['id']}", "status": status_of(row),
            "last_error": row["last_error"], "last_error_at": row["last_error_at"],
            "version": row["version"], "created_at": row["created_at"],
            "updated_at": row["updated_at"]}


def notices_of(stored: Any) -> dict[str, bool]:
    given = dict(stored or {})
    return {kind: bool(given.get(kind, False)) for kind in NOTICES}


def status_of(row: Any) -> str:
    """``degraded`` while its last post failed, else ``ok``."""
    failed, ok = row["last_error_at"], row["last_ok_at"]
    return "degraded" if failed is not None and (ok is None or ok < failed) else "ok"


def _seal(keyring: Keyring | None, tenant: UUID, integration: UUID, secret: str
          ) -> tuple[bytes, str]:
    if keyring is None:
        raise Conflict("files_unavailable", "secrets need sealing, which this store lacks")
    return keyring.wrap(tenant, integration, secret.encode("utf-8")), keyring.fingerprint


async def connect_slack(uow: UnitOfWork, command: ConnectSlack) -> tuple[dict[str, Any], bool]:
    """The connection after ``command``, and whether it was made by it (not changed)."""
    conn, tenant = uow.conn, uow.tenant_id
    current = await conn.fetchrow(Q["integration_lock"], tenant)
    if current is None:
        if command.bot_token is None or command.signing_secret is None:
            missing = "bot_token" if command.bot_token is None else "signing_secret"
            raise Invalid("validation_failed", f"{missing} is required to connect Slack",
                          field=missing)
        integration = uuid.uuid4()
        token, token_kek = _seal(uow.keyring, tenant, integration, command.bot_token)
        secret, secret_kek = _seal(uow.keyring, tenant, integration, command.signing_secret)
        notices = notices_of(command.notices)
        row = await conn.fetchrow(Q["integration_insert"], tenant, integration,
                                  command.channel_id, command.bot_user_id, token, token_kek,
                                  secret, secret_kek, notices, command.at)
        if row is None:
            raise Conflict("slack_connected", "Slack was connected meanwhile; send it again "
                           "to change that connection")
        await record(uow, SlackConnected(integration_id=integration,
                                         channel_id=row["channel_id"],
                                         bot_user_id=row["bot_user_id"], notices=notices,
                                         at=command.at))
        return integration_document(row), True
    integration = current["id"]
    token, token_kek = current["bot_token"], current["bot_token_kek"]
    if command.bot_token is not None:
        token, token_kek = _seal(uow.keyring, tenant, integration, command.bot_token)
    secret, secret_kek = current["signing_secret"], current["signing_secret_kek"]
    if command.signing_secret is not None:
        secret, secret_kek = _seal(uow.keyring, tenant, integration, command.signing_secret)
    notices = notices_of(current["notices"] if command.notices is None else command.notices)
    row = await conn.fetchrow(Q["integration_update"], tenant, command.channel_id,
                              command.bot_user_id, token, token_kek, secret, secret_kek,
                              notices, command.at)
    assert row is not None
    await record(uow, SlackChanged(
        integration_id=integration, channel_id=row["channel_id"],
        bot_user_id=row["bot_user_id"], notices=notices,
        bot_token_changed=command.bot_token is not None,
        signing_secret_changed=command.signing_secret is not None, at=command.at))
    return integration_document(row), False


async def disconnect_slack(uow: UnitOfWork, at: datetime) -> dict[str, Any]:
    """Disconnect (module docstring); what the connection was."""
    row = await uow.conn.fetchrow(Q["integration_delete"], uow.tenant_id)
    if row is None:
        raise Missing("slack_not_connected", "the tenant has not connected Slack")
    await record(uow, SlackDisconnected(integration_id=row["id"],
                                        channel_id=row["channel_id"], at=at))
    return integration_document(row)


async def get_slack(uow: UnitOfWork) -> dict[str, Any] | None:
    conn, tenant_id = uow.conn, uow.tenant_id
    row = await conn.fetchrow(Q["integration_get"], tenant_id)
    return None if row is None else integration_document(row)


async def slack_access(uow: UnitOfWork) -> SlackAccess | None:
    """The connection with its bot token opened with the unit of work's keyring (None:
    not connected)."""
    keyring, tenant_id = uow.keyring, uow.tenant_id
    row = await uow.conn.fetchrow(Q["integration_get"], tenant_id)
    if row is None:
        return None
    assert keyring is not None
    token = keyring.unwrap(tenant_id, row["id"], bytes(row["bot_token"]),
                           row["bot_token_kek"]).decode("utf-8")
    return SlackAccess(integration_id=row["id"], channel_id=row["channel_id"],
                       bot_token=token, notices=notices_of(row["notices"]))


async def inbound_secret(conn: asyncpg.Connection, keyring: Keyring | None,
                         integration_id: UUID) -> tuple[TenantId, str] | None:
    """The tenant and opened signing secret of the connection the Events API route
    names, before its tenant is known; None for no such connection."""
    row = await conn.fetchrow(Q["integration_lookup"], integration_id)
    if row is None or keyring is None:
        return None
    secret = keyring.unwrap(row["tenant_id"], integration_id, bytes(row["signing_secret"]),
                            row["signing_secret_kek"]).decode("utf-8")
    return TenantId(row["tenant_id"]), secret


async def slack_health(conn: asyncpg.Connection) -> tuple[int, int]:
    """(connections, connections whose last post failed), over every tenant."""
    row = await conn.fetchrow(Q["slack_health"])
    assert row is not None
    return int(row["integrations"]), int(row["failing"])


async def record_use(conn: asyncpg.Connection, tenant_id: TenantId, at: datetime,
                     error: str | None) -> None:
    """Note that Slack took a post (``error`` None) or failed to."""
    if error is None:
        await conn.execute(Q["integration_ok"], tenant_id, at)
    else:
        await conn.execute(Q["integration_failed"], tenant_id, error[:500], at)


__all__ = ["ConnectSlack", "SlackAccess", "connect_slack", "disconnect_slack", "get_slack",
           "inbound_secret", "integration_document", "record_use", "slack_access",
           "slack_health"]
