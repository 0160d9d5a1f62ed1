"""A route class that holds every endpoint to the API's request-shape rules.

- An unknown query parameter is a 400 naming it (a typo must not silently widen a
  list or be ignored by a command).
- A request body must be JSON (``application/json`` or ``+json``): 415 otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from api.problems import Problem


def _query_names(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _query_names(sub)
    return names


def _has_body(dependant: Dependant) -> bool:
    return bool(dependant.body_params) or any(_has_body(d) for d in dependant.dependencies)


class StrictRoute(APIRoute):
    """APIRoute that rejects unknown query parameters and non-JSON bodies."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        allowed = _query_names(self.dependant)
        takes_body = _has_body(self.dependant)

        async def strict_handler(request: Request) -> Response:
            unknown = sorted(set(request.query_params.keys()) - allowed)
            if unknown:
                raise Problem(
                    400, "unknown_parameter",
                    f"unknown query parameter{'s' if len(unknown) > 1 else ''}: "
                    + ", ".join(unknown),
                    parameters=unknown,
                )
            if takes_body and request.method in ("POST", "PUT", "PATCH"):
                ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
                has_body = request.headers.get("content-length", "0") != "0" or (
                    "transfer-encoding" in request.headers
                )
                if has_body and not (ctype == "application/json" or ctype.endswith("+json")):
                    raise Problem(415, "unsupported_media_type",
                                  "request bodies must be application/json")
            return await handler(request)

        return strict_handler
