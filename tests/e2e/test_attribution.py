"""Work is attributed to people: an agent key belongs to an active agent, a
deactivated agent's keys stop working, and analytics names people and says when a
key acted as itself."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, auth


async def _agent(http: httpx.AsyncClient, admin: Any, name: str) -> dict[str, Any]:
    r = await http.post("/v1/agents", json={"email": f"{uuid.uuid4().hex[:8]}@example.com",
                                            "name": name, "role": "agent"},
                        headers=auth(admin))
    assert r.status_code == 201, r.text
    agent: dict[str, Any] = r.json()
    return agent


async def _key(http: httpx.AsyncClient, admin: Any, **body: Any) -> httpx.Response:
    return await http.post("/v1/api-keys", json=body, headers=auth(admin))


async def test_an_agent_key_must_belong_to_an_active_agent(http, tenant) -> None:
    admin = tenant.admin_key
    r = await _key(http, admin, name="k", role="agent")
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["code"] == "validation_failed" and "agent_id" in problem["detail"]
    assert [e["loc"] for e in problem["errors"]] == [["body", "agent_id"]]

    ann = await _agent(http, admin, "Ann")
    r = await _key(http, admin, name="ann's key", role="agent", agent_id=ann["id"])
    assert r.status_code == 201 and r.json()["agent_id"] == ann["id"]

    await http.patch(f"/v1/agents/{ann['id']}", json={"active": False}, headers=auth(admin))
    r = await _key(http, admin, name="k", role="agent", agent_id=ann["id"])
    assert r.status_code == 422 and r.json()["code"] == "unknown_agent"
    r = await _key(http, admin, name="k", role="analyst", agent_id=ann["id"])
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "agent_id"]


async def test_a_deactivated_agents_keys_neither_write_nor_read(http, tenant) -> None:
    admin = tenant.admin_key
    ann = await _agent(http, admin, "Ann")
    key = (await _key(http, admin, name="ann", role="agent", agent_id=ann["id"])).json()
    acting_admin = (await _key(http, admin, name="ann admin", role="admin",
                               agent_id=ann["id"])).json()
    ticket = (await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(admin))).json()
    reply = f"/v1/tickets/{ticket['id']}/messages"
    r = await http.post(reply, json={"body": "on it"}, headers=auth(key["secret"]))
    assert r.status_code == 201 and r.json()["message"]["author"]["id"] == ann["id"]

    r = await http.patch(f"/v1/agents/{ann['id']}", json={"active": False},
                         headers=auth(admin))
    assert r.status_code == 200 and r.json()["active"] is False
    for secret in (key["secret"], acting_admin["secret"]):
        for method, url, body in (("POST", reply, {"body": "still here"}),
                                  ("GET", f"/v1/tickets/{ticket['id']}", None),
                                  ("GET", "/v1/tickets", None)):
            r = await http.request(method, url, json=body, headers=auth(secret))
            assert r.status_code == 403, (method, url, r.text)
            assert r.json()["code"] == "agent_inactive"
    messages = (await http.get(reply, headers=auth(admin))).json()["data"]
    assert [m["body"] for m in messages if m["body"] == "still here"] == []

    # Not revoked: the person is back, so is the key.
    await http.patch(f"/v1/agents/{ann['id']}", json={"active": True}, headers=auth(admin))
    r = await http.post(reply, json={"body": "back"}, headers=auth(key["secret"]))
    assert r.status_code == 201, r.text
    # A key without a person (admin) is untouched by any of this.
    assert (await http.get("/v1/tickets", headers=auth(admin))).status_code == 200


async def test_analytics_names_people_and_says_when_a_key_acted(http, tenant, pool) -> None:
    admin = tenant.admin_key
    ann = await _agent(http, admin, "Ann")
    key = (await _key(http, admin, name="ann", role="agent", agent_id=ann["id"])).json()
    ticket = (await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(admin))).json()
    reply = f"/v1/tickets/{ticket['id']}/messages"
    for secret in (key["secret"], admin.secret, admin.secret):
        r = await http.post(reply, json={"body": "hello"}, headers=auth(secret))
        assert r.status_code == 201, r.text
    r = await http.post(f"/v1/tickets/{ticket['id']}/assignee", json={"agent_id": ann["id"]},
                        headers=auth(admin))
    assert r.status_code == 200, r.text
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()

    analyst = (await _key(http, admin, name="analyst", role="analyst")).json()["secret"]
    rows = (await http.get("/v1/analytics/agents", headers=auth(analyst))).json()["agents"]
    people = {a["id"]: a for a in
              (await http.get("/v1/agents", headers=auth(admin))).json()["data"]}
    keys = {k["id"]: k for k in
            (await http.get("/v1/api-keys", headers=auth(admin))).json()["data"]}
    assert rows == [
        {"kind": "agent", "id": ann["id"], "name": "Ann", "agent_id": ann["id"],
         "assigned": 1, "replies": 1, "solved": 0},
        {"kind": "api_key", "id": str(admin.id), "name": keys[str(admin.id)]["name"],
         "agent_id": None, "assigned": 0, "replies": 2, "solved": 0},
    ]
    # Every person the analytics name is an agent of the tenant; nothing else is
    # passed off as one.
    assert all(r["id"] in people for r in rows if r["kind"] == "agent")
    assert all(r["id"] not in people and r["id"] in keys for r in rows
               if r["kind"] == "api_key")
