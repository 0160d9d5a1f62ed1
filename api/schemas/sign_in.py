"""The body of a sign-in, staff's and the customer portal's alike."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from handlers.credentials import MAX_PASSWORD


class SignInIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tenant: str = Field(min_length=1, max_length=63,
                        description="the tenant's slug (`acme`) or its id; one that no "
                                    "tenant has fails like a wrong password")
    email: str = Field(min_length=1, max_length=254)
    password: str = Field(min_length=1, max_length=MAX_PASSWORD)


__all__ = ["SignInIn"]
