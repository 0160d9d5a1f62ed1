"""Macros over HTTP: applying one is one command (If-Match 412 when stale, one effect
per Idempotency-Key), a preview changes nothing, canned replies are text-only macros,
and a personal macro is another agent's 404."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.conftest import NEW_TICKET, Owner, auth

MACRO = {"name": "Escalate politely", "shared": True,
         "text": "Hi {{requester.email}}, {{agent.name}} has raised {{ticket.id}}.",
         "actions": [{"type": "set_priority", "value": "urgent"},
                     {"type": "add_tags", "value": ["escalated"]}]}


async def _post(http: httpx.AsyncClient, key: Any, url: str, body: Any = None,
                **headers: str) -> httpx.Response:
    return await http.post(url, json=body, headers=auth(key, **headers))


async def _history(http: httpx.AsyncClient, key: Any, ticket: str) -> list[str]:
    r = await http.get(f"/v1/tickets/{ticket}/history", headers=auth(key))
    return [e["type"] for e in r.json()["data"]]


async def test_apply_a_macro_once_with_if_match_and_idempotency(http, tenant, owner: Owner):
    admin = tenant.admin_key
    agent_id = await owner.agent(tenant.tenant_id)
    agent = await owner.key(tenant.tenant_id, "agent", agent_id=agent_id)
    macro = (await _post(http, admin, "/v1/macros", MACRO)).json()
    assert macro["canned"] is False
    ticket = (await _post(http, agent, "/v1/tickets", NEW_TICKET)).json()
    url = f"/v1/tickets/{ticket['id']}/macros/{macro['id']}"
    before = await _history(http, admin, ticket["id"])

    stale = await _post(http, agent, url, **{"If-Match": '"7"'})
    assert stale.status_code == 412, stale.text
    assert await _history(http, admin, ticket["id"]) == before

    preview = await _post(http, agent, f"{url}?preview=true", **{"If-Match": '"1"'})
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert shown["preview"] is True and shown["events"] == 3
    assert shown["ticket"]["priority"] == "urgent" and "escalated" in shown["ticket"]["tags"]
    assert shown["body"] == f"Hi {NEW_TICKET['requester']['email']}, Agent has raised " \
                            f"{ticket['id']}."
    assert await _history(http, admin, ticket["id"]) == before
    got = await http.get(f"/v1/tickets/{ticket['id']}", headers=auth(agent))
    assert got.json()["priority"] == ticket["priority"] and got.headers["ETag"] == '"1"'

    first = await _post(http, agent, url, **{"If-Match": '"1"', "Idempotency-Key": "m-1"})
    assert first.status_code == 200, first.text
    again = await _post(http, agent, url, **{"If-Match": '"1"', "Idempotency-Key": "m-1"})
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert await _history(http, admin, ticket["id"]) == [
        *before, "PriorityChanged", "TagsChanged", "MessageAdded"]
    assert first.headers["ETag"] == '"4"'
    messages = (await http.get(f"/v1/tickets/{ticket['id']}/messages",
                               headers=auth(agent))).json()["data"]
    assert messages[-1]["body"] == shown["body"] and messages[-1]["visibility"] == "public"


async def test_personal_macros_and_canned_replies(http, tenant, owner: Owner):
    ann_id, bo_id = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    ann = await owner.key(tenant.tenant_id, "agent", agent_id=ann_id)
    bo = await owner.key(tenant.tenant_id, "agent", agent_id=bo_id)
    canned = await _post(http, ann, "/v1/macros", {"name": "Thanks", "text": "Thanks!"})
    assert canned.status_code == 201, canned.text
    mine = canned.json()
    assert mine["canned"] is True and mine["owner_id"] == str(ann_id)
    shared = await _post(http, ann, "/v1/macros", MACRO)
    assert shared.status_code == 403
    listed = (await http.get("/v1/macros", headers=auth(ann))).json()["data"]
    assert [m["id"] for m in listed] == [mine["id"]]
    assert (await http.get("/v1/macros", headers=auth(bo))).json()["data"] == []
    assert (await http.get(f"/v1/macros/{mine['id']}", headers=auth(bo))).status_code == 404
    ticket = (await _post(http, bo, "/v1/tickets", NEW_TICKET)).json()
    refused = await _post(http, bo, f"/v1/tickets/{ticket['id']}/macros/{mine['id']}")
    assert refused.status_code == 404
    applied = await _post(http, ann, f"/v1/tickets/{ticket['id']}/macros/{mine['id']}")
    assert applied.status_code == 200 and applied.json()["events"] == 1

    bad = await _post(http, ann, "/v1/macros", {"name": "X", "text": "{{ticket.colour}}"})
    assert bad.status_code == 422 and bad.json()["errors"][0]["loc"] == ["body", "text"]
    bad = await _post(http, ann, "/v1/macros", {"name": "X", "actions": [
        {"type": "call_webhook"}]})
    assert bad.status_code == 422
    assert bad.json()["errors"][0]["loc"] == ["body", "actions", "0", "type"]
