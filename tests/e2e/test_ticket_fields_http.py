"""Ticket fields over HTTP: definitions (roles, If-Match, Idempotency-Key, history,
as-of), values on tickets, the rules' answers, and tenant isolation."""

from __future__ import annotations

from typing import Any

from tests.e2e.conftest import NEW_TICKET, auth

PLAN = {"key": "plan", "title": "Plan", "type": "dropdown",
        "options": [{"value": "free", "title": "Free"}, {"value": "pro", "title": "Pro"}]}


async def define(http: Any, key: Any, body: dict[str, Any]) -> dict[str, Any]:
    r = await http.post("/v1/ticket-fields", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    result: dict[str, Any] = r.json()
    return result


async def test_admins_define_and_change_fields_everyone_reads_them(http, tenant, owner):
    admin = tenant.admin_key
    created = await http.post("/v1/ticket-fields", json=PLAN,
                              headers=auth(admin, **{"Idempotency-Key": "plan-1"}))
    assert created.status_code == 201, created.text
    assert created.headers["location"] == "/v1/ticket-fields/plan"
    assert created.headers["etag"] == '"1"'
    body = created.json()
    assert body["options"] == [{"value": "free", "title": "Free", "active": True},
                               {"value": "pro", "title": "Pro", "active": True}]
    assert (body["required_on"], body["active"], body["intake"], body["version"]) == (
        None, True, False, 1)
    replay = await http.post("/v1/ticket-fields", json=PLAN,
                             headers=auth(admin, **{"Idempotency-Key": "plan-1"}))
    assert replay.status_code == 201 and replay.headers["idempotent-replayed"] == "true"

    again = await http.post("/v1/ticket-fields", json=PLAN | {"title": "Other"},
                            headers=auth(admin))
    assert again.status_code == 409 and again.json()["code"] == "already_exists"

    agent = await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id))
    analyst = await owner.key(tenant.tenant_id, "analyst")
    for key in (agent, analyst):
        listed = await http.get("/v1/ticket-fields", headers=auth(key))
        assert listed.status_code == 200 and [f["key"] for f in listed.json()["data"]] == ["plan"]
    refused = await http.post("/v1/ticket-fields", json=PLAN | {"key": "x"}, headers=auth(agent))
    assert refused.status_code == 403
    refused = await http.patch("/v1/ticket-fields/plan", json={"title": "x"},
                               headers=auth(agent))
    assert refused.status_code == 403

    stale = await http.patch("/v1/ticket-fields/plan", json={"title": "Subscription"},
                             headers=auth(admin, **{"If-Match": '"7"'}))
    assert stale.status_code == 412
    changed = await http.patch("/v1/ticket-fields/plan",
                               json={"title": "Subscription", "required_on": "solve",
                                     "options": [{"value": "pro", "title": "Pro"}]},
                               headers=auth(admin, **{"If-Match": '"1"'}))
    assert changed.status_code == 200, changed.text
    assert changed.headers["etag"] == '"2"'
    assert changed.json()["options"] == [{"value": "pro", "title": "Pro", "active": True},
                                         {"value": "free", "title": "Free", "active": False}]
    got = await http.get("/v1/ticket-fields/plan", headers=auth(agent))
    assert got.json() == changed.json()
    assert (await http.get("/v1/ticket-fields/nope", headers=auth(admin))).status_code == 404
    assert (await http.patch("/v1/ticket-fields/nope", json={"title": "x"},
                             headers=auth(admin))).status_code == 404


async def test_bad_definitions_are_refused_naming_what(http, tenant):
    admin = tenant.admin_key
    for body, where in (
        (PLAN | {"key": "Plan"}, "key"), (PLAN | {"options": []}, "options"),
        ({"key": "n", "title": "N", "type": "number", "options": PLAN["options"]}, "options"),
        ({"key": "n", "title": "N", "type": "number", "personal": True}, "personal"),
    ):
        r = await http.post("/v1/ticket-fields", json=body, headers=auth(admin))
        assert r.status_code == 422, (body, r.text)
        assert where in r.text
    for body in ({"key": "n", "title": "N", "type": "colour"},
                 {"key": "n", "title": "N", "type": "text", "extra": 1}):
        assert (await http.post("/v1/ticket-fields", json=body,
                                headers=auth(admin))).status_code == 422
    await define(http, admin, PLAN)
    for patch in ({}, {"title": None}, {"type": "text"}, {"key": "other"}):
        r = await http.patch("/v1/ticket-fields/plan", json=patch, headers=auth(admin))
        assert r.status_code == 422, (patch, r.text)


