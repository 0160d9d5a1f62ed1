"""A route class that holds every endpoint to the API's request-shape rules.

- An unknown query parameter is a 400 naming it (a typo must not silently widen a
  list or be ignored by a command). A route may take a family of parameters named by
  a prefix (``field.<key>`` on the ticket list), declared in its OpenAPI extension
  ``x-query-families``; the route itself checks those and refuses what it does not know.
- One rule for repeated and list-valued query parameters, on every route: a
  list-valued parameter (its type is a list) takes a comma list, repeats, or both, and
  means any of the values, each of which is validated and honoured; a scalar
  parameter given twice is a 400 naming it (the framework would keep one value and
  drop the other without a word).
- Every side-effecting route under ``/v1`` declares ``Idempotency-Key`` (it runs
  through ``api.http.commands.run``, which honours it), but for the ``OPEN`` ones of
  signing in (``api.http.access``), and every route documents what
  it can answer because of where it is (``api.http.problem_docs.route_answers``).
- A request body must be JSON (``application/json`` or ``+json``): 415 otherwise.
- No text may hold a NUL character: Postgres text and jsonb cannot store one, so it is
  refused here, naming where it was (400 in the query, 422 in the body), rather than
  failing at the database.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine, Iterator, Sequence
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin
from urllib.parse import urlencode

import orjson
from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.datastructures import QueryParams

from api.http.access import OPEN
from api.http.headers import idempotency_key
from api.http.problem_docs import API_PREFIX, WRITE_METHODS, route_answers
from api.http.problems import Problem

QUERY_FAMILIES = "x-query-families"
"""The OpenAPI extension naming a route's prefixes of query parameters it reads itself."""


def _is_list(annotation: Any) -> bool:
    """True for ``list[X]`` (also inside ``Annotated`` or ``| None``)."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _is_list(get_args(annotation)[0])
    if origin is Union or origin is UnionType:
        return any(_is_list(arg) for arg in get_args(annotation))
    return isinstance(origin, type) and issubclass(origin, list | tuple | set | frozenset)


def _query_params(dependant: Dependant) -> dict[str, bool]:
    """Every query parameter the route reads, by name: whether it is list-valued."""
    params = {p.alias: _is_list(p.field_info.annotation) for p in dependant.query_params}
    for sub in dependant.dependencies:
        params |= _query_params(sub)
    return params


def _repeated(query: QueryParams, scalars: Sequence[str]) -> list[str]:
    return [name for name in scalars if len(query.getlist(name)) > 1]


def _expand_lists(request: Request, lists: frozenset[str]) -> None:
    """Rewrite the request's query so that each comma list of a list-valued parameter
    is one repeat per item, the form the framework validates item by item."""
    items = request.query_params.multi_items()
    if not any(key in lists and "," in value for key, value in items):
        return
    expanded = [(key, part) for key, value in items
                for part in (value.split(",") if key in lists else [value])]
    request.scope["query_string"] = urlencode(expanded).encode("latin-1")
    request._query_params = QueryParams(expanded)  # the Request caches its parse


def _has_body(dependant: Dependant) -> bool:
    return bool(dependant.body_params) or any(_has_body(d) for d in dependant.dependencies)


# A JSON string escape for NUL: ``\u0000`` after an odd run of backslashes (an even
# run is escaped backslashes followed by the plain text "u0000"). A raw NUL byte is
# not valid JSON at all and fails parsing on its own.
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_NUL_MESSAGE = "text cannot contain the NUL character (U+0000)"


def _nul_paths(value: Any, path: tuple[str, ...] = ()) -> Iterator[list[str]]:
    """Where in a parsed JSON document a string (or key) holds NUL."""
    if isinstance(value, str):
        if "\x00" in value:
            yield list(path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                yield [*path, key]
            yield from _nul_paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nul_paths(item, (*path, str(i)))


def _refuse_nul(request: Request, body: bytes) -> None:
    for key, value in request.query_params.multi_items():
        if "\x00" in key or "\x00" in value:
            raise Problem(400, "invalid_parameter",
                          f"invalid query.{key.replace(chr(0), '?')}: {_NUL_MESSAGE}",
                          parameters=[key], errors=[{"loc": ["query", key], "msg": _NUL_MESSAGE,
                                   "type": "string_nul"}])
    if body and _JSON_NUL.search(body):
        try:
            where = list(_nul_paths(orjson.loads(body)))
        except orjson.JSONDecodeError:
            return  # not JSON: the route's own parsing answers for that
        if where:
            raise Problem(422, "validation_failed", "the request body is invalid",
                          errors=[{"loc": ["body", *p], "msg": _NUL_MESSAGE,
                                   "type": "string_nul"} for p in where])


def _refuse_non_utf8(body: bytes) -> None:
    """JSON is UTF-8 (RFC 8259): other bytes are malformed JSON, as the problem handler
    answers a body that does not parse (FastAPI alone would answer a bare 400 that no
    route declares)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem(400, "malformed_json",
                      "the request body is not valid JSON: it is not UTF-8") from None


class StrictRoute(APIRoute):
    """APIRoute that holds requests to the rules above: unknown or repeated query
    parameters, comma lists, non-JSON bodies, NUL characters; and declares what the
    rules above and around every route make true of it."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        methods = {m.upper() for m in kwargs.get("methods") or ()}
        # Signing in is not replayable by design: its answers hold fresh credentials.
        replayable = not any(f"{m} {path}" in OPEN for m in methods)
        answers = route_answers(path, methods if replayable else methods - WRITE_METHODS)
        kwargs["responses"] = {**answers, **(kwargs.get("responses") or {})}
        if path.startswith(API_PREFIX) and methods & WRITE_METHODS and replayable:
            dependencies = list(kwargs.get("dependencies") or ())
            if not any(d.dependency is idempotency_key for d in dependencies):
                dependencies.append(Depends(idempotency_key))
            kwargs["dependencies"] = dependencies
        super().__init__(path, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        params = _query_params(self.dependant)
        lists = frozenset(name for name, is_list in params.items() if is_list)
        scalars = sorted(name for name, is_list in params.items() if not is_list)
        takes_body = _has_body(self.dependant)
        families = tuple((self.openapi_extra or {}).get(QUERY_FAMILIES, ()))

        async def strict_handler(request: Request) -> Response:
            unknown = sorted(k for k in set(request.query_params.keys()) - params.keys()
                             if not k.startswith(families))
            if unknown:
                raise Problem(
                    400, "unknown_parameter",
                    f"unknown query parameter{'s' if len(unknown) > 1 else ''}: "
                    + ", ".join(unknown),
                    parameters=unknown,
                )
            repeated = _repeated(request.query_params, scalars)
            if repeated:
                raise Problem(
                    400, "repeated_parameter",
                    "query parameter " + ", ".join(map(repr, repeated))
                    + " takes one value; it was given more than once",
                    parameters=repeated,
                )
            _expand_lists(request, lists)
            if takes_body and request.method in ("POST", "PUT", "PATCH"):
                ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
                has_body = request.headers.get("content-length", "0") != "0" or (
                    "transfer-encoding" in request.headers
                )
                if has_body and not (ctype == "application/json" or ctype.endswith("+json")):
                    raise Problem(415, "unsupported_media_type",
                                  "request bodies must be application/json")
                body = await request.body()
                _refuse_non_utf8(body)
                _refuse_nul(request, body)
            else:
                _refuse_nul(request, b"")
            return await handler(request)

        return strict_handler
