"""``GET /v1/auth/me``: every role learns who it is and what the table lets it run."""

from __future__ import annotations

import orjson

from api.http.access import ROLE_PERMISSIONS, operations_of
from api.routes.auth import MeOut
from tests.e2e.conftest import auth


def _may(role: str) -> list[str]:
    return operations_of(ROLE_PERMISSIONS[role])


async def test_each_role_is_told_its_tenant_credential_and_operations(http, tenant, owner):
    keys = {"admin": tenant.admin_key}
    for role in ("intake", "analyst", "auditor"):
        keys[role] = await owner.key(tenant.tenant_id, role)
    for role, key in keys.items():
        r = await http.get("/v1/auth/me", headers=auth(key))
        assert r.status_code == 200, r.text
        # The answer is its documented model, byte for byte.
        assert r.content == orjson.dumps(MeOut.model_validate_json(r.content)
                                         .model_dump(mode="json"))
        body = r.json()
        assert body["tenant"] == {"id": str(tenant.tenant_id), "name": "Acme"}
        assert body["role"] == role
        assert body["credential"] == {"kind": "api_key", "id": str(key.id), "name": key.name,
                                      "scopes": None}
        assert body["agent"] is None
        assert body["permissions"] == sorted(ROLE_PERMISSIONS[role])
        assert body["operations"] == _may(role)
    # What the console hides is what the service refuses, and the other way round.
    assert "GET /v1/tickets" not in _may("analyst")
    assert "GET /v1/analytics/summary" in _may("analyst")
    assert "GET /v1/audit/verify" in _may("auditor")
    assert "WS /v1/stream" in _may("auditor")


async def test_an_agent_key_names_the_person_it_acts_as(http, tenant, owner):
    agent_id = await owner.agent(tenant.tenant_id)
    key = await owner.key(tenant.tenant_id, "agent", agent_id)
    body = (await http.get("/v1/auth/me", headers=auth(key))).json()
    assert body["role"] == "agent"
    assert body["agent"] == {"id": str(agent_id), "name": "Agent",
                             "email": f"{agent_id}@example.com"}
    assert "POST /v1/tickets/{ticket_id}/messages" in body["operations"]
    assert "GET /v1/audit/verify" not in body["operations"]


async def test_without_a_good_key_it_is_401_and_a_barred_agent_403(http, tenant, owner):
    r = await http.get("/v1/auth/me")
    assert r.status_code == 401
    assert r.headers["content-type"] == "application/problem+json"
    assert (await http.get("/v1/auth/me", headers=auth("hd_nope"))).status_code == 401
    agent_id = await owner.agent(tenant.tenant_id)
    key = await owner.key(tenant.tenant_id, "agent", agent_id)
    await owner.set_active(tenant.tenant_id, agent_id, False)
    r = await http.get("/v1/auth/me", headers=auth(key))
    assert r.status_code == 403
    assert r.json()["code"] == "agent_inactive"


async def test_another_tenants_key_answers_for_its_own_tenant(http, tenant, make_tenant):
    other = await make_tenant("Globex")
    body = (await http.get("/v1/auth/me", headers=auth(other.admin_key))).json()
    assert body["tenant"] == {"id": str(other.tenant_id), "name": "Globex"}