async def test_tickets_take_check_and_show_field_values(http, tenant, owner):
    admin = tenant.admin_key
    await define(http, admin, PLAN)
    await define(http, admin, {"key": "order_no", "title": "Order", "type": "number",
                               "required_on": "solve"})
    await define(http, admin, {"key": "vip", "title": "VIP", "type": "checkbox",
                               "intake": True})
    opened = await http.post("/v1/tickets", json=NEW_TICKET | {"fields": {"plan": "pro"}},
                             headers=auth(admin))
    assert opened.status_code == 201, opened.text
    ticket = opened.json()
    assert ticket["fields"] == {"plan": "pro"}
    tid = ticket["id"]

    bad = await http.post("/v1/tickets", json=NEW_TICKET | {"fields": {"plan": "gold"}},
                          headers=auth(admin))
    assert bad.status_code == 422 and bad.json()["code"] == "validation_failed"
    assert bad.json()["errors"][0]["loc"] == ["body", "fields", "plan"]
    unknown = await http.post(f"/v1/tickets/{tid}/fields", json={"fields": {"colour": "red"}},
                              headers=auth(admin))
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0]["loc"] == ["body", "fields", "colour"]

    unsolved = await http.post(f"/v1/tickets/{tid}/state", json={"state": "solved"},
                               headers=auth(admin))
    assert unsolved.status_code == 422 and "order_no" in unsolved.json()["detail"]

    stale = await http.post(f"/v1/tickets/{tid}/fields", json={"fields": {"order_no": 5}},
                            headers=auth(admin, **{"If-Match": '"9"'}))
    assert stale.status_code == 412
    changed = await http.post(f"/v1/tickets/{tid}/fields",
                              json={"fields": {"order_no": 5, "plan": None}},
                              headers=auth(admin, **{"If-Match": '"1"'}))
    assert changed.status_code == 200, changed.text
    assert changed.json()["fields"] == {"order_no": 5} and changed.headers["etag"] == '"2"'
    assert (await http.get(f"/v1/tickets/{tid}", headers=auth(admin))).json() == changed.json()
    solved = await http.post(f"/v1/tickets/{tid}/state", json={"state": "solved"},
                             headers=auth(admin))
    assert solved.status_code == 200, solved.text

    intake = await owner.key(tenant.tenant_id, "intake")
    own = await http.post("/v1/tickets", json=NEW_TICKET | {"fields": {"vip": True}},
                          headers=auth(intake))
    assert own.status_code == 201 and own.json()["fields"] == {"vip": True}
    agents_only = await http.post(f"/v1/tickets/{own.json()['id']}/fields",
                                  json={"fields": {"plan": "pro"}}, headers=auth(intake))
    assert agents_only.status_code == 422 and "agents only" in agents_only.json()["detail"]

    history = await http.get(f"/v1/tickets/{tid}/history", headers=auth(admin))
    change = [e for e in history.json()["data"] if e["type"] == "FieldValuesChanged"]
    assert change[0]["data"]["values"] == {"order_no": 5, "plan": None}


async def test_history_and_as_of_show_each_definition_as_it_was(http, tenant):
    admin = tenant.admin_key
    await define(http, admin, PLAN)
    tid = (await http.post("/v1/tickets", json=NEW_TICKET | {"fields": {"plan": "free"}},
                           headers=auth(admin))).json()["id"]
    await http.patch("/v1/ticket-fields/plan", json={"title": "Subscription"},
                     headers=auth(admin))
    await http.patch("/v1/ticket-fields/plan", json={"active": False}, headers=auth(admin))

    history = (await http.get("/v1/ticket-fields/plan/history", headers=auth(admin))).json()
    assert [(e["type"], e["data"]["title"], e["data"]["active"]) for e in history["data"]] == [
        ("TicketFieldDefined", "Plan", True), ("TicketFieldUpdated", "Subscription", True),
        ("TicketFieldUpdated", "Subscription", False)]
    first = await http.get("/v1/ticket-fields/plan/as-of", params={"version": 1},
                           headers=auth(admin))
    assert first.status_code == 200 and first.json()["title"] == "Plan"
    assert first.json()["active"] is True
    recorded = history["data"][1]["recorded_at"]
    second = await http.get("/v1/ticket-fields/plan/as-of", params={"at": recorded},
                            headers=auth(admin))
    assert (second.json()["title"], second.json()["version"]) == ("Subscription", 2)
    assert (await http.get("/v1/ticket-fields/plan/as-of", params={"version": 9},
                           headers=auth(admin))).status_code == 404
    assert (await http.get("/v1/ticket-fields/plan/as-of",
                           headers=auth(admin))).status_code == 400

    # The ticket's value and its history never held the title; the value stays readable
    # under a field now inactive, which no command may set any more.
    ticket = (await http.get(f"/v1/tickets/{tid}", headers=auth(admin))).json()
    assert ticket["fields"] == {"plan": "free"}
    as_of = await http.get(f"/v1/tickets/{tid}/as-of", params={"version": 1},
                           headers=auth(admin))
    assert as_of.json()["fields"] == {"plan": "free"}
    inactive = await http.post(f"/v1/tickets/{tid}/fields", json={"fields": {"plan": "pro"}},
                               headers=auth(admin))
    assert inactive.status_code == 422 and "inactive" in inactive.json()["detail"]


async def test_a_tenant_sees_only_its_own_fields(http, make_tenant):
    one, two = await make_tenant("One"), await make_tenant("Two")
    await define(http, one.admin_key, PLAN)
    assert (await http.get("/v1/ticket-fields", headers=auth(two.admin_key))).json() == {
        "data": []}
    assert (await http.get("/v1/ticket-fields/plan",
                           headers=auth(two.admin_key))).status_code == 404
    # The same key is the other tenant's own to define.
    await define(http, two.admin_key, PLAN | {"title": "Two's plan"})
    refused = await http.post("/v1/tickets", json=NEW_TICKET | {"fields": {"colour": "x"}},
                              headers=auth(two.admin_key))
    assert refused.status_code == 422
