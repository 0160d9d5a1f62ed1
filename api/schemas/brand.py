"""The body of the brand routes: a tenant as its customer pages show it."""

from __future__ import annotations

from uuid import UUID

from pydantic import BaseModel, Field


class BrandOut(BaseModel):
    tenant_id: UUID
    name: str = Field(description="the tenant's name, shown at the top of its pages")
    colour: str | None = Field(description="`brand_colour` of the settings (`#rrggbb`), or "
                                           "null for the pages' own")


__all__ = ["BrandOut"]
