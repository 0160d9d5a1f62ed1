"""The ticket list (``GET /v1/tickets``) asked from inside another request: a saved
view's filters are checked and its pages are read by the list's own route, so a view
accepts exactly the filters the list accepts, parsed and validated by the same code
(whatever filters the list gains), and answers exactly the list's pages.

The request goes straight to the app's router with the caller's own scope (their
credential and the exception handlers the outer request armed), so it is authorized
as the caller and is not counted twice by the rate limiter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from fastapi import Request

LIST_PATH = "/v1/tickets"


async def ticket_list(request: Request, params: Sequence[tuple[str, str]]
                      ) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of ``GET /v1/tickets?<params>`` as the caller."""
    scope: dict[str, Any] = dict(request.scope)
    scope.update(method="GET", path=LIST_PATH, raw_path=LIST_PATH.encode(),
                 query_string=urlencode(list(params)).encode(), path_params={})
    for key in ("route", "endpoint"):
        scope.pop(key, None)
    status = 500
    headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.update((k.decode("latin-1"), v.decode("latin-1"))
                           for k, v in message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await request.app.router(scope, receive, send)
    return status, headers, b"".join(chunks)


def as_params(filters: dict[str, str | list[str]]) -> list[tuple[str, str]]:
    """A view's filters as the list's query parameters (a list: the parameter repeated)."""
    out: list[tuple[str, str]] = []
    for name in sorted(filters):
        value = filters[name]
        out += [(name, v) for v in value] if isinstance(value, list) else [(name, value)]
    return out


__all__ = ["LIST_PATH", "as_params", "ticket_list"]
