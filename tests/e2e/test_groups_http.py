"""Groups over HTTP: create, list, change; tickets routed to a group, an agent or both;
the member rule (409); removing a member leaves tickets assigned and says so; a group
of one tenant is a 404 (or an unknown 422) for another everywhere; history and as-of;
SLA targets per group."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, Owner, auth
from tests.e2e.ws_support import FIRST, connect_ws, recv, recv_events, send, serve, ws_settings


async def _group(http: httpx.AsyncClient, key: Any, name: str = "Billing",
                 members: list[uuid.UUID] | None = None) -> dict[str, Any]:
    r = await http.post("/v1/groups", json={"name": name,
                                            "members": [str(m) for m in members or []]},
                        headers=auth(key))
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def _ticket(http: httpx.AsyncClient, key: Any, **extra: Any) -> dict[str, Any]:
    r = await http.post("/v1/tickets", json={**NEW_TICKET, **extra}, headers=auth(key))
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


async def test_create_get_list_and_rename_a_group(http, tenant, owner: Owner):
    ann = await owner.agent(tenant.tenant_id)
    admin = tenant.admin_key
    created = await http.post("/v1/groups", json={"name": "Billing", "members": [str(ann)]},
                              headers=auth(admin, **{"Idempotency-Key": "g-1"}))
    assert created.status_code == 201, created.text
    group = created.json()
    assert group["name"] == "Billing" and group["members"] == [str(ann)]
    assert group["version"] == 1 and created.headers["ETag"] == '"1"'
    assert created.headers["Location"] == f"/v1/groups/{group['id']}"
    replay = await http.post("/v1/groups", json={"name": "Billing", "members": [str(ann)]},
                             headers=auth(admin, **{"Idempotency-Key": "g-1"}))
    assert replay.json() == group and replay.headers["Idempotent-Replayed"] == "true"

    dup = await http.post("/v1/groups", json={"name": "BILLING"}, headers=auth(admin))
    assert dup.status_code == 409 and dup.json()["code"] == "group_exists"
    assert dup.json()["group_id"] == group["id"]

    for role in ("agent", "auditor"):
        key = await owner.key(tenant.tenant_id, role,
                              agent_id=ann if role == "agent" else None)
        got = await http.get(f"/v1/groups/{group['id']}", headers=auth(key))
        assert got.status_code == 200 and got.json() == group
        assert (await http.post("/v1/groups", json={"name": "X"},
                                headers=auth(key))).status_code == 403
    second = await _group(http, admin, "Sales")
    page = await http.get("/v1/groups?limit=1", headers=auth(admin))
    assert [g["id"] for g in page.json()["data"]] == [group["id"]]
    rest = await http.get(f"/v1/groups?limit=1&cursor={page.json()['next_cursor']}",
                          headers=auth(admin))
    assert [g["id"] for g in rest.json()["data"]] == [second["id"]]
    assert rest.json()["next_cursor"] is None

    stale = await http.patch(f"/v1/groups/{group['id']}", json={"name": "Payments"},
                             headers=auth(admin, **{"If-Match": '"7"'}))
    assert stale.status_code == 412
    renamed = await http.patch(f"/v1/groups/{group['id']}", json={"name": "Payments"},
                               headers=auth(admin, **{"If-Match": '"1"'}))
    assert renamed.status_code == 200, renamed.text
    assert renamed.json()["name"] == "Payments" and renamed.json()["version"] == 2
    assert renamed.json()["still_assigned"] == []
    taken = await http.patch(f"/v1/groups/{group['id']}", json={"name": "sales"},
                             headers=auth(admin))
    assert taken.status_code == 409 and taken.json()["group_id"] == second["id"]


async def test_unknown_agents_as_members_are_refused(http, tenant, owner: Owner):
    inactive = await owner.agent(tenant.tenant_id, active=False)
    stranger = uuid.uuid4()
    r = await http.post("/v1/groups", json={"name": "B", "members": [str(stranger)]},
                        headers=auth(tenant.admin_key))
    assert r.status_code == 422 and str(stranger) in r.json()["detail"]
    r = await http.post("/v1/groups", json={"name": "B", "members": [str(inactive)]},
                        headers=auth(tenant.admin_key))
    assert r.status_code == 422 and str(inactive) in r.json()["detail"]


async def test_a_ticket_in_a_group_takes_only_members_as_assignee(http, tenant, owner: Owner):
    ann, bob = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    admin = tenant.admin_key
    group = await _group(http, admin, members=[ann])
    ticket = await _ticket(http, admin, group_id=group["id"])
    assert ticket["group_id"] == group["id"] and ticket["assignee"] is None
    url = f"/v1/tickets/{ticket['id']}/assignee"

    refused = await http.post(url, json={"agent_id": str(bob)}, headers=auth(admin))
    assert refused.status_code == 409
    assert refused.json()["code"] == "not_group_member"
    assert str(bob) in refused.json()["detail"] and group["id"] in refused.json()["detail"]

    ok = await http.post(url, json={"agent_id": str(ann)}, headers=auth(admin))
    assert ok.status_code == 200 and ok.json()["assignee"] == str(ann)
    assert ok.json()["group_id"] == group["id"]

    # Both in one request: leave the group and take an agent from none.
    both = await http.post(url, json={"group_id": None, "agent_id": str(bob)},
                           headers=auth(admin))
    assert both.status_code == 200, both.text
    assert both.json()["group_id"] is None and both.json()["assignee"] == str(bob)
    # A group alone, the agent left as is, must still fit.
    again = await http.post(url, json={"group_id": group["id"]}, headers=auth(admin))
    assert again.status_code == 409
    unknown = uuid.uuid4()
    r = await http.post(url, json={"group_id": str(unknown)}, headers=auth(admin))
    assert r.status_code == 422 and str(unknown) in r.json()["detail"]
    r = await http.post("/v1/tickets", json={**NEW_TICKET, "group_id": str(unknown)},
                        headers=auth(admin))
    assert r.status_code == 422 and str(unknown) in r.json()["detail"]
    assert (await http.post(url, json={}, headers=auth(admin))).status_code == 422

    intake = await owner.key(tenant.tenant_id, "intake")
    r = await http.post("/v1/tickets", json={**NEW_TICKET, "group_id": group["id"]},
                        headers=auth(intake))
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "group_id"]


async def test_removing_a_member_leaves_their_tickets_assigned_and_says_so(
        http, tenant, owner: Owner):
    ann, bob = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    admin = tenant.admin_key
    group = await _group(http, admin, members=[ann, bob])
    held = []
    for _ in range(3):
        t = await _ticket(http, admin, group_id=group["id"])
        r = await http.post(f"/v1/tickets/{t['id']}/assignee", json={"agent_id": str(ann)},
                            headers=auth(admin))
        assert r.status_code == 200
        held.append(t["id"])
    solved = await _ticket(http, admin, group_id=group["id"])
    await http.post(f"/v1/tickets/{solved['id']}/assignee", json={"agent_id": str(ann)},
                    headers=auth(admin))
    for state in ("solved", "closed"):
        await http.post(f"/v1/tickets/{solved['id']}/state", json={"state": state},
                        headers=auth(admin))

    r = await http.patch(f"/v1/groups/{group['id']}", json={"members": [str(bob)]},
                         headers=auth(admin))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["members"] == [str(bob)]
    assert body["still_assigned"] == [{"agent_id": str(ann), "tickets": 3,
                                       "ticket_ids": list(reversed(held))}]
    for tid in held:
        ticket = (await http.get(f"/v1/tickets/{tid}", headers=auth(admin))).json()
        assert ticket["assignee"] == str(ann) and ticket["group_id"] == group["id"]


async def test_list_filter_by_group(http, tenant):
    admin = tenant.admin_key
    group = await _group(http, admin)
    inside = await _ticket(http, admin, group_id=group["id"])
    outside = await _ticket(http, admin)
    r = await http.get(f"/v1/tickets?group_id={group['id']}", headers=auth(admin))
    assert [t["id"] for t in r.json()["data"]] == [inside["id"]]
    r = await http.get("/v1/tickets?group_id=none", headers=auth(admin))
    assert [t["id"] for t in r.json()["data"]] == [outside["id"]]
    r = await http.get(f"/v1/tickets?group_id={uuid.uuid4()}", headers=auth(admin))
    assert r.status_code == 404
    r = await http.get("/v1/tickets?group_id=nope", headers=auth(admin))
    assert r.status_code == 400


async def test_a_group_of_one_tenant_is_unknown_to_another_everywhere(
        http, make_tenant, owner: Owner):
    a, b = await make_tenant("A"), await make_tenant("B")
    group = await _group(http, a.admin_key)
    gid = group["id"]
    hb = auth(b.admin_key)
    for path in (f"/v1/groups/{gid}", f"/v1/groups/{gid}/history",
                 f"/v1/groups/{gid}/as-of?version=1", f"/v1/tickets?group_id={gid}",
                 f"/v1/analytics/agents?group_id={gid}"):
        r = await http.get(path, headers=hb)
        assert r.status_code == 404, (path, r.text)
    assert (await http.get("/v1/groups", headers=hb)).json()["data"] == []
    r = await http.patch(f"/v1/groups/{gid}", json={"name": "Mine"}, headers=hb)
    assert r.status_code == 404
    ticket = await _ticket(http, b.admin_key)
    r = await http.post(f"/v1/tickets/{ticket['id']}/assignee", json={"group_id": gid},
                        headers=hb)
    assert r.status_code == 422 and gid in r.json()["detail"]
    r = await http.post("/v1/tickets", json={**NEW_TICKET, "group_id": gid}, headers=hb)
    assert r.status_code == 422
    settings = (await http.get("/v1/settings", headers=hb)).json()
    r = await http.put("/v1/settings", headers=hb, json={**settings, "group_sla_targets": {
        gid: {"urgent": {"first_response_ms": 60_000, "resolution_ms": 120_000}}}})
    assert r.status_code == 422 and gid in r.json()["detail"]


async def test_group_history_as_of_and_feed(http, tenant, owner: Owner):
    ann = await owner.agent(tenant.tenant_id)
    admin = tenant.admin_key
    group = await _group(http, admin)
    await http.patch(f"/v1/groups/{group['id']}", json={"members": [str(ann)]},
                     headers=auth(admin))
    await http.patch(f"/v1/groups/{group['id']}", json={"name": "Payments"},
                     headers=auth(admin))
    history = (await http.get(f"/v1/groups/{group['id']}/history",
                              headers=auth(admin))).json()["data"]
    assert [e["type"] for e in history] == ["GroupCreated", "GroupMembersChanged",
                                            "GroupRenamed"]
    then = await http.get(f"/v1/groups/{group['id']}/as-of?version=2", headers=auth(admin))
    assert then.status_code == 200 and then.headers["ETag"] == '"2"'
    assert then.json()["name"] == "Billing" and then.json()["members"] == [str(ann)]
    now = (await http.get(f"/v1/groups/{group['id']}", headers=auth(admin))).json()
    latest = await http.get(f"/v1/groups/{group['id']}/as-of?version=3", headers=auth(admin))
    assert latest.json() == now
    # A group is not a ticket, and a ticket is not a group.
    assert (await http.get(f"/v1/tickets/{group['id']}/history",
                           headers=auth(admin))).status_code == 404
    ticket = await _ticket(http, admin)
    assert (await http.get(f"/v1/groups/{ticket['id']}/history",
                           headers=auth(admin))).status_code == 404
    feed = (await http.get(f"/v1/events?stream_id={group['id']}",
                           headers=auth(admin))).json()["data"]
    assert [e["type"] for e in feed] == ["GroupCreated", "GroupMembersChanged", "GroupRenamed"]
    r = await http.get("/v1/events?type=GroupRenamed", headers=auth(admin))
    assert [e["stream_id"] for e in r.json()["data"]] == [group["id"]]


async def test_sla_targets_per_group_fall_back_to_per_priority(http, tenant):
    admin = tenant.admin_key
    group = await _group(http, admin)
    settings = (await http.get("/v1/settings", headers=auth(admin))).json()
    assert settings["group_sla_targets"] == {}
    fast = {"first_response_ms": 600_000, "resolution_ms": 3_600_000}
    r = await http.put("/v1/settings", headers=auth(admin),
                       json={**settings, "group_sla_targets": {group["id"]: {"high": fast}}})
    assert r.status_code == 200, r.text
    assert r.json()["group_sla_targets"] == {group["id"]: {"high": fast}}

    def targets(t: dict[str, Any]) -> tuple[int, int]:
        return t["sla"]["first_response"]["target_ms"], t["sla"]["resolution"]["target_ms"]

    high = settings["sla_targets"]["high"]
    per_priority = (high["first_response_ms"], high["resolution_ms"])
    assert targets(await _ticket(http, admin, group_id=group["id"])) == (600_000, 3_600_000)
    assert targets(await _ticket(http, admin)) == per_priority
    low = await _ticket(http, admin, group_id=group["id"], priority="low")
    assert targets(low) == (settings["sla_targets"]["low"]["first_response_ms"],
                            settings["sla_targets"]["low"]["resolution_ms"])
    # Moving a ticket into the group retargets its clocks.
    plain = await _ticket(http, admin)
    moved = await http.post(f"/v1/tickets/{plain['id']}/assignee",
                            json={"group_id": group["id"]}, headers=auth(admin))
    assert targets(moved.json()) == (600_000, 3_600_000)


async def test_group_events_reach_the_live_feed(db, make_tenant) -> None:
    t = await make_tenant("Acme")
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws))["type"] == "subscribed"
        http_url = srv.url.replace("ws://", "http://").split("/v1/")[0]
        async with httpx.AsyncClient(base_url=http_url) as http:
            group = await _group(http, t.admin_key)
            r = await http.patch(f"/v1/groups/{group['id']}", json={"name": "Payments"},
                                 headers=auth(t.admin_key))
            assert r.status_code == 200
        live = await recv_events(ws, 2)
        assert [(m["event"]["type"], m["event"]["stream_id"]) for m in live] == [
            ("GroupCreated", group["id"]), ("GroupRenamed", group["id"])]
        assert live[0]["event"]["data"]["name"] == "Billing"
        await ws.close()


async def test_analytics_by_group_and_agents_of_a_group(http, services, tenant, owner: Owner):
    ann, bob = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    admin = tenant.admin_key
    group = await _group(http, admin, members=[ann])
    for agent, group_id in ((ann, group["id"]), (ann, group["id"]), (bob, None)):
        t = await _ticket(http, admin, **({"group_id": group_id} if group_id else {}))
        r = await http.post(f"/v1/tickets/{t['id']}/assignee", json={"agent_id": str(agent)},
                            headers=auth(admin))
        assert r.status_code == 200
    projector = Projector(services.pool)
    await projector.ensure_checkpoints()
    await projector.drain()

    summary = await http.get("/v1/analytics/summary?group_by=group", headers=auth(admin))
    assert summary.status_code == 200, summary.text
    assert {g["key"]: g["tickets"] for g in summary.json()["groups"]} == {
        group["id"]: 2, "none": 1}
    # An analyst, who may not list groups or agents, reads their names in the answer.
    analyst = auth(await owner.key(tenant.tenant_id, "analyst"))
    assert (await http.get("/v1/groups", headers=analyst)).status_code == 403
    named = await http.get("/v1/analytics/summary?group_by=group", headers=analyst)
    assert {g["key"]: g["name"] for g in named.json()["groups"]} == {
        group["id"]: group["name"], "none": None}
    agents = await http.get("/v1/analytics/summary?group_by=assignee", headers=analyst)
    names = {a["id"]: a["name"] for a in (await http.get(
        "/v1/agents", headers=auth(admin))).json()["data"]}
    assert {g["key"]: g["name"] for g in agents.json()["groups"]} == {
        str(ann): names[str(ann)], str(bob): names[str(bob)]}
    everyone = await http.get("/v1/analytics/agents", headers=auth(admin))
    assert {a["id"] for a in everyone.json()["agents"]} == {str(ann), str(bob)}
    members = await http.get(f"/v1/analytics/agents?group_id={group['id']}",
                             headers=auth(admin))
    assert members.status_code == 200, members.text
    assert [(a["id"], a["assigned"]) for a in members.json()["agents"]] == [(str(ann), 2)]
