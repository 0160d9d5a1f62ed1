"""Rules over HTTP: create, list, change, history and as-of; every kind of bad input is
a 422 naming the part with nothing saved; the 500-rule limit; admins only; the dry
run; a fired rule in the ticket's history with its id; rules of one tenant are not
another's."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from handlers.rule_engine import RuleEngine
from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, Owner, auth

OPENED = {"field": "event", "op": "is", "value": "TicketOpened"}
RULE = {"name": "Urgent to rush", "position": 3,
        "conditions": [OPENED, {"field": "priority", "op": "is", "value": "urgent"}],
        "actions": [{"type": "add_tags", "value": ["rush"]}]}


async def _count(http: httpx.AsyncClient, key: Any) -> int:
    r = await http.get("/v1/rules?limit=100", headers=auth(key))
    assert r.status_code == 200, r.text
    return len(r.json()["data"])


async def test_create_change_and_read_the_past_of_a_rule(http, tenant, owner: Owner):
    admin = tenant.admin_key
    created = await http.post("/v1/rules", json=RULE,
                              headers=auth(admin, **{"Idempotency-Key": "r-1"}))
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule["version"] == 1 and rule["active"] and rule["position"] == 3
    assert created.headers["Location"] == f"/v1/rules/{rule['id']}"
    again = await http.post("/v1/rules", json=RULE,
                            headers=auth(admin, **{"Idempotency-Key": "r-1"}))
    assert again.json() == rule and again.headers["Idempotent-Replayed"] == "true"
    assert await _count(http, admin) == 1

    stale = await http.patch(f"/v1/rules/{rule['id']}", json={"active": False},
                             headers=auth(admin, **{"If-Match": '"9"'}))
    assert stale.status_code == 412
    off = await http.patch(f"/v1/rules/{rule['id']}", json={"active": False},
                           headers=auth(admin, **{"If-Match": '"1"'}))
    assert off.status_code == 200 and off.json()["active"] is False
    assert off.headers["ETag"] == '"2"'

    history = await http.get(f"/v1/rules/{rule['id']}/history", headers=auth(admin))
    assert [e["type"] for e in history.json()["data"]] == ["RuleCreated", "RuleChanged"]
    past = await http.get(f"/v1/rules/{rule['id']}/as-of?version=1", headers=auth(admin))
    assert past.status_code == 200 and past.json() == rule

    agent = await owner.key(tenant.tenant_id, "agent", agent_id=await owner.agent(
        tenant.tenant_id))
    assert (await http.get("/v1/rules", headers=auth(agent))).status_code == 403
    assert (await http.post("/v1/rules", json=RULE, headers=auth(agent))).status_code == 403


async def test_bad_input_is_a_422_naming_the_part_and_saves_nothing(http, tenant, owner):
    admin = tenant.admin_key
    outsider = await owner.agent(tenant.tenant_id)
    group = (await http.post("/v1/groups", json={"name": "Tier 2"},
                             headers=auth(admin))).json()
    field = await http.post("/v1/ticket-fields", json={"key": "seats", "title": "Seats",
                                                       "type": "number"},
                            headers=auth(admin))
    assert field.status_code == 201, field.text
    cases = [
        ({"conditions": [{"field": "colour", "op": "is", "value": "red"}]},
         ["conditions", "0", "field"]),
        ({"conditions": [{"field": "fields.nope", "op": "is", "value": 1}]},
         ["conditions", "0", "field"]),
        ({"conditions": [{"field": "fields.seats", "op": "is", "value": "many"}]},
         ["conditions", "0", "value"]),
        # More than 64 bits: the event could not be written (it was a 500).
        ({"conditions": [{"field": "fields.seats", "op": "is", "value": 2**70}]},
         ["conditions", "0", "value"]),
        ({"actions": [{"type": "set_fields", "value": {"seats": -(2**64)}}]},
         ["actions", "0", "value"]),
        ({"actions": [{"type": "add_tags", "value": ["x"]}, {"type": "send_mail", "value": {
            "to": "requester", "template": {"subject": "Hi", "body": "{{ password }}"}}}]},
         ["actions", "1", "value", "template", "body"]),
        # A well-formed mail, but the tenant has no mailbox to send it from.
        ({"actions": [{"type": "send_mail", "value": {
            "to": "requester", "template": {"subject": "Hi", "body": "Hello {{ name }}"}}}]},
         ["actions", "0", "value"]),
        ({"actions": [{"type": "send_mail", "value": {"to": "group", "group_id": str(
            uuid.uuid4()), "template": {"subject": "Hi", "body": "Hello"}}}]},
         ["actions", "0", "value", "group_id"]),
        ({"actions": [{"type": "set_state", "value": "closed"}]}, ["actions", "0", "value"]),
        ({"actions": [{"type": "set_group", "value": group["id"]},
                      {"type": "assign", "value": str(outsider)}]},
         ["actions", "1", "value"]),
        ({"actions": [{"type": "add_note", "value": "Hi {{requester.shoe_size}}"}]},
         ["actions", "0", "value"]),
        ({"actions": [{"type": "add_note", "value": "Seats: {{fields.chairs}}"}]},
         ["actions", "0", "value"]),
    ]
    for change, loc in cases:
        r = await http.post("/v1/rules", json=RULE | change, headers=auth(admin))
        assert r.status_code == 422, (change, r.text)
        body = r.json()
        assert body["errors"][0]["loc"] == ["body", *loc], (change, body)
    assert await _count(http, admin) == 0


async def test_at_most_500_rules(http, tenant, services):
    from datetime import UTC, datetime

    from tests.support.rules import make_rule
    at = datetime.now(UTC)
    for _ in range(500):
        await make_rule(services.store, tenant.tenant_id, at, [OPENED],
                        [{"type": "add_tags", "value": ["x"]}])
    r = await http.post("/v1/rules", json=RULE, headers=auth(tenant.admin_key))
    assert r.status_code == 422 and r.json()["code"] == "too_many_rules"


async def test_a_fired_rule_shows_in_the_history_and_the_dry_run(http, tenant, owner,
                                                                 services, make_tenant):
    admin = tenant.admin_key
    rule = (await http.post("/v1/rules", json=RULE, headers=auth(admin))).json()
    other = (await http.post("/v1/rules", json=RULE | {"name": "Low", "conditions": [
        {"field": "priority", "op": "is", "value": "low"}]}, headers=auth(admin))).json()
    ticket = (await http.post("/v1/tickets", json=NEW_TICKET | {"priority": "urgent"},
                              headers=auth(admin))).json()
    engine = Projector(services.pool, [RuleEngine(services.store.keyring)])
    await engine.ensure_checkpoints()
    await engine.drain()

    history = (await http.get(f"/v1/tickets/{ticket['id']}/history",
                              headers=auth(admin))).json()["data"]
    assert [(e["type"], e["actor"]) for e in history if e["actor"]["kind"] == "rule"] == [
        ("TagsChanged", {"kind": "rule", "id": rule["id"]})]
    dry = await http.get(f"/v1/tickets/{ticket['id']}/rules", headers=auth(admin))
    assert dry.status_code == 200, dry.text
    shown = {r["rule_id"]: r for r in dry.json()["rules"]}
    assert shown[other["id"]]["matches"] is False
    assert shown[other["id"]]["reasons"] == ["conditions.0: priority is low does not hold"]
    # Now, with no event, "event is TicketOpened" does not hold.
    assert shown[rule["id"]]["reasons"] == [
        "conditions.0: event is TicketOpened does not hold"]
    [fired] = dry.json()["fired"]
    assert fired["rule_id"] == rule["id"] and fired["outcome"] == "fired"

    # Another tenant sees none of it.
    stranger = await make_tenant("Other")
    assert (await http.get(f"/v1/rules/{rule['id']}",
                           headers=auth(stranger.admin_key))).status_code == 404
    assert await _count(http, stranger.admin_key) == 0
    assert (await http.get(f"/v1/tickets/{ticket['id']}/rules",
                           headers=auth(stranger.admin_key))).status_code == 404
    assert (await http.get(f"/v1/tickets/{uuid.uuid4()}/rules",
                           headers=auth(admin))).status_code == 404
