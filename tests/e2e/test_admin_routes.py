"""Tenant admin routes: agents, settings and API keys, and their tenant-stream events."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import bearer

GOOD_SETTINGS = {
    "sla_targets": {
        "urgent": {"first_response_ms": 1_800_000, "resolution_ms": 14_400_000},
        "high": {"first_response_ms": 3_600_000, "resolution_ms": 28_800_000},
        "normal": {"first_response_ms": 14_400_000, "resolution_ms": 86_400_000},
        "low": {"first_response_ms": 86_400_000, "resolution_ms": 432_000_000},
    },
    "business_hours": {"timezone": "Europe/Berlin",
                       "weekly": {"0": [["09:00", "17:00"]], "4": [["09:00", "13:00"]]},
                       "holidays": ["2026-12-25"]},
    "paused_states": ["solved", "pending", "on_hold"],
    "sweep": {"pending_days": 5, "solved_days": 2},
}


async def _issue(http, admin: str, role: str, **extra) -> dict:
    r = await http.post("/v1/api-keys", json={"name": f"{role} key", "role": role, **extra},
                        headers=bearer(admin))
    assert r.status_code == 201, r.text
    return r.json()


async def _agent_key(http, admin: str) -> dict:
    """An agent key, linked (as every agent key must be) to a new agent."""
    r = await http.post("/v1/agents", json={"email": f"{uuid.uuid4().hex[:8]}@example.com",
                                            "name": "Keyholder"}, headers=bearer(admin))
    assert r.status_code == 201, r.text
    return await _issue(http, admin, "agent", agent_id=r.json()["id"])


async def _tenant_events(http, key: str, tenant_id) -> list[dict]:
    r = await http.get("/v1/events", params={"stream_id": str(tenant_id), "limit": 100},
                       headers=bearer(key))
    assert r.status_code == 200, r.text
    return r.json()["data"]


async def test_agents_crud_roles_and_events(http, make_tenant):
    t = await make_tenant()
    admin = t.admin_key.secret
    r = await http.post("/v1/agents", json={"email": "ann@example.com", "name": "Ann"},
                        headers=bearer(admin))
    assert r.status_code == 201, r.text
    ann = r.json()
    assert ann["role"] == "agent" and ann["active"] and ann["version"] == 1

    dup = await http.post("/v1/agents", json={"email": "ann@example.com", "name": "Again"},
                          headers=bearer(admin))
    assert dup.status_code == 409 and dup.json()["code"] == "agent_exists"

    for bad in ({"email": "not-an-address", "name": "X"}, {"email": "x@example.com"},
                {"email": "x@example.com", "name": "X", "role": "auditor"},
                {"email": "x@example.com", "name": "X", "colour": "red"},
                {"email": "x@example.com", "name": "   "}):
        r = await http.post("/v1/agents", json=bad, headers=bearer(admin))
        assert r.status_code == 422, (bad, r.text)
        assert r.headers["content-type"] == "application/problem+json"

    r = await http.patch(f"/v1/agents/{ann['id']}", json={"name": "Ann B", "active": False},
                         headers=bearer(admin))
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "Ann B" and r.json()["version"] == 2 and not r.json()["active"]
    for bad in ({}, {"name": None}, {"active": "no"}, {"role": "analyst"}):
        r = await http.patch(f"/v1/agents/{ann['id']}", json=bad, headers=bearer(admin))
        assert r.status_code == 422, (bad, r.text)
    r = await http.patch(f"/v1/agents/{uuid.uuid4()}", json={"name": "Z"}, headers=bearer(admin))
    assert r.status_code == 404

    agent = await _agent_key(http, admin)
    r = await http.get("/v1/agents", headers=bearer(agent["secret"]))
    assert r.status_code == 200
    assert [a["id"] for a in r.json()["data"]] == [ann["id"], agent["agent_id"]]
    r = await http.post("/v1/agents", json={"email": "b@example.com", "name": "B"},
                        headers=bearer(agent["secret"]))
    assert r.status_code == 403
    r = await http.patch(f"/v1/agents/{ann['id']}", json={"name": "Q"},
                         headers=bearer(agent["secret"]))
    assert r.status_code == 403
    analyst = await _issue(http, admin, "analyst")
    assert (await http.get("/v1/agents", headers=bearer(analyst["secret"]))).status_code == 403

    events = await _tenant_events(http, admin, t.tenant_id)
    by_type = {e["type"]: e for e in reversed(events)}  # the first of each type
    assert by_type["AgentAdded"]["data"]["email"] == "ann@example.com"
    assert by_type["AgentUpdated"]["data"] == {
        "agent_id": ann["id"], "name": "Ann B", "active": False, "email": None, "role": None,
        "at": by_type["AgentUpdated"]["data"]["at"]}
    assert by_type["AgentAdded"]["actor"]["kind"] == "api_key"
    assert by_type["AgentAdded"]["actor"]["id"] == str(t.admin_key.id)


async def test_agents_are_tenant_isolated(http, make_tenant):
    a, b = await make_tenant("A"), await make_tenant("B")
    r = await http.post("/v1/agents", json={"email": "ann@example.com", "name": "Ann"},
                        headers=bearer(a.admin_key.secret))
    ann = r.json()
    hb = bearer(b.admin_key.secret)
    assert (await http.get(f"/v1/agents/{ann['id']}", headers=hb)).status_code == 404
    assert (await http.patch(f"/v1/agents/{ann['id']}", json={"name": "X"},
                             headers=hb)).status_code == 404
    assert (await http.get("/v1/agents", headers=hb)).json()["data"] == []
    # The same e-mail is free in another tenant.
    r = await http.post("/v1/agents", json={"email": "ann@example.com", "name": "Ann"},
                        headers=hb)
    assert r.status_code == 201


async def test_settings_defaults_put_and_validation(http, make_tenant):
    t = await make_tenant()
    admin = bearer(t.admin_key.secret)
    r = await http.get("/v1/settings", headers=admin)
    assert r.status_code == 200 and r.headers["etag"] == '"0"'
    defaults = r.json()
    assert defaults["sla_targets"]["urgent"] == {"first_response_ms": 3_600_000,
                                                 "resolution_ms": 28_800_000}
    assert defaults["business_hours"] is None
    assert defaults["paused_states"] == ["pending", "solved"]

    r = await http.put("/v1/settings", json=GOOD_SETTINGS, headers=admin)
    assert r.status_code == 200, r.text
    assert r.headers["etag"] == '"1"'
    got = (await http.get("/v1/settings", headers=admin)).json()
    assert got["paused_states"] == ["pending", "on_hold", "solved"]
    assert got["business_hours"]["timezone"] == "Europe/Berlin"
    assert got["sweep"] == {"pending_days": 5, "solved_days": 2}

    def with_(**changes):
        return {**GOOD_SETTINGS, **changes}

    targets = GOOD_SETTINGS["sla_targets"]
    bad_docs = {
        "missing priority": with_(sla_targets={k: v for k, v in targets.items() if k != "low"}),
        "float ms": with_(sla_targets={**targets, "low": {"first_response_ms": 1.5,
                                                          "resolution_ms": 10}}),
        "string ms": with_(sla_targets={**targets, "low": {"first_response_ms": "10",
                                                           "resolution_ms": 10}}),
        "first above resolution": with_(sla_targets={**targets, "low": {
            "first_response_ms": 100, "resolution_ms": 10}}),
        "zero ms": with_(sla_targets={**targets, "low": {"first_response_ms": 0,
                                                         "resolution_ms": 10}}),
        "unknown priority": with_(sla_targets={**targets, "asap": targets["low"]}),
        "open paused": with_(paused_states=["open"]),
        "duplicate paused": with_(paused_states=["pending", "pending"]),
        "bad zone": with_(business_hours={"timezone": "Mars/Olympus", "weekly": {"0": []}}),
        "bad hours": with_(business_hours={"timezone": "UTC", "weekly": {"0": [["9", "17"]]}}),
        "no shifts": with_(business_hours={"timezone": "UTC", "weekly": {}}),
        "sweep zero": with_(sweep={"pending_days": 0, "solved_days": 2}),
        "sweep extra": with_(sweep={"pending_days": 1, "solved_days": 2, "x": 1}),
        "unknown key": with_(colour="red"),
        "missing key": {k: v for k, v in GOOD_SETTINGS.items() if k != "sweep"},
    }
    for name, doc in bad_docs.items():
        r = await http.put("/v1/settings", json=doc, headers=admin)
        assert r.status_code == 422, (name, r.text)
        body = r.json()
        assert body["code"] == "validation_failed" and body["errors"], name
    assert (await http.get("/v1/settings", headers=admin)).headers["etag"] == '"1"'

    stale = await http.put("/v1/settings", json=GOOD_SETTINGS,
                           headers={**admin, "If-Match": '"0"'})
    assert stale.status_code == 412
    agent = await _agent_key(http, t.admin_key.secret)
    assert (await http.get("/v1/settings", headers=bearer(agent["secret"]))).status_code == 403

    changes = [e for e in await _tenant_events(http, t.admin_key.secret, t.tenant_id)
               if e["type"] == "SettingsChanged"]
    assert len(changes) == 1
    assert changes[0]["data"]["settings"]["sweep"] == {"pending_days": 5, "solved_days": 2}


async def test_api_keys_secret_once_revocation_and_isolation(http, make_tenant):
    t, other = await make_tenant("A"), await make_tenant("B")
    admin = t.admin_key.secret
    issued = await _issue(http, admin, "auditor")
    assert issued["secret"].startswith("hd_") and issued["revoked_at"] is None
    listing = (await http.get("/v1/api-keys", headers=bearer(admin))).json()["data"]
    assert {k["id"] for k in listing} == {str(t.admin_key.id), issued["id"]}
    assert all("secret" not in k and "key_hash" not in k for k in listing)
    assert issued["secret"] not in (await http.get("/v1/api-keys", headers=bearer(admin))).text

    # The new key works, then is revoked, then answers 401.
    h = bearer(issued["secret"])
    assert (await http.get("/v1/events", headers=h)).status_code == 200
    assert (await http.delete(f"/v1/api-keys/{issued['id']}",
                              headers=bearer(other.admin_key.secret))).status_code == 404
    revoke = await http.delete(f"/v1/api-keys/{issued['id']}", headers=bearer(admin))
    assert revoke.status_code == 200 and revoke.json()["revoked_at"] is not None
    r = await http.get("/v1/events", headers=h)
    assert r.status_code == 401 and r.json()["code"] == "invalid_api_key"
    # Revoking twice keeps the first instant and records no second event.
    again = await http.delete(f"/v1/api-keys/{issued['id']}", headers=bearer(admin))
    assert again.status_code == 200 and again.json()["revoked_at"] == revoke.json()["revoked_at"]

    events = await _tenant_events(http, admin, t.tenant_id)
    assert [e["type"] for e in events] == ["ApiKeyIssued", "ApiKeyIssued", "ApiKeyRevoked"]
    first, _, revoked = events
    # The first admin key was issued by the operator; everything after by the admin key.
    assert first["actor"]["kind"] == "operator" and first["seq"] == 1
    assert first["data"]["key_id"] == str(t.admin_key.id)
    assert revoked["data"]["key_id"] == issued["id"]
    assert revoked["actor"] == {"kind": "api_key", "id": str(t.admin_key.id)}

    # Roles and agent links are validated.
    for bad in ({"name": "k", "role": "root"}, {"name": "", "role": "agent"},
                {"name": "k", "role": "auditor", "agent_id": str(uuid.uuid4())},
                {"name": "k", "role": "agent", "agent_id": str(uuid.uuid4())},
                {"name": "k", "role": "agent", "secret": "mine"}):
        r = await http.post("/v1/api-keys", json=bad, headers=bearer(admin))
        assert r.status_code == 422, (bad, r.text)
    ann = (await http.post("/v1/agents", json={"email": "a@example.com", "name": "A"},
                           headers=bearer(admin))).json()
    linked = await _issue(http, admin, "agent", agent_id=ann["id"])
    assert linked["agent_id"] == ann["id"]
    agent_h = bearer(linked["secret"])
    assert (await http.get("/v1/api-keys", headers=agent_h)).status_code == 403
    assert (await http.post("/v1/api-keys", json={"name": "k", "role": "admin"},
                            headers=agent_h)).status_code == 403


@pytest.mark.parametrize("path", ["/v1/api-keys", "/v1/agents"])
async def test_lists_page_by_cursor_and_refuse_foreign_cursors(http, make_tenant, path):
    t = await make_tenant()
    admin = bearer(t.admin_key.secret)
    for i in range(6):
        if path == "/v1/api-keys":
            await _issue(http, t.admin_key.secret, "auditor")
        else:
            await http.post("/v1/agents", json={"email": f"a{i}@example.com", "name": "A"},
                            headers=admin)
    seen, cursor = [], None
    for _ in range(10):
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await http.get(path, params=params, headers=admin)).json()
        seen += [x["id"] for x in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == (7 if path == "/v1/api-keys" else 6)
    assert "total" not in page
    first = (await http.get(path, params={"limit": 2}, headers=admin)).json()["next_cursor"]
    other = "/v1/agents" if path == "/v1/api-keys" else "/v1/api-keys"
    for bad in ("nonsense", first[:-2] + "AA", first.replace(".", "x.")):
        r = await http.get(path, params={"cursor": bad}, headers=admin)
        assert r.status_code == 400 and r.json()["code"] == "invalid_cursor"
    r = await http.get(other, params={"cursor": first}, headers=admin)
    assert r.status_code == 400
    r = await http.get(path, params={"page": 2}, headers=admin)
    assert r.status_code == 400 and r.json()["code"] == "unknown_parameter"


async def test_a_stored_partial_document_reads_whole(http, make_tenant, services):
    # A document written before a key existed, or naming only some targets, reads as
    # the defaults for what it leaves out, on the API as on the write path.
    t = await make_tenant()
    async with services.store.unit_of_work(t.tenant_id) as s:
        await s.conn.execute(
            "INSERT INTO tenant_settings (tenant_id, settings, updated_at) VALUES ($1, $2, now())",
            t.tenant_id, {"sla_targets": {"urgent": {"first_response_ms": 60_000}}})
    r = await http.get("/v1/settings", headers=bearer(t.admin_key.secret))
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["sla_targets"]["urgent"] == {"first_response_ms": 60_000,
                                            "resolution_ms": 28_800_000}
    assert got["sla_targets"]["low"]["first_response_ms"] == 86_400_000
    assert got["sweep"] == {"pending_days": 7, "solved_days": 4}
    assert r.headers["etag"] == '"1"'
