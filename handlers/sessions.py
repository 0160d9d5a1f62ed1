"""Staff sign-in sessions: sign in with e-mail and password, refresh, sign out.

A sign-in opens a session, the family of refresh tokens it rotates through. Each
refresh spends its token and hands out the next; a token presented a second time
means someone else holds a copy, so the whole session is revoked (``replay``) and
every token of it stops working. A refresh token lives ``refresh_ttl`` from its issue
(sliding: each refresh starts it again), never past the session's absolute cap.

Every failure is one ``NotAuthenticated`` with one message, whatever the reason (an
unknown tenant or e-mail, another tenant's e-mail, a deactivated agent, a wrong
password, an agent with no password yet), and the password hash is computed on every
path (``Passwords.verify``), so neither the answer nor its timing tells them apart.
The tenant may be typed as its id or its slug; an unknown one is one more such reason.
Too many failures for one account or from one address are paused with a backoff,
counted in Postgres (handlers/sign_in_throttle.py), alike for accounts that exist and
accounts that do not.

Signing in and out, and a revocation on replay, are events on the tenant stream with
the agent as actor. A refresh is not: it changes nothing a person did.

The checks run in a short read-only unit of work, the hash outside any transaction
(on a thread: it takes tens of milliseconds of CPU), and the changes in a second unit
of work whose actor is the agent the first one found. That is why ``sign_in``,
``refresh`` and ``sign_out`` take the store rather than a unit of work (the tenant is
the token's or the command's, the actor is known only after the first read), and
``issue_refresh`` and ``end_session`` take the unit of work their caller opened.

Signing in, refreshing and signing out are the same for the customer portal's
sessions: one implementation, told apart by a ``SessionKind`` (which tables hold the
logins and sessions, whose actor acts, which events record a sign-in, a sign-out or a
revocation). ``STAFF`` is here; the
portal's kind is ``handlers.portal.PORTAL``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal
from uuid import UUID

from domain.events import (
    AgentPasswordSet,
    AgentSessionRevoked,
    AgentSignedIn,
    AgentSignedOut,
    Event,
)
from domain.ids import AgentId, TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers.credentials import REFRESH_PREFIX, Passwords, new_token, parse_token
from handlers.errors import NotAuthenticated
from handlers.sign_in_throttle import Attempt, Throttle
from handlers.sign_in_throttle import check as throttle_check
from handlers.sign_in_throttle import failed as count_failure
from handlers.sign_in_throttle import succeeded as forgive
from handlers.tenant_events import record
from handlers.tenants import resolve_tenant

Q = load_queries(Path(__file__).with_name("queries.sql"))


def sign_in_failed() -> NotAuthenticated:
    return NotAuthenticated("sign_in_failed", "the e-mail or the password is wrong")


def _refresh_refused() -> NotAuthenticated:
    return NotAuthenticated("invalid_refresh_token",
                            "the refresh token is unknown, expired, used or revoked: sign in")


@dataclass(frozen=True, slots=True)
class Lifetimes:
    """How long a refresh token lives unused, and a session at most."""

    refresh: timedelta
    session: timedelta


@dataclass(frozen=True, slots=True)
class SignIn:
    """``tenant`` is what the person typed: the tenant's id or its slug. ``address`` is
    the client's, counted against when the sign-in fails (None: not known)."""

    tenant: str | UUID
    email: str
    password: str
    at: datetime
    address: str | None = None


@dataclass(frozen=True, slots=True)
class SignedIn:
    """A session's current state for its holder; ``refresh_token`` is shown once.
    ``holder_id`` is the agent of a staff session, the contact of a portal one."""

    tenant_id: TenantId
    session_id: UUID
    holder_id: UUID
    role: str
    refresh_token: str
    refresh_expires_at: datetime
    session_expires_at: datetime


def agent_actor(agent_id: UUID) -> StoreActor:
    """The actor the database stamps onto what a signed-in person does."""
    return StoreActor("agent", str(agent_id))


