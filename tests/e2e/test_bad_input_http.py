"""Bad requests are clear 4xx problem+json answers, never 500."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import NEW_TICKET, auth

PROBLEM = "application/problem+json"


def problem(response, status: int, code: str | None = None) -> dict:  # type: ignore[no-untyped-def,type-arg]
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body = response.json()
    if code is not None:
        assert body["code"] == code, body
    return body  # type: ignore[no-any-return]


async def test_query_cursor_and_path_errors(http, tenant):
    h = auth(tenant.admin_key)
    created = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()
    await http.post("/v1/tickets", json=NEW_TICKET, headers=h)

    body = problem(await http.get("/v1/tickets", params={"order": "x"}, headers=h), 400,
                   "unknown_parameter")
    assert body["parameters"] == ["order"]
    for params in ({"limit": 0}, {"limit": 101}, {"limit": "x"}, {"state": "nope"},
                   {"assignee": "bob"}, {"created_after": "yesterday"}):
        problem(await http.get("/v1/tickets", params=params, headers=h), 400)
    for cursor in ("garbage", "a.b", "." * 600, "eyJ4Ijp9.AAAA"):
        problem(await http.get("/v1/tickets", params={"cursor": cursor}, headers=h), 400,
                "invalid_cursor" if len(cursor) <= 512 else None)

    page = (await http.get("/v1/tickets", params={"limit": 1}, headers=h)).json()
    cursor = page["next_cursor"]
    assert cursor
    # The cursor works for its own list and filters only.
    assert (await http.get("/v1/tickets", params={"limit": 1, "cursor": cursor},
                           headers=h)).status_code == 200
    tampered = ("A" if cursor[0] != "A" else "B") + cursor[1:]
    problem(await http.get("/v1/tickets", params={"cursor": tampered}, headers=h), 400,
            "invalid_cursor")
    problem(await http.get("/v1/tickets", params={"cursor": cursor, "state": "open"},
                           headers=h), 400, "invalid_cursor")
    problem(await http.get(f"/v1/tickets/{created['id']}/messages", params={"cursor": cursor},
                           headers=h), 400, "invalid_cursor")

    for bad in ("not-a-uuid", "123"):
        problem(await http.get(f"/v1/tickets/{bad}", headers=h), 400, "invalid_parameter")
        problem(await http.post(f"/v1/tickets/{bad}/tags", json={"add": ["x"]}, headers=h), 400)
    problem(await http.get("/v1/tickets/00000000-0000-0000-0000-000000000000", headers=h),
            404, "not_found")


@pytest.mark.parametrize("body", [
    NEW_TICKET | {"colour": "red"},
    NEW_TICKET | {"priority": "whenever"},
    {k: v for k, v in NEW_TICKET.items() if k != "subject"},
    NEW_TICKET | {"subject": "   "},
    NEW_TICKET | {"requester": {"email": "not-an-email"}},
    NEW_TICKET | {"tags": ["Not A Slug!"]},
    [1, 2, 3],
])
async def test_invalid_bodies_are_422(http, tenant, body):
    problem(await http.post("/v1/tickets", json=body, headers=auth(tenant.admin_key)), 422)


async def test_body_shape_content_type_size_and_headers(http, tenant):
    h = auth(tenant.admin_key)
    problem(await http.post("/v1/tickets", content=b"{not json", headers=h | {
        "content-type": "application/json"}), 400, "malformed_json")
    problem(await http.post("/v1/tickets", content=b'{"subject": "caf\xe9"}', headers=h | {
        "content-type": "application/json"}), 400, "malformed_json")
    problem(await http.post("/v1/tickets", content=b"subject=x", headers=h | {
        "content-type": "application/x-www-form-urlencoded"}), 415, "unsupported_media_type")
    huge = NEW_TICKET | {"body": "x" * 70_000}
    problem(await http.post("/v1/tickets", json=huge, headers=h), 413, "body_too_large")
    created = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()
    url = f"/v1/tickets/{created['id']}/state"
    problem(await http.post(url, json={"state": "pending"}, headers=h | {"If-Match": "3"}), 400)
    problem(await http.post(url, json={"state": "pending"},
                            headers=h | {"Idempotency-Key": "x" * 300}), 400)
    problem(await http.post(url, json={"state": "pending", "extra": 1}, headers=h), 422)
    problem(await http.post(f"/v1/tickets/{created['id']}/assignee", json={}, headers=h), 422)


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("DELETE", "/v1/tickets", "GET, POST"),
    ("PUT", "/v1/agents", "GET, POST"),
    ("OPTIONS", "/v1/agents/00000000-0000-0000-0000-000000000001", "GET, PATCH"),
    ("DELETE", "/v1/webhooks", "GET, PUT"),
    ("POST", "/v1/settings", "GET, PUT"),
    ("GET", "/v1/tickets/00000000-0000-0000-0000-000000000001/state", "POST"),
])
async def test_a_wrong_method_is_405_naming_every_method_the_path_answers(
        http, tenant, method, path, allow):
    r = await http.request(method, path, headers=auth(tenant.admin_key))
    problem(r, 405, "method_not_allowed")
    assert r.headers["allow"] == allow


@pytest.mark.parametrize(("path", "params"), [
    ("/v1/analytics/volume", {"to": "0"}),
    ("/v1/analytics/summary", {"from": "20260101"}),
    ("/v1/tickets", {"created_after": "0"}),
    ("/v1/tickets", {"created_before": "1.7e9"}),
    ("/v1/events", {"after": "1700000000"}),
    ("/v1/events", {"before": "-1"}),
])
async def test_a_number_is_not_read_as_a_date(http, tenant, path, params):
    # Read as a Unix timestamp it would quietly mean 1970 or some moment in 2023.
    body = problem(await http.get(path, params=params, headers=auth(tenant.admin_key)), 400,
                   "invalid_parameter")
    assert "ISO 8601" in body["detail"]


async def test_iso_dates_and_times_are_read(http, tenant):
    h = auth(tenant.admin_key)
    for path, params in (("/v1/analytics/volume", {"from": "2026-01-01", "to": "2026-01-31"}),
                         ("/v1/tickets", {"created_after": "2026-01-01T00:00:00"}),
                         ("/v1/tickets", {"created_before": "2026-01-01T00:00:00+02:00"}),
                         ("/v1/events", {"after": "2026-01-01T00:00:00Z"})):
        r = await http.get(path, params=params, headers=h)
        assert r.status_code == 200, (path, r.text)


async def test_nul_characters_are_refused_where_they_are(http, tenant):
    # Postgres text and jsonb cannot hold U+0000: refused at the door, naming the place.
    h = auth(tenant.admin_key)
    body = problem(await http.post("/v1/tickets", headers=h, json={
        **NEW_TICKET, "subject": "a\x00b", "tags": ["ok", "b\x00d"]}), 422, "validation_failed")
    assert sorted(e["loc"] for e in body["errors"]) == [
        ["body", "subject"], ["body", "tags", "1"]]
    body = problem(await http.post("/v1/agents", headers=h, json={
        "email": "x@example.com", "name": "n\x00"}), 422, "validation_failed")
    assert body["errors"][0]["loc"] == ["body", "name"]
    body = problem(await http.get("/v1/tickets", params={"tag": "\x00x"}, headers=h), 400,
                   "invalid_parameter")
    assert body["errors"][0]["loc"] == ["query", "tag"]
    # An escaped backslash before "u0000" is plain text, not NUL.
    r = await http.post("/v1/tickets", headers={**h, "content-type": "application/json"},
                        content=b'{"subject": "C:\\\\u0000", "body": "b", '
                                b'"requester": {"email": "a@example.com"}}')
    assert r.status_code == 201, r.text
    assert r.json()["subject"] == "C:\\u0000"
    assert (await http.get("/v1/tickets", headers=h)).status_code == 200


async def test_a_body_too_large_is_a_problem_with_its_instance(http, tenant):
    h = auth(tenant.admin_key) | {"content-type": "application/json"}
    big = b'{"subject": "' + b"x" * 70_000 + b'"}'

    async def chunks():  # no Content-Length: the limit is found while reading
        for i in range(0, len(big), 8192):
            yield big[i:i + 8192]

    declared = await http.post("/v1/tickets", content=big, headers=h)
    streamed = await http.post("/v1/tickets", content=chunks(), headers=h)
    assert "content-length" not in streamed.request.headers
    for r in (declared, streamed):
        body = problem(r, 413, "body_too_large")
        assert body["instance"] == "/v1/tickets"
