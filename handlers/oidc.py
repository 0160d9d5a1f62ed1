"""OpenID Connect sign-in for staff: a tenant's provider, and the code flow that ends
in the same session as a password sign-in.

A tenant has at most one provider (``oidc_providers``): a button label, the issuer,
the client id and the client secret (sealed by the key-encryption key, bound to the
tenant and the provider's id, never returned), an optional allowed e-mail domain, and
whether a first sign-in may add an agent (off unless the admin turns it on). Without
one, nothing here runs: ``start`` answers ``oidc_not_configured``.

``button``, ``start`` and ``finish`` take the store, not a unit of work: the tenant is
the one the browser names (by slug or id), looked up first, and the provider is called
outside any transaction; ``finish`` opens the session in a unit of work acting as the
person it found.

The flow (docs/sign-in.md):

1. ``start`` mints a state, a nonce and a PKCE verifier, keeps the state's and the
   nonce's sha256 and the verifier in ``oidc_attempts`` for ``ATTEMPT_TTL``, and
   answers the provider's authorization URL (the caller redirects the browser there
   and binds the state to the browser in a cookie).
2. ``finish`` spends the attempt of the state (once: a replayed callback finds it
   spent), exchanges the code with the verifier at the token endpoint, verifies the
   ID token (handlers/oidc_provider.py: signature by a published key, ``iss``,
   ``aud``, ``exp``) and checks its ``nonce`` against the attempt's, a verified
   e-mail, the allowed domain, and that an active agent has that e-mail (or, if the
   tenant allows it, adds one with role ``agent``). Then it opens a session exactly
   as a password sign-in does (``handlers.sessions.open_session``): the same tables,
   refresh token and ``AgentSignedIn`` event.

Every refusal of the provider's answer is ``oidc_sign_in_failed`` with its reason:
the person has proved to the provider who they are, so telling them why this tenant
will not take it (an e-mail with no agent, say) gives nothing away.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.agent import AddAgent
from domain.events import OidcProviderRemoved, OidcProviderSet
from domain.ids import AgentId, TenantId
from domain.values import Role
from eventstore.keys import Keyring
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from handlers.agents import add_agent
from handlers.errors import Conflict, Invalid, Missing
from handlers.oidc_provider import Providers, authorization_url, checked_email, refused
from handlers.sessions import STAFF, Lifetimes, SignedIn, open_session
from handlers.tenant_events import record
from handlers.tenants import resolve_tenant

Q = load_queries(Path(__file__).with_name("oidc.sql"))

ATTEMPT_TTL = timedelta(minutes=10)
"""How long a started sign-in may take to come back from the provider."""


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def not_configured() -> Missing:
    return Missing("oidc_not_configured", "this tenant has no OpenID Connect sign-in")


@dataclass(frozen=True, slots=True)
class SetProvider:
    """``client_secret`` None keeps the current one (a new provider needs one)."""

    label: str
    issuer: str
    client_id: str
    client_secret: str | None
    allowed_domain: str | None
    create_agents: bool
    at: datetime


@dataclass(frozen=True, slots=True)
class Started:
    """Where to send the browser, and the state to bind to it."""

    url: str
    state: str


@dataclass(frozen=True, slots=True)
class Finish:
    """The provider's redirect back: a ``code``, or an ``error`` (the person declined,
    say); ``iss`` when the provider names itself (RFC 9207)."""

    tenant: str
    code: str | None
    state: str
    browser_state: str | None
    """The state the browser kept from ``start`` (its cookie): a callback that another
    browser started is refused."""
    at: datetime
    error: str | None = None
    iss: str | None = None


def provider_document(row: Any) -> dict[str, Any]:
    """A provider as the API shows it: never the secret."""
    return {"label": row["label"], "issuer": row["issuer"], "client_id": row["client_id"],
            "allowed_domain": row["allowed_domain"], "create_agents": row["create_agents"],
            "version": row["version"], "created_at": row["created_at"],
            "updated_at": row["updated_at"]}


async def get_provider(uow: UnitOfWork) -> dict[str, Any] | None:
    conn, tenant_id = uow.conn, uow.tenant_id
    row = await conn.fetchrow(Q["provider_get"], tenant_id)
    return None if row is None else provider_document(row)


async def set_provider(uow: UnitOfWork, command: SetProvider) -> dict[str, Any]:
    """Set the tenant's provider (its secret sealed), recording ``OidcProviderSet``."""
    current = await uow.conn.fetchrow(Q["provider_get"], uow.tenant_id)
    provider_id: UUID = current["id"] if current is not None else uuid.uuid4()
    if command.client_secret is not None:
        keyring: Keyring | None = uow.keyring
        if keyring is None:
            raise Conflict("files_unavailable", "secrets need sealing, which this store lacks")
        sealed = keyring.wrap(uow.tenant_id, provider_id, command.client_secret.encode())
        kek = keyring.fingerprint
    elif current is not None:
        sealed, kek = bytes(current["client_secret"]), str(current["kek"])
    else:
        raise Invalid("validation_failed", "a new provider needs its client_secret",
                      field="client_secret")
    domain = command.allowed_domain.lower() if command.allowed_domain else None
    row = await uow.conn.fetchrow(Q["provider_upsert"], uow.tenant_id, provider_id,
                                  command.label, command.issuer, command.client_id, sealed,
                                  kek, domain, command.create_agents, command.at)
    assert row is not None
    await record(uow, OidcProviderSet(label=command.label, issuer=command.issuer,
                                      client_id=command.client_id, allowed_domain=domain,
                                      create_agents=command.create_agents, at=command.at))
    return provider_document(row)


