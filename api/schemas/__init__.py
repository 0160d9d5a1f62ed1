"""Request and response bodies shared by routes, and the views that fill them."""

from __future__ import annotations

from pydantic import JsonValue


def checked_by_domain(pattern: str) -> dict[str, JsonValue]:
    """The OpenAPI ``pattern`` of a field the domain checks (with its own, clearer,
    message), documented without checking it twice."""
    return {"pattern": pattern}
