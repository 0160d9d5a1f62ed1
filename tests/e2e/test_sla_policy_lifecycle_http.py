"""SLA policies over their life, over HTTP: each clock of a ticket names its policy (for
agents too, who may not read policies), by the name of the version it runs on, in the
ticket, the list, the as-of list and the ticket's history; a policy or a calendar is
deleted with If-Match, the default and a calendar in use are refused, and the open
clocks of a deleted policy keep their recorded targets and deadline; the whole order
is set in one request, all or nothing."""

from __future__ import annotations

from tests.e2e.conftest import NEW_TICKET, Owner, auth

HOURS = {"timezone": "Europe/Berlin", "weekly": {str(d): [["09:00", "17:00"]] for d in range(5)},
         "holidays": []}
DEFAULT = {"name": "Default", "default": True,
           "targets": {"first_reply_ms": 3_600_000, "resolution_ms": 86_400_000}}
HIGH = {"name": "High", "position": 10,
        "conditions": [{"field": "priority", "op": "is", "value": "high"}],
        "targets": {"first_reply_ms": 600_000, "resolution_ms": 7_200_000}}


async def _made(http, admin, path: str, body: dict) -> dict:
    r = await http.post(path, json=body, headers=admin)
    assert r.status_code == 201, r.text
    return r.json()


