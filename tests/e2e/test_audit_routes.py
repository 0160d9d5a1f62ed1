"""Auditor endpoints: history, as-of, the feed and chain verification over HTTP."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from tests.e2e.audit_support import ticket_with_history
from tests.e2e.conftest import bearer


async def _key(http, admin: str, role: str) -> dict:
    body = {"name": role, "role": role}
    if role == "agent":  # an agent key belongs to an agent
        r = await http.post("/v1/agents", json={"email": f"{uuid.uuid4().hex[:8]}@example.com",
                                                "name": "Agent"}, headers=bearer(admin))
        assert r.status_code == 201, r.text
        body["agent_id"] = r.json()["id"]
    r = await http.post("/v1/api-keys", json=body, headers=bearer(admin))
    assert r.status_code == 201, r.text
    return r.json()


async def _setup(http, store, make_tenant):
    t = await make_tenant()
    admin = t.admin_key.secret
    agent, intake, auditor = [await _key(http, admin, r) for r in ("agent", "intake", "auditor")]
    rec = await ticket_with_history(store, t.tenant_id, uuid.UUID(agent["id"]),
                                    uuid.UUID(intake["id"]))
    return t, auditor, rec


async def test_as_of_every_version_equals_the_ticket_right_after_it(http, store, make_tenant):
    _, auditor, rec = await _setup(http, store, make_tenant)
    h = bearer(auditor["secret"])
    assert len(rec.views) >= 20
    for version, expected in rec.views.items():
        r = await http.get(f"/v1/tickets/{rec.ticket_id}/as-of", params={"version": version},
                           headers=h)
        assert r.status_code == 200, r.text
        assert r.json() == expected, version
        assert r.headers["etag"] == f'"{version}"'
    states = [v["state"] for v in rec.views.values()]
    assert {"pending", "on_hold", "solved", "closed"} <= set(states)
    assert any(v["sla"]["first_response"]["breached_at"] for v in rec.views.values())

    # By instant: at each event's recorded_at, the ticket is as of that event.
    history = (await http.get(f"/v1/tickets/{rec.ticket_id}/history",
                              params={"limit": 100}, headers=h)).json()["data"]
    for e in history:
        r = await http.get(f"/v1/tickets/{rec.ticket_id}/as-of",
                           params={"at": e["recorded_at"]}, headers=h)
        latest = max(x["version"] for x in history if x["recorded_at"] <= e["recorded_at"])
        assert r.json() == rec.views[latest]
    before = datetime.fromisoformat(history[0]["recorded_at"]) - timedelta(seconds=1)
    r = await http.get(f"/v1/tickets/{rec.ticket_id}/as-of", params={"at": before.isoformat()},
                       headers=h)
    assert r.status_code == 404


async def test_history_shows_every_actor_in_order_and_pages(http, store, make_tenant):
    _t, auditor, rec = await _setup(http, store, make_tenant)
    h = bearer(auditor["secret"])
    events, cursor = [], None
    for _ in range(20):
        params = {"limit": 5} | ({"cursor": cursor} if cursor else {})
        r = await http.get(f"/v1/tickets/{rec.ticket_id}/history", params=params, headers=h)
        assert r.status_code == 200, r.text
        events += r.json()["data"]
        cursor = r.json()["next_cursor"]
        if not cursor:
            break
    assert [e["version"] for e in events] == list(range(1, len(rec.views) + 1))
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    for e in events:
        kind, actor_id = rec.actors[e["version"]]
        assert e["actor"] == {"kind": kind, "id": actor_id}, e["type"]
        assert len(bytes.fromhex(e["hash"])) == 32
    breach = [e for e in events if e["type"] == "SlaBreached"]
    assert len(breach) == 1 and breach[0]["actor"] == {"kind": "system", "id": "scheduler"}
    # The cursor of one ticket's history is no good for another list.
    first = (await http.get(f"/v1/tickets/{rec.ticket_id}/history", params={"limit": 1},
                            headers=h)).json()["next_cursor"]
    r = await http.get("/v1/events", params={"cursor": first}, headers=h)
    assert r.status_code == 400 and r.json()["code"] == "invalid_cursor"


async def test_bad_requests_and_unknown_tickets(http, store, make_tenant):
    t, auditor, rec = await _setup(http, store, make_tenant)
    other = await make_tenant("Other")
    h = bearer(auditor["secret"])
    path = f"/v1/tickets/{rec.ticket_id}/as-of"
    cases = [
        (path, {}, 400), (path, {"version": 1, "at": "2026-01-01T00:00:00Z"}, 400),
        (path, {"version": 0}, 400), (path, {"version": "x"}, 400),
        (path, {"at": "2026-01-01T00:00:00"}, 400),  # naive
        (path, {"version": 999}, 404),
        (f"/v1/tickets/{uuid.uuid4()}/as-of", {"version": 1}, 404),
        (f"/v1/tickets/{t.tenant_id}/history", {}, 404),  # the tenant stream is no ticket
        ("/v1/tickets/not-a-uuid/history", {}, 400),
        ("/v1/events", {"after_seq": -1}, 400), ("/v1/events", {"limit": 0}, 400),
        ("/v1/events", {"stream": "x"}, 400), ("/v1/events", {"after": "yesterday"}, 400),
    ]
    for url, params, status in cases:
        r = await http.get(url, params=params, headers=h)
        assert r.status_code == status, (url, params, r.text)
        assert r.headers["content-type"] == "application/problem+json"
    hb = bearer(other.admin_key.secret)
    assert (await http.get(path, params={"version": 1}, headers=hb)).status_code == 404
    assert (await http.get(f"/v1/tickets/{rec.ticket_id}/history",
                           headers=hb)).status_code == 404


async def test_feed_filters_and_pages_by_seq(http, store, make_tenant):
    _t, auditor, rec = await _setup(http, store, make_tenant)
    h = bearer(auditor["secret"])
    everything, cursor = [], None
    for _ in range(50):
        params = {"limit": 7} | ({"cursor": cursor} if cursor else {})
        page = (await http.get("/v1/events", params=params, headers=h)).json()
        everything += page["data"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert "total" not in page
    assert [e["seq"] for e in everything] == list(range(1, len(everything) + 1))
    # 4 keys issued and the agent the agent key belongs to, then the ticket
    assert len(everything) == 5 + len(rec.views)

    async def feed(**params) -> list[dict]:
        r = await http.get("/v1/events", params={"limit": 100, **params}, headers=h)
        assert r.status_code == 200, r.text
        return r.json()["data"]

    types = await feed(type="StateChanged,TagsChanged")
    assert types and {e["type"] for e in types} == {"StateChanged", "TagsChanged"}
    assert [e["version"] for e in await feed(stream_id=str(rec.ticket_id))] == \
        list(range(1, len(rec.views) + 1))
    system = await feed(actor_id="scheduler")
    assert [e["type"] for e in system] == ["SlaBreached"]
    assert [e["seq"] for e in await feed(after_seq=20)] == \
        [e["seq"] for e in everything if e["seq"] > 20]
    middle = everything[10]["recorded_at"]
    after = await feed(after=middle)
    assert after[0]["seq"] == everything[10]["seq"]
    before = await feed(before=middle)
    assert before[-1]["seq"] == everything[9]["seq"]


async def test_verify_endpoint_bounds_its_work(http, store, make_tenant):
    _, auditor, rec = await _setup(http, store, make_tenant)
    h = bearer(auditor["secret"])
    r = await http.get("/v1/audit/verify", headers=h)
    body = r.json()
    assert r.status_code == 200 and body["ok"] and body["first_bad_seq"] is None
    assert body["checked"] == body["head_seq"] == 5 + len(rec.views)
    r = await http.get("/v1/audit/verify", params={"from_seq": 3, "to_seq": 9}, headers=h)
    assert r.json()["checked"] == 7
    for params in ({"from_seq": 1, "to_seq": 100_001}, {"from_seq": 5, "to_seq": 4},
                   {"from_seq": 0}):
        r = await http.get("/v1/audit/verify", params=params, headers=h)
        assert r.status_code == 400, params
    r = await http.get("/v1/audit/verify", params={"from_seq": 1, "to_seq": 100_000}, headers=h)
    assert r.status_code == 200 and r.json()["ok"]


async def test_only_auditors_and_admins_read_the_audit_trail_and_auditors_never_write(
    http, store, make_tenant
):
    t, auditor, rec = await _setup(http, store, make_tenant)
    admin = t.admin_key.secret
    reads = [f"/v1/tickets/{rec.ticket_id}/history", "/v1/events", "/v1/audit/verify",
             f"/v1/tickets/{rec.ticket_id}/as-of?version=1"]
    for role in ("agent", "intake", "analyst"):
        k = await _key(http, admin, role)
        for url in reads:
            r = await http.get(url, headers=bearer(k["secret"]))
            assert r.status_code == 403, (role, url)
    for url in reads:
        assert (await http.get(url, headers=bearer(admin))).status_code == 200, url
        assert (await http.get(url, headers=bearer(auditor["secret"]))).status_code == 200

    # Every write endpoint the app has, whatever it is: 403 for an auditor. (Signing in
    # takes no bearer credential, `x-required-role: []`: an auditor's key means nothing
    # there, and what it checks instead is a person's password or cookie. The portal's
    # routes take only a customer's portal token: any API key is no credential there, 401.)
    schema = (await http.get("/openapi.json")).json()
    writes = [(m, p, op["x-required-role"] == ["customer"])
              for p, ops in schema["paths"].items() for m, op in ops.items()
              if m in ("post", "put", "patch", "delete") and op["x-required-role"]]
    assert len(writes) >= 5
    ids = {"agent_id": uuid.uuid4(), "key_id": uuid.UUID(auditor["id"]),
           "ticket_id": rec.ticket_id, "group_id": uuid.uuid4(), "id": uuid.uuid4(),
           "field_key": "plan", "contact_id": uuid.uuid4(), "organization_id": uuid.uuid4(),
           "tenant_id": t.tenant_id, "rule_id": uuid.uuid4(), "macro_id": uuid.uuid4(),
           "view_id": uuid.uuid4(), "mailbox_id": uuid.uuid4(), "quarantined_id": uuid.uuid4(),
           "calendar_id": uuid.uuid4(), "policy_id": uuid.uuid4()}
    head_before = (await http.get("/v1/audit/verify", headers=bearer(admin))).json()["head_seq"]
    for method, path, portal in writes:
        url = path.format_map({k: str(v) for k, v in ids.items()})
        r = await http.request(method.upper(), url, json={}, headers=bearer(auditor["secret"]))
        assert r.status_code == (401 if portal else 403), (method, path, r.text)
    head_after = (await http.get("/v1/audit/verify", headers=bearer(admin))).json()["head_seq"]
    assert head_after == head_before
