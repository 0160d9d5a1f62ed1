"""OpenAPI documentation of error answers: one problem+json schema, shared by routes.

Routes pass ``responses=errors(400, 404, ...)``; every route also documents the
answers any route can give (401, 403, 500, 503). What a route can answer because of
where it is and what it does is added by ``api.http.routing.StrictRoute`` from
``route_answers``: 429 on every ``/v1`` route (the rate limiter), and on every
side-effecting one what its Idempotency-Key can cause. The ``Problem`` schema is
registered once under ``components.schemas`` (``install``) and every answer refers
to it. tests/e2e/test_openapi_declares.py checks the document against what the
service does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from api.http import access

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "type": "object",
    "description": "RFC 9457 problem details with a stable machine-readable `code`.",
    "required": ["type", "title", "status", "code", "detail"],
    "properties": {
        "type": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "integer"},
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "instance": {"type": "string"},
    },
    "additionalProperties": True,
}

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}

_DESCRIPTIONS = {
    400: "Malformed request: unknown or invalid query parameter, path id, cursor, JSON "
         "or Idempotency-Key (`unknown_parameter`, `invalid_parameter`, `invalid_cursor`, "
         "`malformed_json`, `invalid_idempotency_key`)",
    401: "Missing, unknown or revoked API key or access token (`unauthorized`, "
         "`invalid_api_key`, `invalid_access_token`, `invalid_widget_token`), or "
         "credentials that prove nothing (`sign_in_failed`, `invalid_refresh_token`)",
    403: "The key's role may not do this (`forbidden`), or a widget call from an origin "
         "the tenant does not list (`origin_not_allowed`)",
    404: "No such resource in this tenant (`not_found`)",
    409: "Conflict: `invalid_transition`, `ticket_closed`, `already_exists`, "
         "`not_group_member`, `group_exists`, `version_conflict` or "
         "`idempotency_in_flight`",
    410: "Gone: an invitation expired or spent (`invitation_gone`), or a contact "
         "erased (`contact_erased`; `subject_erased` for a command that would write "
         "about it)",
    412: "`If-Match` does not match the current version (`precondition_failed`)",
    413: "Request body too large (`body_too_large`)",
    415: "Request body is not JSON (`unsupported_media_type`)",
    416: "The `Range` asked for is beyond the file (`range_not_satisfiable`)",
    422: "Invalid body (`validation_failed`) or an Idempotency-Key reused with another "
         "body (`idempotency_key_reused`)",
    429: "Rate limited (`rate_limited`)",
    500: "Internal error (`internal_error`)",
    503: "The database is unavailable (`database_unavailable`)",
}

_ALWAYS = (400, 401, 403, 422, 500, 503)

_HEADERS: dict[int, dict[str, Any]] = {
    409: {"Retry-After": {"description": "Seconds to wait before retrying (when the "
                                         "Idempotency-Key is in flight)",
                          "schema": {"type": "integer"}}},
    429: {
        "Retry-After": {"description": "Seconds until a request will be allowed",
                        "schema": {"type": "integer"}},
        "RateLimit-Policy": {"description": 'The limit, e.g. `"key";q=600;w=60`',
                             "schema": {"type": "string"}},
        "RateLimit": {"description": 'Where the caller stands, e.g. `"key";r=0;t=42`',
                      "schema": {"type": "string"}},
    },
}

API_PREFIX = "/v1/"
"""Every route under it is authenticated, rate limited and on the database."""
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Side-effecting methods: under ``API_PREFIX`` they take an ``Idempotency-Key``."""


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry documenting ``statuses`` (plus the common ones)."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in sorted({*statuses, *_ALWAYS}):
        out[status] = {
            "description": _DESCRIPTIONS[status],
            "content": {"application/problem+json": {"schema": PROBLEM_REF}},
            **({"headers": _HEADERS[status]} if status in _HEADERS else {}),
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

def install(app: FastAPI) -> None:
    """Add the ``Problem`` schema and each operation's ``x-required-role`` (from the
    authorization table) to the app's OpenAPI document, once."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = access.publish(build())
            document.setdefault("components", {}).setdefault("schemas", {})["Problem"] = \
                PROBLEM_SCHEMA
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["COMMAND_ERRORS", "PROBLEM_REF", "PROBLEM_SCHEMA", "errors", "install"]
