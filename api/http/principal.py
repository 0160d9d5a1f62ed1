"""Who is calling: the principal an API key or a person's access token resolves to."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from domain.ids import TenantId
from eventstore.types import StoreActor


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: which tenant, which credential, which role, and the
    agent (person) it acts as, if any, with whether that agent is active.

    ``credential`` is ``api_key`` (``key_id`` is the key's id) or ``session`` (a person
    signed in with a password; ``key_id`` is the session's id, which scopes their
    Idempotency-Keys as a key's id scopes a program's), or ``portal`` (a contact signed
    in to the customer portal: role ``customer``, ``contact_id`` the contact,
    ``key_id`` the portal session's id), or ``widget`` (an anonymous visitor of the
    embeddable widget: role ``widget``, ``key_id`` the widget session's id). All go
    through the same role table and the same checks from here on. ``scopes`` are the
    permissions an API key was issued with (None: all its role's).
    """

    tenant_id: TenantId
    key_id: UUID
    role: str
    agent_id: UUID | None = None
    agent_active: bool | None = None
    credential: str = "api_key"
    contact_id: UUID | None = None
    scopes: frozenset[str] | None = None

    @property
    def actor(self) -> StoreActor:
        """The actor the database stamps onto events this caller causes: a signed-in
        person is stamped as their agent, a key as itself (what a key acting as an
        agent does is attributed to the agent in the events' payloads)."""
        if self.credential == "portal" and self.contact_id is not None:
            # A customer signed in to the portal: stamped as the contact, and the same
            # armed actor scopes row-level security to that contact's rows.
            return StoreActor("customer", str(self.contact_id))
        if self.credential == "widget":
            # A widget session: stamped as itself (its e-mail is unproven), and the same
            # armed actor scopes row-level security to the tickets it opened.
            return StoreActor("widget", str(self.key_id))
        if self.credential == "session" and self.agent_id is not None:
            return StoreActor("agent", str(self.agent_id))
        return StoreActor("api_key", str(self.key_id))

    @property
    def barred(self) -> tuple[str, str] | None:
        """Why this key may do nothing at all, as (code, detail); None: it may act.

        A key that acts as a person works only while that person is an active agent:
        deactivating an agent stops its keys from writing and from reading, and
        reactivating them lets the same keys work again (they are not revoked). An
        agent key always acts as an agent (``issue_key`` refuses one without); one
        issued before that rule belongs to nobody and is barred as well.
        """
        if self.agent_id is not None and not self.agent_active:
            return ("agent_inactive",
                    "the agent this API key acts as is deactivated; an admin can "
                    "reactivate the agent or revoke the key")
        if self.agent_id is None and self.role == "agent":
            return ("agent_key_unlinked",
                    "this agent key belongs to no agent; an admin issues agent keys "
                    "with agent_id")
        return None
