"""Request and response bodies shared by routes, and the views that fill them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, JsonValue, model_validator

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def _storable(value: JsonValue) -> JsonValue:
    """JSON a request carries into an event: its integers within 64 bits, what the
    event store's JSON writer (orjson) and Postgres's bigint hold. A larger one is a
    422 naming the place, not a 500 when the event is written."""
    stack: list[JsonValue] = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int) and not INT64_MIN <= v <= INT64_MAX:
            raise ValueError("integers must fit in 64 bits")
        if isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return value


SharedIn = Annotated[bool, Field(description="Shared by the tenant (admins only); else "
                                             "personal to the caller's agent.")]
"""Whether a new macro or saved view is the tenant's or the caller's own: the one
choice every owned record is made with (``handlers.owned``)."""

StorableJson = Annotated[JsonValue, AfterValidator(_storable)]
"""Any JSON value a request may give where the domain checks the meaning (a rule's
condition or action value), with integers the store can write."""


def checked_by_domain(pattern: str) -> dict[str, JsonValue]:
    """The OpenAPI ``pattern`` of a field the domain checks (with its own, clearer,
    message), documented without checking it twice."""
    return {"pattern": pattern}


def checked_items(pattern: str) -> dict[str, JsonValue]:
    """``checked_by_domain`` for each item of a list."""
    return {"items": {"type": "string", "pattern": pattern}}


def patch_schema(*nullable: str) -> Callable[[dict[str, Any]], None]:
    """``json_schema_extra`` of a PATCH body's model: as the body's own check has it,
    a field left out is unchanged and only the ``nullable`` ones take null (to clear
    them), so every other property's schema is its value's alone; and the body gives
    at least one field."""

    def extra(schema: dict[str, Any]) -> None:
        schema["minProperties"] = 1
        for name, prop in schema.get("properties", {}).items():
            if name in nullable:
                continue
            options = prop.get("anyOf")
            kept = [o for o in options or () if o.get("type") != "null"]
            if options and len(kept) < len(options):
                rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
                prop.clear()
                prop.update(kept[0] if len(kept) == 1 else {"anyOf": kept})
                prop.update(rest)
            if "default" in prop and prop["default"] is None:
                del prop["default"]

    return extra


def patch_fields_given(data: Any, fields: str) -> Any:
    """A PATCH body's check before field validation: no field is null (leave it out to
    keep it) and at least one is given; ``fields`` names them for the message."""
    return _patch_checked(data, frozenset(), f"give at least one of {fields}")


def _patch_checked(data: Any, nullable: frozenset[str], none_given: str) -> Any:
    if isinstance(data, dict):
        nulls = sorted(k for k, v in data.items() if v is None and k not in nullable)
        if nulls:
            raise ValueError("null is not allowed for " + ", ".join(nulls))
        if not data:
            raise ValueError(none_given)
    return data


def _patch_body_schema(schema: dict[str, Any], cls: type[PatchBody]) -> None:
    patch_schema(*cls.nullable)(schema)


class PatchBody(BaseModel):
    """A PATCH body: a field left out keeps its value, only the ``nullable`` fields take
    null (to clear them), and at least one field is given (else a 422 saying
    ``none_given``, by default naming the fields). The published schema
    (``patch_schema``) reads the same ``nullable`` as the check, so what clients are
    told and what the API accepts stay one rule."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_patch_body_schema)

    nullable: ClassVar[frozenset[str]] = frozenset()
    none_given: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _fields_given(cls, data: Any) -> Any:
        none_given = cls.none_given or "give at least one of " + ", ".join(cls.model_fields)
        return _patch_checked(data, cls.nullable, none_given)
