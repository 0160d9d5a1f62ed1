"""Scoped API keys: a key issued with ``scopes`` runs only what they name, and no key
is issued holding a permission its role or its issuer lacks."""

from __future__ import annotations

from api.http.access import ROLE_PERMISSIONS
from tests.e2e.conftest import auth


async def test_a_scoped_key_runs_only_its_scopes_and_scopes_never_exceed_the_issuer(
        http, tenant, owner):
    admin = auth(tenant.admin_key)
    agent_id = await owner.agent(tenant.tenant_id)

    # Beyond the key's role: 422 naming the excess, and nothing issued.
    r = await http.post("/v1/api-keys", headers=admin, json={
        "name": "a", "role": "analyst", "scopes": ["analytics:read", "ticket:read",
                                                    "no:such"]})
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "excess_scopes"
    assert r.json()["excess"] == ["no:such", "ticket:read"]
    assert "ticket:read" in r.json()["detail"]
    assert (await http.post("/v1/api-keys", headers=admin, json={
        "name": "a", "role": "analyst", "scopes": []})).status_code == 422

    r = await http.post("/v1/api-keys", headers=admin, json={
        "name": "reader", "role": "agent", "agent_id": str(agent_id),
        "scopes": ["ticket:list", "self:read", "ticket:list"]})
    assert r.status_code == 201, r.text
    scoped = r.json()
    assert scoped["scopes"] == ["self:read", "ticket:list"]
    listed = {k["id"]: k for k in (await http.get("/v1/api-keys", headers=admin)).json()["data"]}
    assert listed[scoped["id"]]["scopes"] == ["self:read", "ticket:list"]
    assert listed[str(tenant.admin_key.id)]["scopes"] is None

    key = auth(scoped["secret"])
    assert (await http.get("/v1/tickets", headers=key)).status_code == 200
    # Within the role but outside the scopes: insufficient_scope, naming the permission.
    for method, path, permission in (("GET", "/v1/agents", "agent:read"),
                                     ("POST", "/v1/tickets", "ticket:create")):
        r = await http.request(method, path, headers=key, json={
            "subject": "s", "body": "b", "requester": {"email": "c@example.com"}})
        assert r.status_code == 403, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "insufficient_scope"
        assert r.json()["permission"] == permission
        assert permission in r.json()["detail"]
    # Outside the role: refused by the role, as before.
    assert (await http.get("/v1/events", headers=key)).json()["code"] == "forbidden"
    me = (await http.get("/v1/auth/me", headers=key)).json()
    assert me["permissions"] == ["self:read", "ticket:list"]
    assert me["operations"] == ["GET /v1/auth/me", "GET /v1/tickets"]
    assert me["credential"]["scopes"] == ["self:read", "ticket:list"]

    # A scoped admin key issues keys within its own scopes only, scoped or not.
    r = await http.post("/v1/api-keys", headers=admin, json={
        "name": "issuer", "role": "admin",
        "scopes": ["api-key:write", "changes:read", "ticket:create"]})
    issuer = auth(r.json()["secret"])
    r = await http.post("/v1/api-keys", headers=issuer, json={"name": "i", "role": "intake"})
    assert r.status_code == 422, r.text
    assert r.json()["excess"] == sorted(ROLE_PERMISSIONS["intake"] - {"ticket:create"})
    r = await http.post("/v1/api-keys", headers=issuer, json={
        "name": "i", "role": "intake", "scopes": ["ticket:create", "ticket:reply"]})
    assert (r.status_code, r.json()["excess"]) == (422, ["ticket:reply"])
    r = await http.post("/v1/api-keys", headers=issuer, json={
        "name": "i", "role": "intake", "scopes": ["ticket:create"]})
    assert r.status_code == 201, r.text
    # Scoped away from the whole log, an admin key's changes feed withholds the tenant
    # stream (the keys just issued) as an agent's does.
    page = (await http.get("/v1/changes", headers=issuer)).json()
    assert page["data"] == [] and page["next_after_seq"] > 0
    everything = (await http.get("/v1/changes", headers=admin)).json()["data"]
    assert "ApiKeyIssued" in {e["type"] for e in everything}
