"""The request-shape rules of ``StrictRoute`` (api/http/routing.py), on a small app of
its own served in process: no database, no server.

tests/e2e/test_query_rules.py and tests/e2e/test_bad_input_http.py hold the real
routes to the same rules.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import httpx
import pytest
from fastapi import APIRouter, Body, FastAPI, Query, Request

from api.http import problems
from api.http.headers import idempotency_key
from api.http.routing import _JSON_NUL, QUERY_FAMILIES, StrictRoute, _is_list, _nul_paths


def build_router() -> APIRouter:
    router = APIRouter(route_class=StrictRoute)

    @router.get("/v1/things")
    async def list_things(status: Annotated[list[str] | None, Query()] = None,
                          q: str | None = None, limit: int = 25) -> dict[str, Any]:
        return {"status": status, "q": q, "limit": limit}

    @router.get("/v1/fielded", openapi_extra={QUERY_FAMILIES: ["field."]})
    async def fielded(request: Request, q: str | None = None) -> dict[str, Any]:
        return {"q": q, "fields": sorted(k for k in request.query_params
                                         if k.startswith("field."))}

    @router.post("/v1/things")
    async def create_thing(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        return body

    @router.post("/v1/auth/sign-in")
    async def sign_in(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        return body

    @router.post("/internal/things")
    async def internal(body: Annotated[dict[str, Any], Body()]) -> dict[str, Any]:
        return body

    return router


ROUTER = build_router()
APP = FastAPI()
APP.include_router(ROUTER)
problems.install(APP)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=APP),
                                 base_url="http://test") as c:
        yield c


async def test_an_unknown_query_parameter_is_a_400_naming_it(client: httpx.AsyncClient):
    r = await client.get("/v1/things", params={"stauts": "open", "zz": "1", "q": "x"})
    assert r.status_code == 400
    assert r.json()["code"] == "unknown_parameter"
    assert r.json()["parameters"] == ["stauts", "zz"]
    assert r.json()["detail"] == "unknown query parameters: stauts, zz"


async def test_a_scalar_given_twice_is_a_400_naming_it(client: httpx.AsyncClient):
    r = await client.get("/v1/things?q=a&q=b&limit=1")
    assert (r.status_code, r.json()["code"], r.json()["parameters"]) == (
        400, "repeated_parameter", ["q"])


@pytest.mark.parametrize("query", ["status=open,pending", "status=open&status=pending",
                                   "status=open,pending&status=pending"])
async def test_a_list_takes_commas_repeats_or_both(client: httpx.AsyncClient, query: str):
    r = await client.get(f"/v1/things?{query}")
    assert r.status_code == 200
    assert set(r.json()["status"]) == {"open", "pending"}


async def test_commas_split_only_list_valued_parameters(client: httpx.AsyncClient):
    r = await client.get("/v1/things", params={"q": "a,b", "status": "x"})
    assert r.json() == {"status": ["x"], "q": "a,b", "limit": 25}


async def test_a_declared_family_of_parameters_passes_to_the_route(client: httpx.AsyncClient):
    r = await client.get("/v1/fielded?field.size=L&field.colour=red&q=1")
    assert r.json() == {"q": "1", "fields": ["field.colour", "field.size"]}
    assert (await client.get("/v1/fielded?fields.size=L")).json()["parameters"] == [
        "fields.size"]


@pytest.mark.parametrize("ctype", ["text/plain", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x", ""])
async def test_a_body_that_is_not_json_is_a_415(client: httpx.AsyncClient, ctype: str):
    r = await client.post("/v1/things", content=b'{"a": 1}', headers={"content-type": ctype})
    assert (r.status_code, r.json()["code"]) == (415, "unsupported_media_type")


@pytest.mark.parametrize("ctype", ["application/json", "Application/JSON; charset=utf-8",
                                   "application/merge-patch+json"])
async def test_json_and_plus_json_bodies_are_taken(client: httpx.AsyncClient, ctype: str):
    r = await client.post("/v1/things", content=b'{"a": 1}', headers={"content-type": ctype})
    assert r.status_code == 200 and r.json() == {"a": 1}


async def test_nul_in_the_query_is_a_400_naming_the_parameter(client: httpx.AsyncClient):
    r = await client.get("/v1/things?q=a%00b")
    body = r.json()
    assert (r.status_code, body["code"]) == (400, "invalid_parameter")
    assert body["errors"] == [{"loc": ["query", "q"], "type": "string_nul",
                               "msg": "text cannot contain the NUL character (U+0000)"}]


async def test_nul_in_the_body_is_a_422_naming_every_place(client: httpx.AsyncClient):
    r = await client.post("/v1/things", content=rb'{"a": "x\u0000", "b": [{"k\u0000": 1}]}',
                          headers={"content-type": "application/json"})
    assert (r.status_code, r.json()["code"]) == (422, "validation_failed")
    assert [e["loc"] for e in r.json()["errors"]] == [["body", "a"], ["body", "b", "0", "k\x00"]]


async def test_an_escaped_backslash_before_u0000_is_no_nul(client: httpx.AsyncClient):
    r = await client.post("/v1/things", content=rb'{"a": "\\u0000"}',
                          headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json() == {"a": "\\u0000"}


@pytest.mark.parametrize(("raw", "nul"), [
    (rb'"\u0000"', True),
    (rb'"\\u0000"', False),     # an escaped backslash, then the text u0000
    (rb'"\\\u0000"', True),     # an escaped backslash, then NUL
    (rb'"\\\\u0000"', False),
    (rb'"u0000"', False),
    (rb'"\u00000"', True),
])
def test_the_nul_escape_is_found_after_an_odd_run_of_backslashes(raw: bytes, nul: bool):
    assert bool(_JSON_NUL.search(raw)) is nul


def test_nul_paths_name_keys_and_items():
    doc = {"a": ["ok", "n\x00"], "k\x00": {"deep": "\x00"}, "fine": 1}
    assert list(_nul_paths(doc)) == [["a", "1"], ["k\x00"], ["k\x00", "deep"]]


@pytest.mark.parametrize(("annotation", "is_list"), [
    (list[str], True), (list[str] | None, True), (Annotated[list[int] | None, "x"], True),
    (tuple[int, ...], True), (set[str], True), (frozenset[str], True),
    (str, False), (str | None, False), (Annotated[int, "x"], False), (dict[str, str], False),
])
def test_what_counts_as_list_valued(annotation: Any, is_list: bool):
    assert _is_list(annotation) is is_list


def _declares_idempotency_key(path: str, method: str) -> bool:
    route = next(r for r in ROUTER.routes
                 if isinstance(r, StrictRoute) and r.path == path and method in r.methods)
    return any(d.dependency is idempotency_key for d in route.dependencies)


def test_side_effecting_api_routes_declare_idempotency_key_but_signing_in():
    assert _declares_idempotency_key("/v1/things", "POST")
    assert not _declares_idempotency_key("/v1/things", "GET")
    assert not _declares_idempotency_key("/v1/auth/sign-in", "POST")
    assert not _declares_idempotency_key("/internal/things", "POST")


def test_every_api_route_documents_the_answers_of_where_it_is():
    paths = APP.openapi()["paths"]
    assert {"422", "429"} <= set(paths["/v1/things"]["get"]["responses"])
    assert "409" not in paths["/v1/things"]["get"]["responses"]
    # Side-effecting: an Idempotency-Key in flight (409) too; signing in is not
    # replayable, so it has no 409 of that kind.
    assert {"409", "422", "429"} <= set(paths["/v1/things"]["post"]["responses"])
    assert "409" not in paths["/v1/auth/sign-in"]["post"]["responses"]
    assert "429" in paths["/v1/auth/sign-in"]["post"]["responses"]
    assert "429" not in paths["/internal/things"]["post"]["responses"]
