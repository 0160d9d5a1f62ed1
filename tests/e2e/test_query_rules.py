"""One rule for query parameters, checked on every operation of the OpenAPI document.

The rule (docs/api.md, "Query parameters"): a list-valued parameter takes a comma list,
repeats, or both, meaning any of the values, and every value is honoured; a scalar
parameter given twice is a 400 naming it; a value outside a parameter's enumeration is
a 400 naming the parameter and the value; a date-only parameter given a time is a 400.

The walk reads the parameters from ``/openapi.json``, so a parameter added later is held
to the same rule without a change here (a list parameter whose schema enumerates no
values needs sample values in ``SAMPLES``, and the walk says so).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import httpx

from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.customers import portal_headers, widget_headers

PROBLEM = "application/problem+json"
SAMPLES: dict[str, list[str]] = {"tag": ["auth", "feature", "hardware"]}
REQUIRED: dict[str, dict[str, str]] = {"/v1/search": {"q": "printer"}}
"""Required parameters the walk gives beside the one it tries, by path."""
"""Values to try for list parameters whose schema does not enumerate them."""


def _resolve(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$ref``s replaced by what they name (parameter schemas only)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return _resolve(document, document["components"]["schemas"][name])
    return {k: (_resolve(document, v) if isinstance(v, dict) else
                [_resolve(document, i) if isinstance(i, dict) else i for i in v]
                if isinstance(v, list) else v)
            for k, v in schema.items()}


def _schema(param: dict[str, Any]) -> dict[str, Any]:
    """The parameter's schema without the ``null`` of an optional parameter."""
    schema: dict[str, Any] = param["schema"]
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    assert len(options) == 1, param
    return options[0]