@dataclass(frozen=True, slots=True)
class SessionKind:
    """What tells one kind of session from another; the refresh rules do not differ.

    ``queries`` holds, for this kind's tables (same parameters, same columns): ``login``
    ($1 tenant, $2 e-mail: id, role, active, password_hash, NULL when there is no
    password yet), ``rehash_password`` ($1 tenant, $2 holder, $3 new hash, $4 the hash
    checked, $5 now), ``insert_session`` ($1 tenant, $2 session, $3 holder, $4 now, $5
    the absolute cap), ``insert_refresh_token`` ($1 tenant, $2 token hash, $3 session,
    $4 now, $5 expires), ``get_refresh_token`` ($1 tenant, $2 token hash: session_id,
    expires_at, rotated_at, holder_id, session_expires_at, revoked_at, role, active),
    ``touch_session`` ($1 tenant, $2 session, $3 now) and ``revoke_session`` ($1 tenant,
    $2 session, $3 now, $4 reason; returns a row only the first time). The events of
    a sign-in, a sign-out and a revocation (``signed_in``, ``signed_out``, ``revoked``)
    name the holder by ``holder`` and are recorded on the tenant stream.
    """

    prefix: str
    queries: Mapping[str, str]
    actor: Callable[[UUID], StoreActor]
    holder: str
    """The field of this kind's events that names the holder."""
    signed_in_event: type[Event]
    signed_out_event: type[Event]
    revoked_event: type[Event]

    def signed_in(self, holder: UUID, session_id: UUID, at: datetime) -> Event:
        return self.signed_in_event.model_validate(
            {self.holder: holder, "session_id": session_id, "at": at})

    def signed_out(self, holder: UUID, session_id: UUID, at: datetime) -> Event:
        return self.signed_out_event.model_validate(
            {self.holder: holder, "session_id": session_id, "at": at})

    def revoked(self, holder: UUID, session_id: UUID, reason: str, at: datetime) -> Event:
        return self.revoked_event.model_validate(
            {self.holder: holder, "session_id": session_id, "reason": reason, "at": at})


STAFF = SessionKind(REFRESH_PREFIX, Q, agent_actor, "agent_id",
                    AgentSignedIn, AgentSignedOut, AgentSessionRevoked)


async def issue_refresh(uow: UnitOfWork, kind: SessionKind, session_id: UUID, at: datetime,
                        expires_at: datetime) -> str:
    """A new refresh token of the session (only its hash is stored), shown once."""
    token, ref = new_token(kind.prefix, uow.tenant_id)
    await uow.conn.execute(kind.queries["insert_refresh_token"], uow.tenant_id, ref.digest,
                           session_id, at, expires_at)
    return token


async def sign_in(store: EventStore, passwords: Passwords, lifetimes: Lifetimes,
                  command: SignIn, kind: SessionKind = STAFF,
                  throttle: Throttle = Throttle()) -> SignedIn:
    """Open a session for the holder with this e-mail and password, with its first
    refresh token, or refuse with ``sign_in_failed`` (always the same, see the module).

    Failures count against the account and the address (handlers/sign_in_throttle.py):
    one that has failed too often is refused with ``TooManyAttempts`` before anything
    is checked, whether the account exists or not."""
    async with store.connection() as conn:
        tenant = await resolve_tenant(conn, str(command.tenant))
    # The slug and the id of one tenant count as one account.
    attempt = Attempt.of(kind.prefix, str(tenant or command.tenant), command.email,
                         command.address)
    await throttle_check(store, attempt, command.at)
    row = None
    if tenant is not None:
        async with store.unit_of_work(tenant, readonly=True) as uow:
            row = await uow.conn.fetchrow(kind.queries["login"], tenant, command.email)
    stored = row["password_hash"] if row is not None and row["active"] else None
    if not await asyncio.to_thread(passwords.verify, stored, command.password):
        await count_failure(store, throttle, attempt, command.at)
        raise sign_in_failed()
    assert tenant is not None and row is not None and stored is not None
    await forgive(store, attempt)
    holder: UUID = row["id"]
    rehashed = (await asyncio.to_thread(passwords.hash, command.password)
                if passwords.needs_rehash(stored) else None)
    async with store.unit_of_work(tenant, kind.actor(holder)) as uow:
        if rehashed is not None:
            await uow.conn.execute(kind.queries["rehash_password"], tenant, holder, rehashed,
                                   stored, command.at)
        signed_in = await open_session(uow, lifetimes, holder, row["role"], command.at, kind)
    return signed_in


async def open_session(uow: UnitOfWork, lifetimes: Lifetimes, holder: UUID, role: str,
                       at: datetime, kind: SessionKind = STAFF) -> SignedIn:
    """Open a session for a holder whose credential was checked (a password, an
    OpenID Connect ID token), with its first refresh token, recording the sign-in; the
    unit of work acts as the holder (``kind.actor(holder)``), and what the sign-in
    changes first (a rehash, an agent added on first sign-in) is in it too."""
    tenant = uow.tenant_id
    session_id = uuid.uuid4()
    cap = at + lifetimes.session
    expires = min(at + lifetimes.refresh, cap)
    await uow.conn.execute(kind.queries["insert_session"], tenant, session_id, holder, at,
                           cap)
    token = await issue_refresh(uow, kind, session_id, at, expires)
    await record(uow, kind.signed_in(holder, session_id, at))
    return SignedIn(tenant, session_id, holder, role, token, expires, cap)


