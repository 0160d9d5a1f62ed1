"""as-of over HTTP: for a ticket changed 20+ times through the API, the replayed state at
each version equals the ticket the API returned right after that change; under each
filter the generated desk of tests/integration/test_desk_as_of.py has none of, the
list as of a seq answers what the list answered at that seq."""

from __future__ import annotations

from tests.e2e.conftest import NEW_TICKET, auth, bearer


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


FIELDS = [{"key": "plan", "title": "Plan", "type": "dropdown", "options": [
    {"value": "free", "title": "Free"}, {"value": "pro", "title": "Pro"}]},
    {"key": "seats", "title": "Seats", "type": "number"}]


async def test_each_filter_as_of_a_seq_answers_what_the_list_answered_then(http, tenant):
    """The filters on groups, requesters, organizations, creation time and fields: as of
    a seq, each answers what the list answered at that seq, after every ticket has since
    moved group, its field values and its requester's organization, and one more was
    opened."""
    h = auth(tenant.admin_key)

    async def made(path: str, body: dict) -> dict:
        r = await http.post(path, json=body, headers=h)
        assert r.status_code in (200, 201), r.text
        return r.json()

    g1 = await made("/v1/groups", {"name": "Tier 1", "members": []})
    g2 = await made("/v1/groups", {"name": "Tier 2", "members": []})
    acme = await made("/v1/organizations", {"name": "Acme", "domains": ["acme.test"]})
    for body in FIELDS:
        await made("/v1/ticket-fields", body)
    ann = {"email": "ann@acme.test", "name": "Ann"}
    bob = {"email": "bob@example.com", "name": "Bob"}
    tickets = [await made("/v1/tickets", NEW_TICKET | {"requester": who, "fields": fields,
                                                       **({"group_id": g} if g else {})})
               for who, g, fields in ((ann, g1["id"], {"plan": "pro", "seats": 10}),
                                      (bob, g2["id"], {"plan": "free"}),
                                      (ann, None, {"seats": 30}), (bob, g1["id"], {}))]
    ann_id = tickets[0]["requester"]["contact_id"]
    queries = [{"group_id": g1["id"]}, {"group_id": "none"}, {"requester_id": ann_id},
               {"organization_id": acme["id"]}, {"organization_id": "none"},
               {"created_before": tickets[2]["created_at"]}, {"field.plan": "pro"},
               {"field.seats.gte": "20"}, {"group_id": g2["id"], "field.plan": "free"}]

    async def ids(params: dict) -> list[str]:
        r = await http.get("/v1/tickets", params=params, headers=h)
        assert r.status_code == 200, (params, r.text)
        return [t["id"] for t in r.json()["data"]]

    seq = (await http.get("/v1/changes", headers=h)).json()["head_seq"]
    then = [await ids(q) for q in queries]
    assert all(then[:-1]) and then[-1] == [tickets[1]["id"]], then

    for t, group, fields in zip(tickets, (g2, g1, g1, g2), (
            {"plan": "free", "seats": 1}, {"plan": "pro", "seats": 50},
            {"plan": "pro", "seats": None}, {"plan": "free", "seats": 25}), strict=True):
        await made(f"/v1/tickets/{t['id']}/assignee", {"group_id": group["id"]})
        await made(f"/v1/tickets/{t['id']}/fields", {"fields": fields})
    moved = await http.patch(f"/v1/contacts/{ann_id}", json={"organization_id": None},
                             headers=h)
    assert moved.status_code == 200, moved.text
    await made("/v1/tickets", NEW_TICKET | {"requester": ann, "group_id": g1["id"],
                                            "fields": {"plan": "pro", "seats": 40}})
    now = [await ids(q) for q in queries]
    # Every answer has moved since, but that of a time the new ticket comes after.
    assert [q for q, a, b in zip(queries, now, then, strict=True) if a == b] == [
        {"created_before": tickets[2]["created_at"]}], (now, then)
    assert [await ids({**q, "as_of_seq": seq}) for q in queries] == then