def _scalar_value(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return str(schema["enum"][0])
    fmt, kind = schema.get("format"), schema.get("type")
    if fmt == "uuid":
        return "00000000-0000-0000-0000-000000000001"
    if fmt == "date":
        return "2026-01-01"
    if fmt == "date-time":
        return "2026-01-01T00:00:00Z"
    if kind == "integer":
        return str(max(1, schema.get("minimum", 1)))
    return "x"


def _ids(response: httpx.Response) -> set[Any]:
    assert response.status_code == 200, response.text
    rows = response.json()["data"]
    return {row.get("id", row.get("seq")) for row in rows}


async def _world(http: httpx.AsyncClient, tenant: Any) -> tuple[dict[str, str], str]:
    """Tickets in several states, priorities, sources and tags, so that every list
    parameter has values that each select something different."""
    h = auth(tenant.admin_key)
    tickets = []
    for priority, source, tags in (("low", "email", ["auth"]), ("high", "chat", ["feature"]),
                                   ("urgent", "phone", ["auth", "billing"])):
        r = await http.post("/v1/tickets", headers=h,
                            json=NEW_TICKET | {"priority": priority, "source": source,
                                               "tags": tags})
        assert r.status_code == 201, r.text
        tickets.append(r.json()["id"])
    for ticket_id, state in zip(tickets[1:], ("pending", "on_hold"), strict=True):
        r = await http.post(f"/v1/tickets/{ticket_id}/state", json={"state": state}, headers=h)
        assert r.status_code == 200, r.text
    return h, tickets[0]


def _url(path: str, ticket_id: str) -> str:
    for name in ("ticket_id", "agent_id", "key_id", "attachment_id"):
        path = path.replace("{" + name + "}", ticket_id)
    return path


async def _query_params(http: httpx.AsyncClient) -> list[tuple[str, str, dict[str, Any]]]:
    document = (await http.get("/openapi.json")).json()
    return [(method.upper(), path, _resolve(document, param))
            for path, operations in document["paths"].items()
            for method, operation in operations.items()
            for param in operation.get("parameters", []) if param["in"] == "query"]


def _refused(response: httpx.Response, code: str, *named: str) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    assert body["code"] == code, body
    for text in named:
        assert text in body["detail"], (text, body)


async def test_list_parameters_take_commas_and_repeats_and_honour_every_value(http, tenant):
    h, ticket_id = await _world(http, tenant)
    checked = []
    for method, path, param in await _query_params(http):
        schema = _schema(param)
        if schema.get("type") != "array":
            continue
        name, url = param["name"], _url(path, ticket_id)
        candidates = [str(v) for v in schema["items"].get("enum", SAMPLES.get(name, []))]
        assert candidates, f"{method} {path}: give sample values of {name!r} in SAMPLES"
        # Two values that each select something, and not the same things.
        picked: list[tuple[str, set[Any]]] = []
        for value in candidates:
            found = _ids(await http.request(method, url, params={name: value}, headers=h))
            if found and all(found != other for _, other in picked):
                picked.append((value, found))
            if len(picked) == 2:
                break
        assert len(picked) == 2, f"{method} {path}: no two values of {name!r} select rows"
        (a, only_a), (b, only_b) = picked
        repeated = await http.request(method, url, params=[(name, a), (name, b)], headers=h)
        comma = await http.request(method, url, params={name: f"{a},{b}"}, headers=h)
        both = await http.request(method, url, params=[(name, f"{a},{b}"), (name, a)],
                                  headers=h)
        for response in (repeated, comma, both):
            assert _ids(response) == only_a | only_b, (method, path, name, response.url)
        checked.append(f"{path}:{name}")
    assert {"/v1/tickets:state", "/v1/tickets:priority", "/v1/tickets:source",
            "/v1/tickets:tag", "/v1/events:type"} <= set(checked), checked


async def test_a_scalar_parameter_given_twice_is_refused_naming_it(http, tenant):
    h, ticket_id = await _world(http, tenant)
    checked = 0
    for method, path, param in await _query_params(http):
        schema = _schema(param)
        if schema.get("type") == "array":
            continue
        name, value = param["name"], _scalar_value(schema)
        r = await http.request(method, _url(path, ticket_id), params=[(name, value)] * 2,
                               headers=h)
        _refused(r, "repeated_parameter", f"'{name}'")
        assert r.json()["parameters"] == [name]
        checked += 1
    assert checked >= 20


async def test_values_outside_an_enumeration_are_refused_naming_parameter_and_value(
        http, tenant):
    h, ticket_id = await _world(http, tenant)
    # The portal's and widget's routes take their own callers' credentials.
    customer = await portal_headers(http, h)
    tenant_id, visitor = await widget_headers(http, h)
    checked = []
    for method, path, param in await _query_params(http):
        schema = _schema(param)
        enum = schema.get("items", schema).get("enum")
        if enum is None:
            continue
        name, url = param["name"], _url(path.replace("{tenant_id}", tenant_id), ticket_id)
        value = f"{enum[0]},Bogus" if schema.get("type") == "array" else "Bogus"
        params = REQUIRED.get(path, {}) | {name: value}
        caller = (customer if path.startswith("/v1/portal/")
                  else visitor if path.startswith("/v1/widget/") else h)
        _refused(await http.request(method, url, params=params, headers=caller),
                 "invalid_parameter", name, "'Bogus'")
        checked.append(f"{path}:{name}")
    assert {"/v1/tickets:state", "/v1/events:type", "/v1/search:type"} <= set(checked), \
        checked
    # group_by is a pattern, not an enumeration (it also takes field.<key>), and is held
    # to the same rule.
    for path in ("/v1/analytics/summary", "/v1/analytics/volume"):
        _refused(await http.get(path, params={"group_by": "Bogus"}, headers=h),
                 "invalid_parameter", "group_by", "'Bogus'")


async def test_tags_are_matched_as_written_in_commands_or_refused(http, tenant):
    h, _ = await _world(http, tenant)
    # A command lower-cases tags, so a filter does too; a tag no ticket can carry is a 400.
    assert _ids(await http.get("/v1/tickets", params={"tag": "AUTH"}, headers=h)) == \
        _ids(await http.get("/v1/tickets", params={"tag": "auth"}, headers=h))
    for bad in ("not a slug", "", "auth,"):
        _refused(await http.get("/v1/tickets", params={"tag": bad}, headers=h),
                 "invalid_parameter", "tag")


async def test_a_date_only_parameter_given_a_time_is_refused(http, tenant):
    h, ticket_id = await _world(http, tenant)
    checked = []
    for method, path, param in await _query_params(http):
        if _schema(param).get("format") != "date":
            continue
        name, url = param["name"], _url(path, ticket_id)
        for value in ("2026-12-01T00:00:00Z", "2026-12-01T00:00:00", "2026-12-01 00:00"):
            _refused(await http.request(method, url, params={name: value}, headers=h),
                     "invalid_parameter", name)
        r = await http.request(method, url, params={name: "2026-12-01"}, headers=h)
        assert r.status_code == 200, r.text
        checked.append(f"{path}:{name}")
    assert {"/v1/analytics/summary:from", "/v1/analytics/summary:to"} <= set(checked)


async def test_the_event_feed_refuses_an_unknown_type_as_webhooks_do(http, tenant):
    h, _ = await _world(http, tenant)
    feed = await http.get("/v1/events", params={"type": "Bogus"}, headers=h)
    _refused(feed, "invalid_parameter", "type", "'Bogus'")
    hook = await http.put("/v1/webhooks", headers=h, json={
        "url": "https://example.com/h", "secret": "s" * 16, "event_types": ["Bogus"]})
    assert hook.status_code == 422, hook.text
    opened = await http.get("/v1/events", params={"type": "TicketOpened"}, headers=h)
    assert {e["type"] for e in opened.json()["data"]} == {"TicketOpened"}
    assert len(opened.json()["data"]) == 3
    assert UUID(opened.json()["data"][0]["stream_id"])
