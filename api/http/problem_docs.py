"""OpenAPI documentation of error answers, made from the problem registry.

Routes pass ``responses=errors(400, 404, ...)``; every route also documents the
answers any route can give (400, 401, 403, 422, 500, 503). What a route can answer
because of where it is and what it does is added by ``api.http.routing.StrictRoute``
from ``route_answers``: 429 on every ``/v1`` route (the rate limiter), and on every
side-effecting one what its Idempotency-Key can cause. Every answer of a status
refers to the one schema of that status, ``Problem<status>``: one alternative per
code with members of its own (``api.http.problem_registry``), told apart by
``code``, and no undeclared member (``problem_schemas``, installed by
``api.http.openapi``). tests/e2e/test_openapi_declares.py checks the document
against what the service does.
"""

from __future__ import annotations

from typing import Any

from api.http.problem_registry import ERROR_ITEM, ERROR_ITEM_SCHEMA, ProblemCode, codes_of
from api.http.problems import PROBLEM_JSON

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "type": "object",
    "description": "RFC 9457 problem details with a stable machine-readable `code` "
                   "(`GET /v1/meta/error-codes` lists them all).",
    "required": ["type", "title", "status", "code", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
}


def _camel(code: str) -> str:
    return "".join(part.capitalize() for part in code.split("_"))


def _alternative(codes: list[ProblemCode]) -> dict[str, Any]:
    """The body of ``codes``, which share their members (one code with members, or
    every code of a status without any)."""
    members = codes[0].members
    properties = {**PROBLEM_SCHEMA["properties"],
                  "status": {"type": "integer", "enum": [codes[0].status]},
                  "code": {"type": "string", "enum": [c.code for c in codes]}}
    properties |= {name: dict(m.schema) for name, m in members.items()}
    return {"type": "object", "required": [*PROBLEM_SCHEMA["required"],
                                           *(n for n, m in members.items() if m.required)],
            "properties": properties, "additionalProperties": False}


def problem_schemas(statuses: set[int]) -> dict[str, dict[str, Any]]:
    """``components.schemas`` of the problems of ``statuses``: the error item, one
    schema per code that has members of its own, and per status ``Problem<status>``:
    the one body of its codes, or ``oneOf`` them (told apart by ``code``). Each is
    ``PROBLEM_SCHEMA`` with its codes and members, and nothing else."""
    out: dict[str, dict[str, Any]] = {ERROR_ITEM: ERROR_ITEM_SCHEMA}
    for status in sorted(statuses):
        codes = codes_of(status)
        plain = [c for c in codes if not c.members]
        special = [c for c in codes if c.members]
        name = f"Problem{status}"
        if not special:
            out[name] = {"title": name, "description": _codes_text(codes), **_alternative(plain)}
            continue
        refs = []
        for c in special:
            out[f"{_camel(c.code)}Problem"] = {"description": c.description, **_alternative([c])}
            refs.append({"$ref": f"#/components/schemas/{_camel(c.code)}Problem"})
        if plain:
            out[f"{name}Plain"] = {"description": _codes_text(plain), **_alternative(plain)}
            refs.append({"$ref": f"#/components/schemas/{name}Plain"})
        out[name] = {"title": name, "description": _codes_text(codes), "oneOf": refs}
    return out


def _codes_text(codes: list[ProblemCode]) -> str:
    return "; ".join(f"`{c.code}`: {c.description}" for c in codes)


_ALWAYS = (400, 401, 403, 422, 500, 503)

API_PREFIX = "/v1/"
"""Every route under it is authenticated, rate limited and on the database."""
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Side-effecting methods: under ``API_PREFIX`` they take an ``Idempotency-Key``."""


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry documenting ``statuses`` (plus the common ones): each
    with the problem schema of its status, made from the problem registry."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*statuses, *_ALWAYS}):
        codes = codes_of(status)
        assert codes, f"no problem code answers {status}"
        out[status] = {
            "description": "; ".join(f"`{c.code}`" for c in codes),
            "content": {PROBLEM_JSON: {
                "schema": {"$ref": f"#/components/schemas/Problem{status}"}}},
        }
    return out


def route_answers(path: str, methods: set[str]) -> dict[int | str, dict[str, Any]]:
    """What a route can answer because of where it is and what it does: under
    ``API_PREFIX``, 429 (and the common answers); side-effecting there, 409 and 422
    too (an Idempotency-Key in flight, or reused with another request)."""
    if not path.startswith(API_PREFIX):
        return {}
    if methods & WRITE_METHODS:
        return errors(409, 429)
    return errors(429)


COMMAND_ERRORS = errors(404, 409, 410, 412, 413, 415)
"""What a ticket command route can answer besides success."""

__all__ = ["API_PREFIX", "COMMAND_ERRORS", "PROBLEM_SCHEMA", "WRITE_METHODS", "errors",
           "problem_schemas", "route_answers"]