async def test_every_clock_names_its_policy_for_agents_in_lists_as_of_and_history(
        http, tenant, owner: Owner):
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    await _made(http, admin, "/v1/sla-policies", DEFAULT)
    high = await _made(http, admin, "/v1/sla-policies", HIGH)
    tid = (await _made(http, admin, "/v1/tickets", NEW_TICKET))["id"]
    assert (await http.get("/v1/sla-policies", headers=agent)).status_code == 403

    one = (await http.get(f"/v1/tickets/{tid}", headers=agent)).json()
    policy = one["sla"]["first_response"]["policy"]
    assert policy["policy_id"] == high["id"] and policy["policy_name"] == "High"
    listed = (await http.get("/v1/tickets", headers=agent)).json()["data"]
    assert [t["sla"]["resolution"]["policy"]["policy_name"] for t in listed] == ["High"]

    # A rename is a new version: the clock keeps the name of the version it runs on
    # (as it keeps its targets) until it is moved onto the new one.
    renamed = await http.patch(f"/v1/sla-policies/{high['id']}", json={"name": "Urgent-ish"},
                               headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
    assert renamed.status_code == 200, renamed.text
    head = (await http.get("/v1/tickets", headers=agent)).json()
    assert head["data"][0]["sla"]["resolution"]["policy"]["policy_name"] == "High"
    applied = await http.post(f"/v1/sla-policies/{high['id']}/apply", headers=admin)
    assert applied.status_code == 200 and applied.json()["tickets"] == 1, applied.text
    now = (await http.get(f"/v1/tickets/{tid}", headers=agent)).json()["sla"]
    assert now["resolution"]["policy"] == {**policy, "policy_version": 2,
                                           "policy_name": "Urgent-ish"}

    # The desk as it stood before the apply: the name then.
    changes = (await http.get("/v1/changes", headers=admin)).json()["data"]
    before_apply = max(e["seq"] for e in changes if e["type"] == "SlaPolicyChanged")
    past = await http.get("/v1/tickets", params={"as_of_seq": before_apply}, headers=agent)
    assert past.status_code == 200, past.text
    assert [t["sla"]["resolution"]["policy"]["policy_name"]
            for t in past.json()["data"]] == ["High"]
    # The ticket's history names both policies on the retarget, and its as-of the name.
    history = (await http.get(f"/v1/tickets/{tid}/history", headers=admin)).json()["data"]
    retarget = next(e for e in history if e["type"] == "SlaRetargeted")
    assert retarget["data"]["from_policy"]["policy_name"] == "High"
    assert retarget["data"]["to_policy"]["policy_name"] == "Urgent-ish"
    first = await http.get(f"/v1/tickets/{tid}/as-of", params={"version": 1}, headers=admin)
    assert first.status_code == 200, first.text
    assert first.json()["sla"]["first_response"]["policy"]["policy_name"] == "High"


async def test_deleting_a_policy_keeps_its_open_clocks_and_refuses_the_default(
        http, tenant, owner: Owner, make_tenant):
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    default = await _made(http, admin, "/v1/sla-policies", DEFAULT)
    high = await _made(http, admin, "/v1/sla-policies", HIGH)
    tid = (await _made(http, admin, "/v1/tickets", NEW_TICKET))["id"]
    clocks = (await http.get(f"/v1/tickets/{tid}", headers=admin)).json()["sla"]

    path = f"/v1/sla-policies/{high['id']}"
    assert (await http.delete(path, headers=agent)).status_code == 403
    # Another tenant's policy is no policy of this one (row-level security).
    theirs = auth((await make_tenant("Globex")).admin_key)
    assert (await http.delete(path, headers=theirs)).status_code == 404
    assert (await http.put("/v1/sla-policies/order", headers=theirs, json={
        "policies": [{"id": high["id"], "version": 1}]})).json()["code"] == (
        "invalid_sla_policy_order")
    stale = await http.delete(path, headers=auth(tenant.admin_key, **{"If-Match": '"7"'}))
    assert stale.status_code == 412, stale.text
    kept = await http.delete(f"/v1/sla-policies/{default['id']}",
                             headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
    assert kept.status_code == 409 and kept.json()["code"] == "sla_policy_is_default"
    assert kept.headers["content-type"].startswith("application/problem+json")

    gone = await http.delete(path, headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
    assert gone.status_code == 200, gone.text
    assert gone.json()["version"] == 2 and gone.headers["etag"] == '"2"'
    assert (await http.get(path, headers=admin)).status_code == 404
    assert (await http.delete(path, headers=admin)).status_code == 404
    listed = (await http.get("/v1/sla-policies", headers=admin)).json()["data"]
    assert [p["id"] for p in listed] == [default["id"]]
    # Its stream keeps what it was; the event is on the tenant's changes like the others.
    history = (await http.get(f"{path}/history", headers=admin)).json()["data"]
    assert [e["type"] for e in history] == ["SlaPolicyCreated", "SlaPolicyDeleted"]
    was = await http.get(f"{path}/as-of", params={"version": 2}, headers=admin)
    assert was.status_code == 200 and was.json()["name"] == "High", was.text
    changes = (await http.get("/v1/changes", params={"types": "SlaPolicyDeleted"},
                              headers=admin)).json()["data"]
    assert [(e["stream_type"], e["stream_id"]) for e in changes] == [("sla_policy", high["id"])]

    # The open ticket's clocks run on as they were: same targets, same deadline, same
    # policy named; a new ticket is matched to what is left.
    after = (await http.get(f"/v1/tickets/{tid}", headers=agent)).json()["sla"]
    assert after == clocks
    assert after["first_response"]["policy"]["policy_name"] == "High"
    new = await _made(http, admin, "/v1/tickets", NEW_TICKET)
    assert new["sla"]["first_response"]["policy"]["policy_id"] == default["id"]
    # A re-match moves them on, naming the deleted policy as the one before.
    moved = await http.post(f"/v1/tickets/{tid}/priority", json={"priority": "low"},
                            headers=admin)
    assert moved.status_code == 200, moved.text
    assert moved.json()["sla"]["first_response"]["policy"]["policy_id"] == default["id"]
    events = (await http.get(f"/v1/tickets/{tid}/history", headers=admin)).json()["data"]
    retarget = next(e for e in events if e["type"] == "SlaRetargeted")
    assert retarget["data"]["from_policy"]["policy_id"] == high["id"]


async def test_a_calendar_in_use_is_not_deleted_and_names_its_policies(http, tenant,
                                                                        make_tenant):
    admin = auth(tenant.admin_key)
    office = await _made(http, admin, "/v1/calendars", {"name": "Office", "hours": HOURS})
    spare = await _made(http, admin, "/v1/calendars", {"name": "Spare", "hours": HOURS})
    await _made(http, admin, "/v1/sla-policies", {**DEFAULT, "calendar_id": office["id"]})
    high = await _made(http, admin, "/v1/sla-policies", {**HIGH, "calendar_id": office["id"]})

    path = f"/v1/calendars/{office['id']}"
    theirs = auth((await make_tenant("Globex")).admin_key)
    assert (await http.delete(path, headers=theirs)).status_code == 404
    used = await http.delete(path, headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
    assert used.status_code == 409, used.text
    body = used.json()
    assert body["code"] == "calendar_in_use"
    assert [p["name"] for p in body["policies"]] == ["Default", "High"]
    assert "'High'" in body["detail"]
    assert (await http.get(path, headers=admin)).status_code == 200

    stale = await http.delete(f"/v1/calendars/{spare['id']}",
                              headers=auth(tenant.admin_key, **{"If-Match": '"2"'}))
    assert stale.status_code == 412, stale.text
    gone = await http.delete(f"/v1/calendars/{spare['id']}", headers=admin)
    assert gone.status_code == 200 and gone.json()["version"] == 2, gone.text
    assert (await http.get(f"/v1/calendars/{spare['id']}", headers=admin)).status_code == 404
    history = (await http.get(f"/v1/calendars/{spare['id']}/history",
                              headers=admin)).json()["data"]
    assert [e["type"] for e in history] == ["CalendarCreated", "CalendarDeleted"]

    # Once no policy runs on it, it goes.
    moved = await http.patch(f"/v1/sla-policies/{high['id']}", json={"calendar_id": None},
                             headers=admin)
    assert moved.status_code == 200, moved.text
    still = await http.delete(path, headers=admin)
    assert [p["name"] for p in still.json()["policies"]] == ["Default"]


async def test_the_whole_order_is_set_at_once_or_not_at_all(http, tenant):
    admin = auth(tenant.admin_key)
    default = await _made(http, admin, "/v1/sla-policies", DEFAULT)
    made = [await _made(http, admin, "/v1/sla-policies",
                        {**HIGH, "name": name, "position": 0}) for name in "ABC"]
    a, b, c = (p["id"] for p in made)

    def at(*ids: str, versions: dict[str, int] | None = None) -> dict:
        return {"policies": [{"id": i, "version": (versions or {}).get(i, 1)} for i in ids]}

    async def put(body: dict):
        return await http.put("/v1/sla-policies/order", json=body, headers=admin)

    async def names() -> list[str]:
        listed = (await http.get("/v1/sla-policies", headers=admin)).json()["data"]
        return [p["name"] for p in sorted(listed, key=lambda p: (p["default"], p["position"],
                                                               p["created_at"], p["id"]))]

    refused = {
        "missing": (at(c, b, default["id"]), ["body", "policies"]),
        "twice": (at(c, b, b, a, default["id"]), ["body", "policies", "2", "id"]),
        "default first": (at(default["id"], c, b, a), ["body", "policies", "0", "id"]),
        "unknown": (at(c, b, a, "00000000-0000-0000-0000-000000000001", default["id"]),
                    ["body", "policies", "3", "id"]),
    }
    for case, (body, loc) in refused.items():
        r = await put(body)
        assert r.status_code == 422, (case, r.text)
        assert r.json()["code"] == "invalid_sla_policy_order", case
        assert r.json()["errors"][0]["loc"] == loc, case
    assert (await put({"policies": [], "extra": 1})).status_code == 422
    stale = await put(at(c, b, a, default["id"], versions={b: 2}))
    assert stale.status_code == 409, stale.text
    assert stale.json()["code"] == "sla_policy_changed"
    assert (stale.json()["policy_id"], stale.json()["current_version"]) == (b, 1)
    assert await names() == ["A", "B", "C", "Default"]

    done = await put(at(c, a, b, default["id"]))
    assert done.status_code == 200, done.text
    assert [p["name"] for p in done.json()["data"]] == ["C", "A", "B", "Default"]
    assert [p["position"] for p in done.json()["data"][:3]] == [10, 20, 30]
    assert await names() == ["C", "A", "B", "Default"]
    # One SlaPolicyChanged per policy moved, each a new version of its own stream.
    versions = {p["name"]: p["version"] for p in done.json()["data"]}
    assert versions == {"C": 2, "A": 2, "B": 2, "Default": 1}
    # A ticket is matched by the new order: C first.
    ticket = await _made(http, admin, "/v1/tickets", NEW_TICKET)
    assert ticket["sla"]["first_response"]["policy"]["policy_name"] == "C"
    # The same order again changes nothing.
    again = await put(at(c, a, b, default["id"], versions={a: 2, b: 2, c: 2}))
    assert again.status_code == 200 and [p["version"] for p in again.json()["data"]] == [
        2, 2, 2, 1]


async def test_the_lists_of_policies_and_calendars_page_on(http, tenant):
    """A page short of the whole list hands out a cursor that reads the rest (the
    cursor is the record's position, not its rendered document's)."""
    admin = auth(tenant.admin_key)
    made = [await _made(http, admin, "/v1/sla-policies", DEFAULT)]
    made += [await _made(http, admin, "/v1/sla-policies", {**HIGH, "name": n}) for n in "AB"]
    calendars = [await _made(http, admin, "/v1/calendars", {"name": n, "hours": HOURS})
                 for n in "XY"]
    for path, want in (("/v1/sla-policies", made), ("/v1/calendars", calendars)):
        seen, cursor = [], None
        while True:
            r = await http.get(path, params={"limit": 1, **({"cursor": cursor} if cursor
                                                              else {})}, headers=admin)
            assert r.status_code == 200, (path, r.text)
            seen += [d["id"] for d in r.json()["data"]]
            cursor = r.json()["next_cursor"]
            if cursor is None:
                break
        assert seen == [d["id"] for d in want], path
