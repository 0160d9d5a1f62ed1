"""The body of a sign-in, staff's and the customer portal's alike."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from handlers.credentials import MAX_PASSWORD

TENANT_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,62}$"
"""A slug (any case) or a tenant id: what the sign-in's ``tenant`` may look like."""
_TENANT = re.compile(TENANT_PATTERN)


class SignInIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(min_length=1, max_length=63,
                        json_schema_extra={"pattern": TENANT_PATTERN},
                        description="the tenant's slug (`acme`) or its id; one that no "
                                    "tenant has fails like a wrong password")
    email: str = Field(min_length=1, max_length=254)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD)

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, value: str) -> str:
        if not _TENANT.fullmatch(value.strip()):
            raise ValueError("a tenant is its slug (letters, digits and hyphens) or its id")
        return value.strip()


__all__ = ["SignInIn"]
