"""Calendars and SLA policies over HTTP: create, change, history and as-of; each kind of
bad input is a 422 naming the part with nothing saved; a set of policies keeps its one
default; admins only; one tenant's calendars and policies are not another's (the app
runs as the runtime role, under row-level security)."""

from __future__ import annotations

from api.app import create_app
from tests.e2e.conftest import NEW_TICKET, Owner, app_settings, asgi_client, auth

HOURS = {"timezone": "Europe/Berlin", "weekly": {str(d): [["09:00", "17:00"]] for d in range(5)},
         "holidays": ["2026-12-25"]}
DEFAULT = {"name": "Default", "default": True,
           "targets": {"first_reply_ms": 3_600_000, "next_reply_ms": 7_200_000,
                       "resolution_ms": 86_400_000}}


def _loc(r) -> list[str]:
    assert r.status_code == 422, r.text
    return r.json()["errors"][0]["loc"]


async def test_calendars_refuse_bad_hours_and_keep_their_versions(http, tenant, owner: Owner):
    admin = auth(tenant.admin_key)
    for hours, code, where in (
        ({**HOURS, "weekly": {"0": [["09:00", "13:00"], ["12:00", "17:00"]]}},
         "invalid_calendar", ["hours", "weekly", "0", "1"]),
        ({**HOURS, "weekly": {"2": [["17:00", "09:00"]]}},
         "invalid_calendar", ["hours", "weekly", "2", "0"]),
        ({**HOURS, "holidays": ["2026-01-01", "10000-01-01"]},
         "invalid_calendar", ["hours", "holidays", "1"]),
        ({**HOURS, "holidays": ["0000-12-25"]}, "invalid_calendar", ["hours", "holidays", "0"]),
        ({**HOURS, "holidays": ["2026-02-30"]}, "invalid_calendar", ["hours", "holidays", "0"]),
        ({**HOURS, "timezone": "Mars/Olympus"}, "invalid_calendar", ["hours", "timezone"]),
        ({**HOURS, "weekly": {"7": [["09:00", "17:00"]]}}, "invalid_calendar",
         ["hours", "weekly", "7"]),
    ):
        r = await http.post("/v1/calendars", json={"name": "Office", "hours": hours},
                            headers=admin)
        assert _loc(r) == ["body", *where], (hours, r.text)
        assert r.json()["code"] == code
    assert (await http.get("/v1/calendars", headers=admin)).json()["data"] == []

    made = await http.post("/v1/calendars", json={"name": "Office", "hours": HOURS},
                           headers=admin)
    assert made.status_code == 201, made.text
    calendar = made.json()
    assert made.headers["Location"] == f"/v1/calendars/{calendar['id']}"
    assert calendar["hours"]["holidays"] == ["2026-12-25"] and calendar["version"] == 1
    later = {**HOURS, "weekly": {"0": [["08:00", "12:00"], ["13:00", "18:00"]]}}
    changed = await http.patch(f"/v1/calendars/{calendar['id']}", json={"hours": later},
                               headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
    assert changed.status_code == 200 and changed.headers["ETag"] == '"2"', changed.text
    history = await http.get(f"/v1/calendars/{calendar['id']}/history", headers=admin)
    assert [e["type"] for e in history.json()["data"]] == ["CalendarCreated",
                                                          "CalendarChanged"]
    past = await http.get(f"/v1/calendars/{calendar['id']}/as-of?version=1", headers=admin)
    assert past.json() == calendar

    agent = await owner.key(tenant.tenant_id, "agent",
                            agent_id=await owner.agent(tenant.tenant_id))
    assert (await http.get("/v1/calendars", headers=auth(agent))).status_code == 403


async def test_policies_keep_one_default_and_refuse_what_cannot_work(http, tenant,
                                                                       make_tenant):
    admin = auth(tenant.admin_key)
    urgent = {"name": "Urgent", "conditions": [{"field": "priority", "op": "is",
                                                "value": "urgent"}],
              "targets": {"first_reply_ms": 600_000}}
    first = await http.post("/v1/sla-policies", json=urgent, headers=admin)
    assert first.json()["code"] == "invalid_sla_policy" and _loc(first) == ["body", "default"]
    conditioned_default = {**DEFAULT, "conditions": urgent["conditions"]}
    assert _loc(await http.post("/v1/sla-policies", json=conditioned_default,
                                headers=admin)) == ["body", "conditions"]
    made = await http.post("/v1/sla-policies", json=DEFAULT, headers=admin)
    assert made.status_code == 201, made.text
    default = made.json()
    assert default["calendar_id"] is None and default["targets"]["periodic_update_ms"] is None
    assert _loc(await http.post("/v1/sla-policies", json=DEFAULT, headers=admin)) == [
        "body", "default"]

    field = await http.post("/v1/ticket-fields", json={"key": "seats", "title": "Seats",
                                                       "type": "number"}, headers=admin)
    assert field.status_code == 201, field.text
    for body, where in (
        ({"conditions": [{"field": "colour", "op": "is", "value": "red"}]},
         ["conditions", "0", "field"]),
        ({"conditions": [{"field": "fields.colour", "op": "is", "value": "red"}]},
         ["conditions", "0", "field"]),
        ({"conditions": [{"field": "fields.seats", "op": "is", "value": "many"}]},
         ["conditions", "0", "value"]),
        ({"conditions": [{"field": "state", "op": "is", "value": "open"}]},
         ["conditions", "0", "field"]),
        ({"conditions": [{"field": "priority", "op": "is", "value": "asap"}]},
         ["conditions", "0", "value"]),
        ({"conditions": [{"field": "group_id", "op": "is",
                          "value": "00000000-0000-4000-8000-000000000000"}]},
         ["conditions", "0", "value"]),
        ({"targets": {"first_reply_ms": 367 * 86_400_000}}, ["targets", "first_reply_ms"]),
        ({"targets": {"next_reply_ms": 60_000}}, ["targets", "next_reply_ms"]),
        ({"calendar_id": "00000000-0000-4000-8000-000000000000"}, ["calendar_id"]),
    ):
        r = await http.post("/v1/sla-policies", json={**urgent, **body}, headers=admin)
        assert _loc(r) == ["body", *where], (body, r.text)
    assert len((await http.get("/v1/sla-policies", headers=admin)).json()["data"]) == 1

    calendar = (await http.post("/v1/calendars", json={"name": "Office", "hours": HOURS},
                                headers=admin)).json()
    vip = await http.post("/v1/sla-policies", headers=admin, json={
        **urgent, "calendar_id": calendar["id"],
        "conditions": [*urgent["conditions"],
                       {"field": "fields.seats", "op": "is", "value": 50},
                       {"field": "tags", "op": "contains", "value": "VIP"}]})
    assert vip.status_code == 201, vip.text
    policy = vip.json()
    assert policy["conditions"][2]["value"] == "vip"
    patched = await http.patch(f"/v1/sla-policies/{policy['id']}", json={"calendar_id": None},
                               headers=admin)
    assert patched.status_code == 200 and patched.json()["calendar_id"] is None, patched.text
    as_of = await http.get(f"/v1/sla-policies/{policy['id']}/as-of?version=1", headers=admin)
    assert as_of.json()["calendar_id"] == calendar["id"]

    other = await make_tenant("Globex")
    theirs = auth(other.admin_key)
    assert (await http.get("/v1/sla-policies", headers=theirs)).json()["data"] == []
    assert (await http.get("/v1/calendars", headers=theirs)).json()["data"] == []
    assert (await http.get(f"/v1/sla-policies/{policy['id']}",
                           headers=theirs)).status_code == 404
    assert (await http.get(f"/v1/calendars/{calendar['id']}/history",
                           headers=theirs)).status_code == 404
    # Another tenant's calendar is no calendar of this one.
    refused = await http.post("/v1/sla-policies", headers=theirs,
                              json={**DEFAULT, "calendar_id": calendar["id"]})
    assert _loc(refused) == ["body", "calendar_id"]


async def test_a_policy_changed_in_one_process_is_applied_by_the_next_command_in_another(
        db, http, tenant):
    """Two apps on one database, as two processes: each keeps the tenant's policies
    parsed between commands, and each change made through one (a policy's targets, a
    new policy, a calendar's hours) is what the other's very next opening runs on."""
    admin = auth(tenant.admin_key)
    made = await http.post("/v1/sla-policies", json=DEFAULT, headers=admin)
    assert made.status_code == 201, made.text
    default = made.json()
    other = create_app(app_settings(db))
    async with asgi_client(other) as there:

        async def first_reply() -> dict:
            r = await there.post("/v1/tickets", json=NEW_TICKET, headers=admin)
            assert r.status_code == 201, r.text
            clock = r.json()["sla"]["first_response"]
            return {"target_ms": clock["target_ms"], **clock["policy"]}

        seen = await first_reply()
        assert seen == {"target_ms": 3_600_000, "policy_id": default["id"],
                        "policy_version": 1, "calendar_id": None, "calendar_version": None,
                        "policy_name": "Default"}
        assert await first_reply() == seen  # kept, not read again: the same answer
        memo = other.state.services.store.memo
        assert len(memo) == 1

        changed = await http.patch(f"/v1/sla-policies/{default['id']}",
                                   json={"targets": {"first_reply_ms": 600_000}},
                                   headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
        assert changed.status_code == 200, changed.text
        assert await first_reply() == {**seen, "target_ms": 600_000, "policy_version": 2}

        calendar = (await http.post("/v1/calendars", json={"name": "Office", "hours": HOURS},
                                    headers=admin)).json()
        mail = await http.post("/v1/sla-policies", headers=admin, json={
            "name": "Mail", "position": 0, "calendar_id": calendar["id"],
            "conditions": [{"field": "channel", "op": "is", "value": "email"}],
            "targets": {"first_reply_ms": 1_800_000}})
        assert mail.status_code == 201, mail.text
        assert await first_reply() == {
            "target_ms": 1_800_000, "policy_id": mail.json()["id"], "policy_version": 1,
            "calendar_id": calendar["id"], "calendar_version": 1, "policy_name": "Mail"}

        later = {**HOURS, "weekly": {"0": [["08:00", "18:00"]]}}
        moved = await http.patch(f"/v1/calendars/{calendar['id']}", json={"hours": later},
                                 headers=auth(tenant.admin_key, **{"If-Match": '"1"'}))
        assert moved.status_code == 200, moved.text
        assert (await first_reply())["calendar_version"] == 2


async def test_settings_targets_are_refused_once_policies_set_the_clocks(http, tenant):
    admin = auth(tenant.admin_key)
    doc = (await http.get("/v1/settings", headers=admin)).json()
    faster = {**doc, "sla_targets": {**doc["sla_targets"],
                                     "urgent": {"first_response_ms": 60_000,
                                                "resolution_ms": 600_000}}}
    before = await http.put("/v1/settings", json=faster, headers=admin)
    assert before.status_code == 200, before.text
    assert (await http.post("/v1/sla-policies", json=DEFAULT, headers=admin)).status_code == 201

    refused = await http.put("/v1/settings", json=doc, headers=admin)
    assert refused.status_code == 409, refused.text
    body = refused.json()
    assert body["code"] == "sla_settings_superseded" and body["fields"] == ["sla_targets"]
    assert "/v1/sla-policies" in body["detail"] and "/v1/calendars" in body["detail"]
    assert refused.headers["content-type"].startswith("application/problem+json")
    stored = (await http.get("/v1/settings", headers=admin)).json()
    assert stored["sla_targets"] == faster["sla_targets"]
    # The stored targets, sent back with other changes, are taken; so are business
    # hours, which still set the rules' hours.
    kept = {**stored, "paused_states": ["pending"], "business_hours": HOURS}
    taken = await http.put("/v1/settings", json=kept, headers=admin)
    assert taken.status_code == 200, taken.text
    assert taken.json()["paused_states"] == ["pending"]


async def test_periodic_update_and_requester_wait_clocks_follow_replies_and_states(
        http, tenant):
    admin = auth(tenant.admin_key)
    too_long = {**DEFAULT, "targets": {**DEFAULT["targets"],
                                       "requester_wait_ms": 367 * 86_400_000}}
    assert _loc(await http.post("/v1/sla-policies", json=too_long, headers=admin)) == [
        "body", "targets", "requester_wait_ms"]
    both = {**DEFAULT, "targets": {**DEFAULT["targets"], "periodic_update_ms": 7_200_000,
                                   "requester_wait_ms": 14_400_000}}
    made = await http.post("/v1/sla-policies", json=both, headers=admin)
    assert made.status_code == 201, made.text
    tid = (await http.post("/v1/tickets", json=NEW_TICKET, headers=admin)).json()["id"]

    sla = (await http.get(f"/v1/tickets/{tid}", headers=admin)).json()["sla"]
    assert sla["periodic_update"]["started_at"] is None
    wait = sla["requester_wait"]
    assert wait["target_ms"] == 14_400_000 and wait["due_at"] is not None
    assert wait["policy"]["policy_id"] == made.json()["id"]

    r = await http.post(f"/v1/tickets/{tid}/messages", json={"body": "On it"}, headers=admin)
    assert r.status_code in (200, 201), r.text
    r = await http.post(f"/v1/tickets/{tid}/state", json={"state": "pending"}, headers=admin)
    assert r.status_code == 200, r.text
    sla = r.json()["sla"]
    update = sla["periodic_update"]
    assert update["started_at"] is not None and update["due_at"] is not None
    assert not update["paused"]  # updates are owed while pending
    assert sla["requester_wait"]["paused"] and sla["requester_wait"]["remaining_ms"] > 0


async def test_a_policy_measures_agent_work_and_the_ticket_shows_its_clock(http, tenant):
    admin = auth(tenant.admin_key)
    too_long = {**DEFAULT, "targets": {**DEFAULT["targets"],
                                       "agent_work_ms": 367 * 86_400_000}}
    assert _loc(await http.post("/v1/sla-policies", json=too_long, headers=admin)) == [
        "body", "targets", "agent_work_ms"]
    assert _loc(await http.post("/v1/sla-policies", json={
        **DEFAULT, "targets": {**DEFAULT["targets"], "agent_work_ms": 0}},
        headers=admin)) == ["body", "targets", "agent_work_ms"]
    assert (await http.get("/v1/sla-policies", headers=admin)).json()["data"] == []
    made = await http.post("/v1/sla-policies", json={
        **DEFAULT, "targets": {**DEFAULT["targets"], "agent_work_ms": 14_400_000}},
        headers=admin)
    assert made.status_code == 201, made.text
    policy = made.json()
    assert policy["targets"]["agent_work_ms"] == 14_400_000
    got = await http.get(f"/v1/sla-policies/{policy['id']}", headers=admin)
    assert got.json()["targets"] == policy["targets"]
    tid = (await http.post("/v1/tickets", json=NEW_TICKET, headers=admin)).json()["id"]

    work = (await http.get(f"/v1/tickets/{tid}", headers=admin)).json()["sla"]["agent_work"]
    assert work["target_ms"] == 14_400_000 and work["due_at"] is not None
    assert not work["paused"] and work["policy"]["policy_id"] == policy["id"]
    for state in ("on_hold", "pending"):
        r = await http.post(f"/v1/tickets/{tid}/state", json={"state": state},
                            headers=admin)
        assert r.status_code == 200, r.text
        sla = r.json()["sla"]
        assert sla["agent_work"]["paused"] and sla["agent_work"]["due_at"] is None
        assert 0 < sla["agent_work"]["remaining_ms"] <= 14_400_000
    r = await http.post(f"/v1/tickets/{tid}/state", json={"state": "solved"}, headers=admin)
    solved = r.json()["sla"]["agent_work"]
    assert solved["fulfilled_at"] is not None and solved["paused"]
    r = await http.post(f"/v1/tickets/{tid}/state", json={"state": "open"}, headers=admin)
    reopened = r.json()["sla"]["agent_work"]
    assert reopened["fulfilled_at"] is None and reopened["due_at"] is not None
    assert not reopened["paused"]
    # The as-of read shows the clock as it stood: running as opened, paused on hold.
    for version, paused in ((1, False), (2, True)):
        past = await http.get(f"/v1/tickets/{tid}/as-of?version={version}", headers=admin)
        assert past.status_code == 200, past.text
        assert past.json()["sla"]["agent_work"]["paused"] is paused
    # The targets are changed like the others; leaving it out stops measuring it.
    patched = await http.patch(
        f"/v1/sla-policies/{policy['id']}", json={"targets": DEFAULT["targets"]},
        headers=auth(tenant.admin_key, **{"If-Match": f'"{policy["version"]}"'}))
    assert patched.status_code == 200, patched.text
    assert patched.json()["targets"]["agent_work_ms"] is None
