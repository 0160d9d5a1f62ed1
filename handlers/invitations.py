"""Inviting people: an admin invites an e-mail; the invitee sets a password with the token.

The token is shown once, to the admin who invited (only its sha256 is stored; the
admin passes it on). With a mailbox that sends, it is also mailed to the invitee
(``handlers.mail_notify``: sealed with the mail until it is sent, then forgotten).
It is spent once, before it expires: a spent or expired token is ``Gone`` (410), an
unknown one ``Missing``.
Spending it gives the e-mail's agent a password; the agent is added with the
invitation's name and role if the tenant has none with that e-mail (inviting an
existing agent's e-mail is how an admin lets them set a new password).

Each step is an event on the tenant stream with its actor: ``AgentInvited`` by the
admin; ``AgentAdded`` (for a new agent), ``AgentPasswordSet`` and
``AgentInvitationAccepted`` by the invitee, as the agent they sign in as.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.events import AgentInvitationAccepted, AgentInvited
from domain.ids import AgentId
from domain.values import Role
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from handlers.agents import AddAgent, add_agent
from handlers.credentials import INVITATION_PREFIX, Passwords, new_token, parse_token
from handlers.errors import Gone, Missing
from handlers.mail_notify import Notice, queue_notice, tenant_slug
from handlers.sessions import agent_actor, store_password
from handlers.tenant_events import record

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class InviteAgent:
    email: str
    name: str
    role: Role
    at: datetime
    valid_for: timedelta
    invitation_id: UUID = field(default_factory=uuid.uuid4)


@dataclass(frozen=True, slots=True)
class AcceptInvitation:
    token: str
    password: str
    at: datetime


async def invite(uow: UnitOfWork, command: InviteAgent) -> dict[str, Any]:
    """Store the invitation and record ``AgentInvited``; the answer holds ``token``,
    which is never stored and cannot be shown again."""
    token, ref = new_token(INVITATION_PREFIX, uow.tenant_id)
    expires = command.at + command.valid_for
    row = await uow.conn.fetchrow(Q["insert_invitation"], uow.tenant_id,
                                  command.invitation_id, command.email, command.name,
                                  command.role.value, ref.digest, command.at, expires)
    assert row is not None
    await record(uow, AgentInvited(invitation_id=command.invitation_id, email=command.email,
                                   name=command.name, role=command.role, expires_at=expires,
                                   at=command.at))
    await queue_notice(uow, Notice("invitation", command.email, {
        "name": command.name, "email": command.email, "role": command.role.value,
        "tenant": await tenant_slug(uow.conn, uow.tenant_id), "token": token,
        "expires_at": expires.isoformat()}, f"invitation:{command.invitation_id}"),
        command.at)
    return {**dict(row), "token": token}


def _unknown() -> Missing:
    return Missing("not_found", "no such invitation")


def _gone() -> Gone:
    return Gone("invitation_gone", "the invitation has expired or was spent already; "
                                   "ask an admin for a new one")


async def accept(store: EventStore, passwords: Passwords, command: AcceptInvitation
                 ) -> dict[str, Any]:
    """Spend an invitation: the e-mail's agent (added if new) gets the password.
    Returns the tenant and the agent's id and e-mail.

    Takes the store, not a unit of work: the tenant is the token's, the invitation is
    checked in a read-only transaction, the password hashed outside any, and the
    change runs in a second one acting as the agent."""
    ref = parse_token(INVITATION_PREFIX, command.token)
    if ref is None:
        raise _unknown()
    tenant = ref.tenant_id
    async with store.unit_of_work(tenant, readonly=True) as uow:
        found = await uow.conn.fetchrow(Q["get_invitation"], tenant, ref.digest)
        if found is None:
            raise _unknown()
        existing = await uow.conn.fetchrow(Q["agent_by_email"], tenant, found["email"])
    if found["accepted_at"] is not None or found["expires_at"] <= command.at:
        raise _gone()
    agent_id: UUID = existing["id"] if existing is not None else uuid.uuid4()
    hashed = await asyncio.to_thread(passwords.hash, command.password)
    async with store.unit_of_work(tenant, agent_actor(agent_id)) as uow:
        # Locked and checked again: two people spending one token race here.
        row = await uow.conn.fetchrow(Q["get_invitation_for_update"], tenant, ref.digest)
        assert row is not None
        if row["accepted_at"] is not None:
            raise _gone()
        if existing is None:
            await add_agent(uow, AddAgent(email=row["email"], name=row["name"],
                                          role=Role(row["role"]), at=command.at,
                                          agent_id=AgentId(agent_id)))
        await store_password(uow, agent_id, hashed, command.at)
        await uow.conn.execute(Q["spend_invitation"], tenant, row["id"], command.at, agent_id)
        await record(uow, AgentInvitationAccepted(invitation_id=row["id"],
                                                  agent_id=AgentId(agent_id), at=command.at))
    return {"tenant_id": tenant, "agent_id": agent_id, "email": row["email"]}


__all__ = ["AcceptInvitation", "InviteAgent", "accept", "invite"]
