"""as-of over HTTP: for a ticket changed 20+ times through the API, the replayed state at
each version equals the ticket the API returned right after that change."""

from __future__ import annotations

from tests.e2e.conftest import bearer


async def _key(http, admin: str, role: str, **extra: str) -> dict:
    r = await http.post("/v1/api-keys", json={"name": role, "role": role, **extra},
                        headers=bearer(admin))
    assert r.status_code == 201, r.text
    return r.json()


async def test_as_of_matches_every_api_answer(http, make_tenant):
    t = await make_tenant()
    admin = t.admin_key.secret
    ann = (await http.post("/v1/agents", json={"email": "ann@example.com", "name": "Ann"},
                           headers=bearer(admin))).json()
    agent = await _key(http, admin, "agent", agent_id=ann["id"])
    intake, auditor = [await _key(http, admin, r) for r in ("intake", "auditor")]
    ha, hi = bearer(agent["secret"]), bearer(intake["secret"])
    seen: dict[int, dict] = {}

    def keep(r) -> None:
        assert r.status_code in (200, 201), r.text
        body = r.json()
        ticket = body.get("ticket", body)
        seen[ticket["version"]] = ticket

    r = await http.post("/v1/tickets", headers=hi, json={
        "subject": "Printer on fire", "body": "help", "requester": {"email": "c@example.com"},
        "priority": "normal", "tags": ["hardware"]})
    keep(r)
    tid = r.json()["id"]
    steps = [
        ("tags", {"add": ["billing"], "remove": []}), ("assignee", {"agent_id": ann["id"]}),
        ("priority", {"priority": "high"}),
        ("messages", {"body": "looking", "visibility": "internal"}),
        ("messages", {"body": "on it", "visibility": "public"}),
        ("state", {"state": "pending"}), ("customer", {"body": "still burning"}),
        ("priority", {"priority": "urgent"}), ("state", {"state": "on_hold"}),
        ("state", {"state": "open"}), ("tags", {"add": ["vip"], "remove": ["billing"]}),
        ("assignee", {"agent_id": None}), ("messages", {"body": "fixed?"}),
        ("state", {"state": "solved"}), ("state", {"state": "open", "reason": "not fixed"}),
        ("priority", {"priority": "low"}), ("messages", {"body": "n", "visibility": "internal"}),
        ("assignee", {"agent_id": ann["id"]}), ("state", {"state": "solved"}),
        ("state", {"state": "closed"}),
    ]
    for kind, body in steps:
        if kind == "customer":
            keep(await http.post(f"/v1/tickets/{tid}/messages", json=body, headers=hi))
        else:
            keep(await http.post(f"/v1/tickets/{tid}/{kind}", json=body, headers=ha))
    final = (await http.get(f"/v1/tickets/{tid}", headers=ha)).json()
    assert final["version"] >= 20 and final["state"] == "closed"

    h = bearer(auditor["secret"])
    # Versions a command wrote together (a customer reply reopening a pending ticket) were
    # never answered on their own; every answered one must replay exactly.
    for version, answered in seen.items():
        r = await http.get(f"/v1/tickets/{tid}/as-of", params={"version": version}, headers=h)
        assert r.status_code == 200, r.text
        assert r.json() == answered, version
    assert len(seen) >= 20

    history = (await http.get(f"/v1/tickets/{tid}/history", params={"limit": 100},
                              headers=h)).json()["data"]
    assert [e["version"] for e in history] == list(range(1, final["version"] + 1))
    by_version = {e["version"]: e["actor"] for e in history}
    assert by_version[1] == {"kind": "api_key", "id": intake["id"]}
    assert by_version[2] == {"kind": "api_key", "id": agent["id"]}


async def test_admin_writes_honour_idempotency_keys(http, make_tenant):
    t = await make_tenant()
    h = bearer(t.admin_key.secret)
    body = {"name": "ci", "role": "auditor"}
    first = await http.post("/v1/api-keys", json=body, headers={**h, "Idempotency-Key": "k1"})
    assert first.status_code == 201 and first.json()["secret"].startswith("hd_")
    again = await http.post("/v1/api-keys", json=body, headers={**h, "Idempotency-Key": "k1"})
    # Never a second key; without IDEMPOTENCY_SECRET the secret cannot be shown again,
    # so the replay names the key to revoke (tests/e2e/test_idempotent_replays.py).
    assert again.status_code == 409 and again.json()["key_id"] == first.json()["id"]
    other = await http.post("/v1/api-keys", json={**body, "name": "x"},
                            headers={**h, "Idempotency-Key": "k1"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    keys = (await http.get("/v1/api-keys", headers=h)).json()["data"]
    assert len(keys) == 2

    agent = {"email": "a@example.com", "name": "A"}
    r1 = await http.post("/v1/agents", json=agent, headers={**h, "Idempotency-Key": "a"})
    r2 = await http.post("/v1/agents", json=agent, headers={**h, "Idempotency-Key": "a"})
    assert r1.status_code == r2.status_code == 201 and r1.json() == r2.json()
    events = (await http.get("/v1/events", params={"type": "AgentAdded"}, headers=h)).json()
    assert len(events["data"]) == 1
