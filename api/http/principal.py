"""Who is calling: the principal an API key resolves to."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from domain.ids import TenantId
from eventstore.types import StoreActor


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller: which tenant, which key, which role."""

    tenant_id: TenantId
    key_id: UUID
    role: str
    agent_id: UUID | None = None

    @property
    def actor(self) -> StoreActor:
        """The actor the database stamps onto events this caller causes."""
        return StoreActor("api_key", str(self.key_id))