Outcome = Literal["rotated", "replayed", "refused"]


async def refresh(store: EventStore, lifetimes: Lifetimes, token: str | None,
                  at: datetime, kind: SessionKind = STAFF) -> SignedIn:
    """Spend a refresh token for the next one. A token spent before revokes its session
    (and is refused); so does losing a race for the same token.

    Takes the store, not a unit of work: the tenant is the token's."""
    ref = parse_token(kind.prefix, token)
    if ref is None:
        raise _refresh_refused()
    tenant, q = ref.tenant_id, kind.queries
    async with store.unit_of_work(tenant, readonly=True) as uow:
        row = await uow.conn.fetchrow(q["get_refresh_token"], tenant, ref.digest)
    if row is None:
        raise _refresh_refused()
    session_id: UUID = row["session_id"]
    holder: UUID = row["holder_id"]
    outcome: Outcome = "refused"
    new = ""
    expires = at
    async with store.unit_of_work(tenant, kind.actor(holder)) as uow:
        if row["rotated_at"] is not None:
            outcome = "replayed"
        elif (row["revoked_at"] is None and row["active"] and row["expires_at"] > at
              and row["session_expires_at"] > at):
            if await uow.conn.fetchval(Q["rotate_refresh_token"], tenant, ref.digest, at) is None:
                outcome = "replayed"
            else:
                outcome = "rotated"
                expires = min(at + lifetimes.refresh, row["session_expires_at"])
                new = await issue_refresh(uow, kind, session_id, at, expires)
                await uow.conn.execute(q["touch_session"], tenant, session_id, at)
        if outcome == "replayed" and await uow.conn.fetchval(
                q["revoke_session"], tenant, session_id, at, "replay") is not None:
            await record(uow, kind.revoked(holder, session_id, "replay", at))
    # Raised after the unit of work: the revocation must commit, the answer is still 401.
    if outcome != "rotated":
        raise _refresh_refused()
    return SignedIn(tenant, session_id, holder, row["role"], new, expires,
                    row["session_expires_at"])


async def end_session(uow: UnitOfWork, kind: SessionKind, holder: UUID, session_id: UUID,
                      at: datetime) -> None:
    """Sign a session out (in ``uow``, acting as its holder), recording it; a session
    ended already is nothing to do."""
    if await uow.conn.fetchval(kind.queries["revoke_session"], uow.tenant_id, session_id, at,
                               "sign_out") is not None:
        await record(uow, kind.signed_out(holder, session_id, at))


async def sign_out(store: EventStore, token: str | None, at: datetime,
                   kind: SessionKind = STAFF) -> bool:
    """End the session of a refresh token (any of its family, spent or not); an unknown
    token or an ended session is nothing to do. Whether the token was one of a session
    (ended now or before).

    Takes the store, not a unit of work: the tenant is the token's."""
    ref = parse_token(kind.prefix, token)
    if ref is None:
        return False
    tenant = ref.tenant_id
    async with store.unit_of_work(tenant, readonly=True) as uow:
        row = await uow.conn.fetchrow(kind.queries["get_refresh_token"], tenant, ref.digest)
    if row is None:
        return False
    if row["revoked_at"] is None:
        async with store.unit_of_work(tenant, kind.actor(row["holder_id"])) as uow:
            await end_session(uow, kind, row["holder_id"], row["session_id"], at)
    return True


async def store_password(uow: UnitOfWork, agent_id: UUID, password_hash: str,
                         at: datetime) -> None:
    """Give an agent a login, or a new password (hashed by ``Passwords.hash`` outside
    the transaction), recording ``AgentPasswordSet``."""
    await uow.conn.execute(Q["set_password"], uow.tenant_id, agent_id, password_hash, at)
    await record(uow, AgentPasswordSet(agent_id=AgentId(agent_id), at=at))


__all__ = [
    "STAFF",
    "Lifetimes",
    "SessionKind",
    "SignIn",
    "SignedIn",
    "agent_actor",
    "end_session",
    "issue_refresh",
    "open_session",
    "refresh",
    "sign_in",
    "sign_in_failed",
    "sign_out",
    "store_password",
]
