"""The customer portal: a contact sets a password through a link, signs in, and acts
as a customer on their own tickets.

Staff produce a **password link** for a contact (``issue_link``): a single-use token
that expires, shown once (only its sha256 is stored; the operator sends it, there is
no mail server here). Spending it (``set_password``) gives the contact a password;
a spent or expired link is ``Gone`` (410), an unknown one ``Missing``.

**Signing in** (``sign_in``) follows the staff rules (handlers/sessions.py): every
failure is the same ``sign_in_failed`` and the argon2id hash is computed on every path
(a decoy when there is no password), so neither the answer nor its timing tells
whether the e-mail has a login. It opens a contact session whose id the access token
carries; a token acts only while its session is open (``session_open``).

Whatever a signed-in contact does runs under ``customer_actor``: the database stamps
it as the customer, and the same armed actor scopes row-level security to that
contact (migration 0460, ``acting_contact()``): their tickets and those tickets'
public messages only, whatever SQL runs.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, Session
from eventstore.types import StoreActor
from handlers.credentials import Passwords, new_token, parse_token
from handlers.errors import Gone, Missing
from handlers.sessions import sign_in_failed
from projections import people

Q = load_queries(Path(__file__).with_name("portal.sql"))

LINK_PREFIX = "hdp_"


def customer_actor(contact_id: UUID) -> StoreActor:
    """The actor of a contact's own actions: stamped on events, and the contact scope
    of row-level security."""
    return StoreActor("customer", str(contact_id))


@dataclass(frozen=True, slots=True)
class PortalSignIn:
    tenant_id: TenantId
    email: str
    password: str
    at: datetime


@dataclass(frozen=True, slots=True)
class PortalSession:
    """An open portal session: whose, and until when at most."""

    tenant_id: TenantId
    session_id: UUID
    contact_id: UUID
    expires_at: datetime


async def issue_link(uow: Session, contact_id: UUID, at: datetime, valid_for: timedelta
                     ) -> dict[str, Any]:
    """A password link for a contact of the tenant (``Missing`` if none such); the answer
    holds ``token``, which is never stored and cannot be shown again."""
    contact = await people.load_contact(uow.conn, uow.tenant_id, contact_id)
    if contact is None or contact.merged_into is not None:
        raise Missing("not_found", f"no contact {contact_id}")
    token, ref = new_token(LINK_PREFIX, uow.tenant_id)
    row = await uow.conn.fetchrow(Q["insert_link"], uow.tenant_id, uuid.uuid4(), contact_id,
                                  ref.digest, at, at + valid_for)
    assert row is not None
    return {**dict(row), "token": token}


def _gone() -> Gone:
    return Gone("link_gone", "the password link has expired or was used already; "
                             "ask for a new one")


async def set_password(store: EventStore, passwords: Passwords, token: str, password: str,
                       at: datetime) -> dict[str, Any]:
    """Spend a password link: its contact gets ``password``. Returns the tenant, the
    contact and its e-mail."""
    ref = parse_token(LINK_PREFIX, token)
    if ref is None:
        raise Missing("not_found", "no such password link")
    hashed = await asyncio.to_thread(passwords.hash, password)
    tenant = ref.tenant_id
    async with store.session(tenant, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["find_link"], tenant, ref.digest)
    if row is None:
        raise Missing("not_found", "no such password link")
    async with store.session(tenant, customer_actor(row["contact_id"])) as uow:
        row = await uow.conn.fetchrow(Q["get_link"], tenant, ref.digest)
        assert row is not None
        if row["spent_at"] is not None or row["expires_at"] <= at:
            raise _gone()
        await uow.conn.execute(Q["set_password"], tenant, row["contact_id"], hashed, at)
        await uow.conn.execute(Q["spend_link"], tenant, row["id"], at)
    return {"tenant_id": tenant, "contact_id": row["contact_id"], "email": row["email"]}


async def sign_in(store: EventStore, passwords: Passwords, session_ttl: timedelta,
                  command: PortalSignIn) -> PortalSession:
    """Open a portal session for the contact with this e-mail and password, or refuse
    with ``sign_in_failed`` (always the same, see the module)."""
    tenant = command.tenant_id
    async with store.session(tenant, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["contact_login"], tenant, command.email)
    stored = (row["password_hash"] if row is not None and row["merged_into"] is None
              else None)
    if not await asyncio.to_thread(passwords.verify, stored, command.password):
        raise sign_in_failed()
    assert row is not None and stored is not None
    contact_id: UUID = row["id"]
    rehashed = (await asyncio.to_thread(passwords.hash, command.password)
                if passwords.needs_rehash(stored) else None)
    session_id = uuid.uuid4()
    expires = command.at + session_ttl
    async with store.session(tenant, customer_actor(contact_id)) as uow:
        if rehashed is not None:
            await uow.conn.execute(Q["rehash_password"], tenant, contact_id, rehashed, stored,
                                   command.at)
        await uow.conn.execute(Q["insert_session"], tenant, session_id, contact_id,
                               command.at, expires)
    return PortalSession(tenant, session_id, contact_id, expires)


async def session_open(store: EventStore, tenant: TenantId, session_id: UUID,
                       contact_id: UUID, now: datetime) -> bool:
    """Whether a portal session still lets its access tokens act."""
    async with store.session(tenant, customer_actor(contact_id), readonly=True) as uow:
        return bool(await uow.conn.fetchval(Q["session_open"], tenant, session_id,
                                            contact_id, now))


async def sign_out(store: EventStore, tenant: TenantId, session_id: UUID, contact_id: UUID,
                   at: datetime) -> None:
    async with store.session(tenant, customer_actor(contact_id)) as uow:
        await uow.conn.execute(Q["revoke_session"], tenant, session_id, at)


__all__ = ["LINK_PREFIX", "PortalSession", "PortalSignIn", "customer_actor", "issue_link",
           "session_open", "set_password", "sign_in", "sign_out"]
