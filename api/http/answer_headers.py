"""Response headers of the API, each named and described once.

The code that sets a header takes its name from here, and the OpenAPI document
declares it from here: on the answers every route gives because of where it is
(``declare_common``: ``X-Request-Id`` on all, ``RateLimit``/``RateLimit-Policy`` on
every ``/v1`` answer, ``Idempotent-Replayed`` on a replayable command's success,
``WWW-Authenticate`` on a 401, ``Retry-After`` where a retry is asked for), and on
the answers a route declares with ``sends(status, ETAG, LOCATION, ...)``.
tests/e2e/test_answer_headers.py and the schemathesis run hold every header a
response carries to what its operation declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class AnswerHeader:
    name: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "string"})

    def declared(self, *, required: bool = False) -> dict[str, Any]:
        """The OpenAPI header object."""
        return {"description": self.description, "schema": dict(self.schema),
                **({"required": True} if required else {})}


ETAG = AnswerHeader("ETag", 'The version of what the answer shows, e.g. `"3"`: send it '
                            "back as `If-Match` to change it only at that version",
                    {"type": "string", "pattern": r'^"\d{1,9}"$'})
LOCATION = AnswerHeader("Location", "Where what was created (or moved) can be read")
IDEMPOTENT_REPLAYED = AnswerHeader(
    "Idempotent-Replayed", "`true` when this is the recorded answer of an earlier request "
                           "with the same `Idempotency-Key`", {"type": "string", "enum": ["true"]})
RATE_LIMIT_POLICY = AnswerHeader("RateLimit-Policy", 'The limit, e.g. `"key";q=600;w=60` '
                                 "(when rate limits are enforced)")
RATE_LIMIT = AnswerHeader("RateLimit", 'Where the caller stands, e.g. `"key";r=599;t=42` '
                          "(when rate limits are enforced)")
RETRY_AFTER = AnswerHeader("Retry-After", "Seconds to wait before retrying",
                           {"type": "string", "pattern": r"^\d+$"})
READ_FROM = AnswerHeader("Read-From", "`primary` or `replica`: where the answer was read",
                         {"type": "string", "enum": ["primary", "replica"]})
READ_LAG = AnswerHeader("Read-Lag-Seconds", "The replica's delay behind the primary when "
                        "it was read (0 on the primary)",
                        {"type": "string", "pattern": r"^\d+(\.\d+)?$"})
SET_COOKIE = AnswerHeader("Set-Cookie", "The refresh cookie: set with a new refresh token, "
                          "or cleared")
WWW_AUTHENTICATE = AnswerHeader("WWW-Authenticate", 'The scheme to authenticate with: '
                                '`Bearer realm="helpdesk"`')
REQUEST_ID = AnswerHeader("X-Request-Id", "The request's id in the server's logs (the "
                          "caller's own `X-Request-Id`, when it sent a usable one)")
CACHE_CONTROL = AnswerHeader("Cache-Control", "`no-store`: the answer holds a credential")
ALLOW = AnswerHeader("Allow", "The methods the path answers")

CATALOGUE: tuple[AnswerHeader, ...] = (
    ETAG, LOCATION, IDEMPOTENT_REPLAYED, RATE_LIMIT_POLICY, RATE_LIMIT, RETRY_AFTER,
    READ_FROM, READ_LAG, SET_COOKIE, WWW_AUTHENTICATE, REQUEST_ID, CACHE_CONTROL)
"""The headers the API sets on purpose: each must be declared where it is sent."""


def sends(status: int, *headers: AnswerHeader,
          required: tuple[AnswerHeader, ...] = ()) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` entry declaring the headers a route's ``status`` answer sends
    (``required``: sent on every such answer)."""
    declared = {h.name: h.declared() for h in headers}
    declared |= {h.name: h.declared(required=True) for h in required}
    return {status: {"headers": declared}}


def merged(*responses: dict[int | str, dict[str, Any]]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries put together, the headers of one status merged (``|``
    would let the last entry of a status replace the others)."""
    out: dict[int | str, dict[str, Any]] = {}
    for entry in responses:
        for status, response in entry.items():
            into = out.setdefault(status, {})
            headers = {**into.get("headers", {}), **response.get("headers", {})}
            into.update(response)
            if headers:
                into["headers"] = headers
    return out


def _merge(response: dict[str, Any], *headers: AnswerHeader, required: bool = False) -> None:
    into = response.setdefault("headers", {})
    for h in headers:
        into.setdefault(h.name, h.declared(required=required))


def declare_common(path: str, method: str, operation: dict[str, Any], *,
                   api_prefix: str, replayable: bool) -> None:
    """Declare on ``operation``'s answers the headers that follow from where it is and
    what it does (see the module's docstring)."""
    for status, response in operation.get("responses", {}).items():
        code = int(status) if str(status).isdigit() else 0
        _merge(response, REQUEST_ID, required=True)
        if path.startswith(api_prefix):
            _merge(response, RATE_LIMIT_POLICY, RATE_LIMIT)
            if replayable and 200 <= code < 300:
                _merge(response, IDEMPOTENT_REPLAYED)
        if code == 401:
            _merge(response, WWW_AUTHENTICATE)
        if code in (409, 429, 503):
            _merge(response, RETRY_AFTER, required=code == 429)


__all__ = ["ALLOW", "CACHE_CONTROL", "CATALOGUE", "ETAG", "IDEMPOTENT_REPLAYED", "LOCATION",
           "RATE_LIMIT", "RATE_LIMIT_POLICY", "READ_FROM", "READ_LAG", "REQUEST_ID",
           "RETRY_AFTER", "SET_COOKIE", "WWW_AUTHENTICATE", "AnswerHeader", "declare_common",
           "merged", "sends"]