async def remove_provider(uow: UnitOfWork, at: datetime) -> dict[str, Any]:
    """Turn the tenant's OpenID Connect sign-in off (sessions it opened stay open);
    the provider as it was."""
    row = await uow.conn.fetchrow(Q["provider_delete"], uow.tenant_id)
    if row is None:
        raise not_configured()
    await record(uow, OidcProviderRemoved(issuer=row["issuer"], at=at))
    return provider_document(row)


async def button(store: EventStore, tenant: str) -> tuple[TenantId, str] | None:
    """The tenant and the label of its sign-in button, if it has a provider."""
    async with store.connection() as conn:
        tenant_id = await resolve_tenant(conn, tenant)
    if tenant_id is None:
        return None
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["provider_get"], tenant_id)
    return None if row is None else (tenant_id, row["label"])


async def start(store: EventStore, providers: Providers, tenant: str,
                callback: Callable[[TenantId], str], at: datetime) -> Started:
    """Begin a sign-in with the tenant's provider (``callback``: our redirect URI for
    the tenant, as registered with the provider)."""
    async with store.connection() as conn:
        tenant_id = await resolve_tenant(conn, tenant)
    if tenant_id is None:
        raise not_configured()
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["provider_get"], tenant_id)
    if row is None:
        raise not_configured()
    found = await providers.discovery(row["issuer"])
    state, nonce = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(48)
    redirect_uri = callback(tenant_id)
    async with store.unit_of_work(tenant_id, readonly=False) as uow:
        await uow.conn.execute(Q["attempts_sweep"], tenant_id, at)
        await uow.conn.execute(Q["attempt_insert"], tenant_id, _sha256(state), _sha256(nonce),
                               verifier, redirect_uri, at, at + ATTEMPT_TTL)
    url = authorization_url(found.authorization_endpoint, client_id=row["client_id"],
                            redirect_uri=redirect_uri, state=state, nonce=nonce,
                            verifier=verifier)
    return Started(url, state)


async def finish(store: EventStore, providers: Providers, lifetimes: Lifetimes,
                 command: Finish) -> SignedIn:
    """Complete a sign-in from the provider's callback: a session, or a refusal."""
    if command.browser_state is None or not hmac.compare_digest(
            command.browser_state.encode(), command.state.encode()):
        raise refused("the sign-in was not started in this browser")
    async with store.connection() as conn:
        tenant_id = await resolve_tenant(conn, command.tenant)
    if tenant_id is None:
        raise not_configured()
    # The attempt is spent in a unit of work of its own, committed before the provider
    # is asked anything: a callback played twice finds it spent, whatever happens next.
    async with store.unit_of_work(tenant_id, readonly=False) as uow:
        row = await uow.conn.fetchrow(Q["provider_get"], tenant_id)
        attempt = await uow.conn.fetchrow(Q["attempt_spend"], tenant_id,
                                          _sha256(command.state), command.at)
    if row is None:
        raise not_configured()
    if attempt is None:
        raise refused("the sign-in is unknown, expired or was completed already")
    if command.error is not None or command.code is None:
        raise refused(f"the provider answered {command.error or 'no code'}")
    if command.iss is not None and command.iss != row["issuer"]:
        raise refused("the answer is from another issuer")
    assert store.keyring is not None, "a provider's secret was sealed by the store's keyring"
    secret = store.keyring.unwrap(tenant_id, row["id"], bytes(row["client_secret"]),
                            row["kek"]).decode()
    issuer, client_id = row["issuer"], row["client_id"]
    id_token = await providers.exchange(issuer, code=command.code,
                                        redirect_uri=attempt["redirect_uri"],
                                        verifier=attempt["code_verifier"],
                                        client_id=client_id, client_secret=secret)
    claims = await providers.verify(issuer, client_id, id_token)
    nonce = claims["nonce"]
    if not isinstance(nonce, str) or not hmac.compare_digest(_sha256(nonce),
                                                             bytes(attempt["nonce_hash"])):
        raise refused("the ID token's nonce is not this sign-in's")
    email = checked_email(claims, row["allowed_domain"])
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        agent = await uow.conn.fetchrow(Q["agent_for_email"], tenant_id, email)
    if agent is not None and not agent["active"]:
        raise refused("the agent with this e-mail is deactivated")
    if agent is None and not row["create_agents"]:
        raise refused("no agent of this tenant has this e-mail")
    if agent is not None:
        async with store.unit_of_work(tenant_id, STAFF.actor(agent["id"])) as uow:
            signed_in = await open_session(uow, lifetimes, agent["id"], agent["role"],
                                           command.at, STAFF)
        return signed_in
    new_id = AgentId(uuid.uuid4())
    name = claims.get("name") if isinstance(claims.get("name"), str) else None
    async with store.unit_of_work(tenant_id, STAFF.actor(new_id)) as uow:
        await add_agent(uow, AddAgent(email=email, name=(name or email)[:200],
                                      role=Role.AGENT, at=command.at, agent_id=new_id))
        signed_in = await open_session(uow, lifetimes, new_id, Role.AGENT.value, command.at,
                                       STAFF)
    return signed_in


__all__ = [
    "ATTEMPT_TTL",
    "Finish",
    "SetProvider",
    "Started",
    "button",
    "finish",
    "get_provider",
    "not_configured",
    "remove_provider",
    "set_provider",
    "start",
]
