"""Idempotency-Key replays: the first answer's bytes exactly, a new key's secret
included (sealed in the record, never in plain text), and a clear refusal naming the
key when the server cannot open the seal."""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import httpx
import pytest

from api.app import create_app
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support import pg

SECRET = "a server secret that is not in the database"


@pytest.fixture
async def sealing(db: pg.TestDatabase) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app configured with IDEMPOTENCY_SECRET."""
    async with asgi_client(create_app(app_settings(db, idempotency_secret=SECRET))) as client:
        yield client


async def _twice(http: httpx.AsyncClient, url: str, body: object, headers: dict[str, str],
                 ) -> tuple[httpx.Response, httpx.Response]:
    first = await http.post(url, json=body, headers=headers)
    again = await http.post(url, json=body, headers=headers)
    assert first.status_code < 300, first.text
    assert "idempotent-replayed" not in first.headers
    assert again.headers.get("idempotent-replayed") == "true", again.text
    return first, again


async def _records(db: pg.TestDatabase) -> str:
    """Every idempotency record, every column, as text (read as the owner)."""
    conn = await asyncpg.connect(db.admin_url)
    try:
        rows = await conn.fetch("SELECT t::text AS row FROM idempotency_keys t")
    finally:
        await conn.close()
    return "\n".join(r["row"] for r in rows)


async def test_a_ticket_command_replays_the_first_answer_byte_for_byte(sealing, tenant):
    h = auth(tenant.admin_key)
    first, again = await _twice(sealing, "/v1/tickets", NEW_TICKET,
                                h | {"Idempotency-Key": "open-1"})
    assert again.status_code == first.status_code == 201
    assert again.content == first.content
    assert (again.headers["etag"], again.headers["location"]) == (
        first.headers["etag"], first.headers["location"])
    url = f"{first.headers['location']}/state"
    first, again = await _twice(sealing, url, {"state": "pending", "reason": "waiting"},
                                h | {"Idempotency-Key": "state-1"})
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"]


async def test_a_key_creation_replays_the_same_secret_which_is_stored_only_sealed(
        sealing, tenant, db):
    h = auth(tenant.admin_key) | {"Idempotency-Key": "issue-analyst-1"}
    first, again = await _twice(sealing, "/v1/api-keys",
                                {"name": "reports", "role": "analyst"}, h)
    assert first.status_code == again.status_code == 201
    assert again.content == first.content
    secret = first.json()["secret"]
    assert secret and secret.startswith("hd_")
    # The secret works, and only one key was issued.
    assert (await sealing.get("/v1/analytics/backlog", headers=auth(secret))).status_code == 200
    keys = (await sealing.get("/v1/api-keys", headers=auth(tenant.admin_key))).json()["data"]
    assert [k["name"] for k in keys].count("reports") == 1
    stored = await _records(db)
    assert "issue-analyst-1" in stored  # the record is there...
    assert secret not in stored and secret.encode().hex() not in stored  # ...sealed


async def test_without_the_server_secret_a_key_creation_replay_names_the_key_to_revoke(
        http, tenant, db):
    h = auth(tenant.admin_key) | {"Idempotency-Key": "issue-agent-1"}
    first = await http.post("/v1/api-keys", json={"name": "bot", "role": "intake"}, headers=h)
    assert first.status_code == 201 and first.json()["secret"]
    again = await http.post("/v1/api-keys", json={"name": "bot", "role": "intake"}, headers=h)
    assert again.status_code == 409, again.text
    problem = again.json()
    key_id = first.json()["id"]
    assert problem["code"] == "secret_not_replayable"
    assert problem["key_id"] == key_id and key_id in problem["detail"]
    assert f"DELETE /v1/api-keys/{key_id}" in problem["detail"]
    assert first.json()["secret"] not in await _records(db)


async def test_a_changed_server_secret_refuses_the_replay_instead_of_showing_garbage(
        sealing, tenant, db):
    h = auth(tenant.admin_key) | {"Idempotency-Key": "issue-2"}
    first = await sealing.post("/v1/api-keys", json={"name": "x", "role": "auditor"}, headers=h)
    assert first.status_code == 201
    other = create_app(app_settings(db, idempotency_secret="another secret altogether"))
    async with asgi_client(other) as client:
        again = await client.post("/v1/api-keys", json={"name": "x", "role": "auditor"},
                                  headers=h)
    assert again.status_code == 409 and again.json()["key_id"] == first.json()["id"]


async def test_a_record_belongs_to_one_api_key_and_one_route_as_documented(
        sealing, tenant, owner):
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    section = docs.split("## Idempotency-Key", 1)[1].split("\n## ", 1)[0]
    assert "(tenant, API key, method and route template, key value)" in section

    first_key, second_key = tenant.admin_key, await owner.key(tenant.tenant_id, "admin")
    same = {"Idempotency-Key": "same-value"}
    a = await sealing.post("/v1/tickets", json=NEW_TICKET, headers=auth(first_key) | same)
    b = await sealing.post("/v1/tickets", json=NEW_TICKET, headers=auth(second_key) | same)
    # Another API key: another record, so the command runs again.
    assert a.status_code == b.status_code == 201 and "idempotent-replayed" not in b.headers
    assert a.json()["id"] != b.json()["id"]
    # Another route with the same API key and value: another record too.
    h = auth(first_key) | same
    moved = await sealing.post(f"/v1/tickets/{a.json()['id']}/state",
                               json={"state": "pending"}, headers=h)
    raised = await sealing.post(f"/v1/tickets/{a.json()['id']}/priority",
                                json={"priority": "urgent"}, headers=h)
    assert moved.status_code == raised.status_code == 200
    assert "idempotent-replayed" not in raised.headers
    # The same route template with another path: the record's request differs, 422.
    other = await sealing.post(f"/v1/tickets/{b.json()['id']}/state",
                               json={"state": "pending"}, headers=h)
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
