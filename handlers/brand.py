"""What the customer pages show of a tenant before anyone signs in: its name and its
colour (``brand_colour`` in the settings). Public by design: the portal's sign-in
page and the widget's launcher are drawn in them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from domain.ids import TenantId
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from handlers.tenants import resolve_tenant
from projections.tenant_settings import load_document

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class Brand:
    """A tenant as its customers see it."""

    tenant_id: TenantId
    name: str
    colour: str | None

    def document(self) -> dict[str, str | None]:
        return {"tenant_id": str(self.tenant_id), "name": self.name, "colour": self.colour}


async def brand_of(store: EventStore, given: str) -> Brand | None:
    """The brand of the tenant ``given`` by its slug (any case) or id; None when there
    is no such tenant.

    Takes the store, not a unit of work: the tenant is not known until its slug or id is
    looked up."""
    async with store.connection() as conn:
        tenant = await resolve_tenant(conn, given)
    if tenant is None:
        return None
    async with store.unit_of_work(tenant, readonly=True) as uow:
        name: str | None = await uow.conn.fetchval(Q["tenant_name"], tenant)
        if name is None:
            return None
        doc, _ = await load_document(uow.conn, tenant)
    return Brand(tenant, name, doc.settings().brand_colour)


__all__ = ["Brand", "brand_of"]
