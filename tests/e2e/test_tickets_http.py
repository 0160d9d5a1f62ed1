"""The ticket routes over HTTP: happy paths, ETag/If-Match, roles, tenant isolation."""

from __future__ import annotations

import uuid

import httpx

from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.wait import until


async def open_ticket(http, key, **over):  # type: ignore[no-untyped-def]
    response = await http.post("/v1/tickets", json=NEW_TICKET | over, headers=auth(key))
    assert response.status_code == 201, response.text
    return response.json()


async def test_open_get_and_command_a_ticket(http, tenant):
    admin = tenant.admin_key
    created = await open_ticket(http, admin)
    assert created["state"] == "open" and created["version"] == 1
    assert created["sla"]["first_response"]["due_at"] is not None

    got = await http.get(f"/v1/tickets/{created['id']}", headers=auth(admin))
    assert got.status_code == 200 and got.headers["etag"] == '"1"'
    assert got.json() == created

    moved = await http.post(f"/v1/tickets/{created['id']}/state",
                            json={"state": "pending", "reason": "waiting"},
                            headers=auth(admin, **{"If-Match": '"1"'}))
    assert moved.status_code == 200, moved.text
    assert moved.headers["etag"] == '"2"'
    assert moved.json()["sla"]["resolution"]["paused"] is True

    stale = await http.post(f"/v1/tickets/{created['id']}/priority", json={"priority": "low"},
                            headers=auth(admin, **{"If-Match": '"1"'}))
    assert stale.status_code == 412 and stale.json()["code"] == "precondition_failed"

    tags = await http.post(f"/v1/tickets/{created['id']}/tags",
                           json={"add": ["vip"], "remove": ["hardware"]}, headers=auth(admin))
    assert tags.json()["tags"] == ["vip"]

    illegal = await http.post(f"/v1/tickets/{created['id']}/state", json={"state": "closed"},
                              headers=auth(admin))
    assert illegal.status_code == 409 and illegal.json()["code"] == "invalid_transition"


async def test_messages_authors_and_paging(http, tenant, owner):
    admin = tenant.admin_key
    intake = await owner.key(tenant.tenant_id, "intake")
    agent_id = await owner.agent(tenant.tenant_id)
    agent = await owner.key(tenant.tenant_id, "agent", agent_id=agent_id)
    ticket = await open_ticket(http, intake)
    url = f"/v1/tickets/{ticket['id']}/messages"
    for i in range(4):
        r = await http.post(url, json={"body": f"reply {i}"}, headers=auth(agent))
        assert r.status_code == 201, r.text
        assert r.json()["message"]["author"] == {"kind": "agent", "id": str(agent_id)}
    r = await http.post(url, json={"body": "thanks"}, headers=auth(intake))
    assert r.json()["message"]["author"] == {"kind": "customer", "id": "ann@example.com"}
    r = await http.post(url, json={"body": "note", "visibility": "internal"},
                        headers=auth(intake))
    assert r.status_code == 422

    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await http.get(url, params=params, headers=auth(admin))).json()
        seen += [m["body"] for m in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[0] == NEW_TICKET["body"] and seen[-1] == "thanks" and len(seen) == 6


async def test_assignee_must_be_an_active_agent(http, tenant, owner):
    admin = tenant.admin_key
    ticket = await open_ticket(http, admin)
    active = await owner.agent(tenant.tenant_id)
    inactive = await owner.agent(tenant.tenant_id, active=False)
    url = f"/v1/tickets/{ticket['id']}/assignee"
    assert (await http.post(url, json={"agent_id": str(active)},
                            headers=auth(admin))).json()["assignee"] == str(active)
    for bad in (inactive, uuid.uuid4()):
        r = await http.post(url, json={"agent_id": str(bad)}, headers=auth(admin))
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "agent_id"]
    r = await http.post(url, json={"agent_id": None}, headers=auth(admin))
    assert r.json()["assignee"] is None


async def test_customer_message_on_closed_ticket_returns_follow_up(http, tenant, owner):
    admin = tenant.admin_key
    intake = await owner.key(tenant.tenant_id, "intake")
    ticket = await open_ticket(http, admin)
    for state in ("solved", "closed"):
        await http.post(f"/v1/tickets/{ticket['id']}/state", json={"state": state},
                        headers=auth(admin))
    r = await http.post(f"/v1/tickets/{ticket['id']}/messages", json={"body": "again"},
                        headers=auth(intake))
    assert r.status_code == 201, r.text
    follow_up = r.json()["ticket"]
    assert follow_up["follow_up_of"] == ticket["id"] and follow_up["id"] != ticket["id"]
    r = await http.post(f"/v1/tickets/{ticket['id']}/messages", json={"body": "again"},
                        headers=auth(admin))
    assert r.status_code == 409 and r.json()["code"] == "ticket_closed"


async def test_tenant_isolation_and_roles(http, tenant, make_tenant, owner):
    other = await make_tenant("Other")
    ticket = await open_ticket(http, tenant.admin_key)
    tid = ticket["id"]
    r = await http.get(f"/v1/tickets/{tid}", headers=auth(other.admin_key))
    assert r.status_code == 404 and r.json()["code"] == "not_found"
    r = await http.post(f"/v1/tickets/{tid}/tags", json={"add": ["x"]},
                        headers=auth(other.admin_key))
    assert r.status_code == 404

    auditor = await owner.key(tenant.tenant_id, "auditor")
    commands = [
        ("/v1/tickets", NEW_TICKET),
        (f"/v1/tickets/{tid}/messages", {"body": "hi"}),
        (f"/v1/tickets/{tid}/assignee", {"agent_id": None}),
        (f"/v1/tickets/{tid}/priority", {"priority": "low"}),
        (f"/v1/tickets/{tid}/state", {"state": "pending"}),
        (f"/v1/tickets/{tid}/tags", {"add": ["x"]}),
    ]
    for url, body in commands:
        r = await http.post(url, json=body, headers=auth(auditor))
        assert r.status_code == 403, url
        assert r.headers["content-type"] == "application/problem+json"
    # Read-only, but the current state of a ticket is theirs to read, not the lists.
    current = await http.get(f"/v1/tickets/{tid}", headers=auth(auditor))
    assert current.status_code == 200 and current.json()["id"] == tid
    assert current.headers["etag"] == f'"{current.json()["version"]}"'
    for url in ("/v1/tickets", f"/v1/tickets/{tid}/messages"):
        assert (await http.get(url, headers=auth(auditor))).status_code == 403, url

    analyst = await owner.key(tenant.tenant_id, "analyst")
    for url in ("/v1/tickets", f"/v1/tickets/{tid}", f"/v1/tickets/{tid}/messages"):
        assert (await http.get(url, headers=auth(analyst))).status_code == 403, url

    agent = await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id))
    assert (await http.get("/v1/tickets", headers=auth(agent))).status_code == 200
    await owner.revoke(tenant.tenant_id, agent.id)

    async def refused() -> httpx.Response | None:
        # Revoked elsewhere (the operator's connection): this process hears of it by
        # the database's notification, within milliseconds (api/http/keycache.py).
        r = await http.get("/v1/tickets", headers=auth(agent))
        return r if r.status_code == 401 else None

    r = await until(refused, timeout=5, interval=0.01, what="the revoked key to be refused")
    assert r.json()["code"] == "invalid_api_key"
    assert (await http.get("/v1/tickets")).status_code == 401
