"""Request and response bodies shared by routes, and the views that fill them."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue


def checked_by_domain(pattern: str) -> dict[str, JsonValue]:
    """The OpenAPI ``pattern`` of a field the domain checks (with its own, clearer,
    message), documented without checking it twice."""
    return {"pattern": pattern}


def patch_fields_given(data: Any, fields: str) -> Any:
    """A PATCH body's check before field validation: no field is null (leave it out to
    keep it) and at least one is given; ``fields`` names them for the message."""
    if isinstance(data, dict):
        nulls = sorted(k for k, v in data.items() if v is None)
        if nulls:
            raise ValueError("null is not allowed for " + ", ".join(nulls))
        if not data:
            raise ValueError(f"give at least one of {fields}")
    return data
