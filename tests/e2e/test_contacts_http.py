"""Contacts and organizations over HTTP: tickets resolve their requester to a contact,
duplicates and unknown references are refused, merges move tickets, lists filter,
roles hold, and another tenant sees none of it."""

from __future__ import annotations

import asyncio
import uuid

from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, auth


async def _open(http, key, email="ann@example.com", **requester):  # type: ignore[no-untyped-def]
    body = NEW_TICKET | {"requester": {"email": email, **requester}}
    r = await http.post("/v1/tickets", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    return r.json()


async def _count(store, tenant_id, table):  # type: ignore[no-untyped-def]
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        return await s.conn.fetchval(f"SELECT count(*) FROM {table}")


async def test_opening_a_ticket_creates_or_links_its_contact(http, tenant, owner, store):
    admin = tenant.admin_key
    intake = await owner.key(tenant.tenant_id, "intake")
    first = await _open(http, intake, "Ann@Example.com", name="Ann")
    contact_id = first["requester"]["contact_id"]
    assert first["requester"] == {"contact_id": contact_id, "email": "Ann@Example.com",
                                  "name": "Ann"}
    second = await _open(http, admin, "ann@example.COM")
    assert second["requester"]["contact_id"] == contact_id
    assert second["requester"]["name"] == "Ann"  # the contact's, as none was given
    contact = (await http.get(f"/v1/contacts/{contact_id}", headers=auth(admin))).json()
    assert contact["email"] == "Ann@Example.com" and contact["version"] == 1

    by_id = await http.post("/v1/tickets", headers=auth(admin),
                            json=NEW_TICKET | {"requester": {"contact_id": contact_id}})
    assert by_id.status_code == 201
    assert by_id.json()["requester"]["contact_id"] == contact_id
    tickets = (await http.get(f"/v1/contacts/{contact_id}/tickets", headers=auth(admin))).json()
    assert [t["id"] for t in tickets["data"]] == [by_id.json()["id"], second["id"], first["id"]]
    assert await _count(store, tenant.tenant_id, "contacts") == 1

    unknown = uuid.uuid4()
    r = await http.post("/v1/tickets", headers=auth(admin),
                        json=NEW_TICKET | {"requester": {"contact_id": str(unknown)}})
    assert r.status_code == 422 and r.json()["code"] == "unknown_contact"
    assert str(unknown) in r.json()["detail"]
    both = await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "requester": {"contact_id": contact_id, "email": "x@example.com"}})
    assert both.status_code == 422


async def test_twenty_concurrent_openings_for_one_new_email_create_one_contact(
        http, tenant, store):
    email = f"{uuid.uuid4().hex[:8]}@new.example"
    responses = await asyncio.gather(*(
        http.post("/v1/tickets", json=NEW_TICKET | {"requester": {"email": email}},
                  headers=auth(tenant.admin_key, **{"Idempotency-Key": f"open-{i}"}))
        for i in range(20)))
    assert [r.status_code for r in responses] == [201] * 20, [r.text for r in responses]
    contacts = {r.json()["requester"]["contact_id"] for r in responses}
    assert len(contacts) == 1 and None not in contacts
    assert await _count(store, tenant.tenant_id, "contacts") == 1
    assert await _count(store, tenant.tenant_id, "tickets") == 20
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        created = await s.conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'ContactCreated'")
    assert created == 1


async def test_creating_and_changing_contacts(http, tenant):
    h = auth(tenant.admin_key)
    made = await http.post("/v1/contacts", headers=h, json={
        "email": "bo@example.com", "name": "Bo", "external_id": "crm-1", "tags": ["VIP"]})
    assert made.status_code == 201, made.text
    bo = made.json()
    assert bo["tags"] == ["vip"] and made.headers["location"] == f"/v1/contacts/{bo['id']}"

    dup = await http.post("/v1/contacts", headers=h, json={"email": "BO@example.com"})
    assert dup.status_code == 409 and dup.json()["code"] == "contact_exists"
    assert dup.json()["contact_id"] == bo["id"]
    ext = await http.post("/v1/contacts", headers=h,
                          json={"email": "cy@example.com", "external_id": "crm-1"})
    assert ext.status_code == 409 and ext.json()["contact_id"] == bo["id"]
    org = str(uuid.uuid4())
    bad = await http.post("/v1/contacts", headers=h,
                          json={"email": "cy@example.com", "organization_id": org})
    assert bad.status_code == 422 and bad.json()["code"] == "unknown_organization"
    assert org in bad.json()["detail"]

    stale = await http.patch(f"/v1/contacts/{bo['id']}", headers=h | {"If-Match": '"7"'},
                             json={"phone": "+44 1"})
    assert stale.status_code == 412
    changed = await http.patch(f"/v1/contacts/{bo['id']}", headers=h | {"If-Match": '"1"'},
                               json={"phone": "+44 1", "external_id": None})
    assert changed.status_code == 200, changed.text
    assert changed.json()["phone"] == "+44 1" and changed.json()["external_id"] is None
    assert changed.headers["etag"] == '"2"'
    listed = (await http.get("/v1/contacts?tag=vip", headers=h)).json()["data"]
    assert [c["id"] for c in listed] == [bo["id"]]
    assert (await http.get("/v1/contacts?email=BO@EXAMPLE.COM", headers=h)).json()["data"]


async def test_organizations_take_new_contacts_and_move_old_ones_only_when_asked(
        http, tenant):
    h = auth(tenant.admin_key)
    old = await _open(http, tenant.admin_key, "dee@acme.test")
    made = await http.post("/v1/organizations", headers=h,
                           json={"name": "Acme", "domains": ["ACME.test"]})
    assert made.status_code == 201, made.text
    acme = made.json()
    assert acme["domains"] == ["acme.test"] and acme["contacts_moved"] == 0
    again = await http.post("/v1/organizations", headers=h, json={"name": "acme"})
    assert again.status_code == 409 and again.json()["organization_id"] == acme["id"]
    taken = await http.post("/v1/organizations", headers=h,
                            json={"name": "Other", "domains": ["acme.test"]})
    assert taken.status_code == 409 and taken.json()["code"] == "domain_taken"

    new = await _open(http, tenant.admin_key, "eve@acme.test")
    eve = (await http.get(f"/v1/contacts/{new['requester']['contact_id']}", headers=h)).json()
    assert eve["organization_id"] == acme["id"]
    dee_id = old["requester"]["contact_id"]
    dee = (await http.get(f"/v1/contacts/{dee_id}", headers=h)).json()
    assert dee["organization_id"] is None  # created before: not moved by the creation

    listed = (await http.get(f"/v1/tickets?organization_id={acme['id']}", headers=h)).json()
    assert [t["id"] for t in listed["data"]] == [new["id"]]
    none = (await http.get("/v1/tickets?organization_id=none", headers=h)).json()
    assert [t["id"] for t in none["data"]] == [old["id"]]

    renamed = await http.patch(f"/v1/organizations/{acme['id']}", headers=h,
                               json={"name": "Acme Ltd", "domains": ["acme.test", "acme.io"]})
    assert renamed.status_code == 200 and renamed.json()["contacts_moved"] == 0
    dee = (await http.get(f"/v1/contacts/{dee_id}", headers=h)).json()
    assert dee["organization_id"] is None
    moved = await http.patch(f"/v1/organizations/{acme['id']}",
                             headers=h | {"If-Match": '"2"'},
                             json={"domains": ["acme.test"], "move_contacts": True})
    assert moved.status_code == 200, moved.text
    assert moved.json()["contacts_moved"] == 1 and moved.json()["version"] == 3
    dee = (await http.get(f"/v1/contacts/{dee_id}", headers=h)).json()
    assert dee["organization_id"] == acme["id"] and dee["version"] == 2
    org_tickets = (await http.get(f"/v1/organizations/{acme['id']}/tickets",
                                  headers=h)).json()["data"]
    assert {t["id"] for t in org_tickets} == {old["id"], new["id"]}
    members = (await http.get(f"/v1/contacts?organization_id={acme['id']}",
                              headers=h)).json()["data"]
    assert {c["id"] for c in members} == {dee_id, eve["id"]}

    # A contact moved by hand takes its tickets' organization along.
    out = await http.patch(f"/v1/contacts/{dee_id}", headers=h, json={"organization_id": None})
    assert out.status_code == 200 and out.json()["organization_id"] is None
    listed = (await http.get(f"/v1/tickets?organization_id={acme['id']}", headers=h)).json()
    assert [t["id"] for t in listed["data"]] == [new["id"]]
    loners = (await http.get("/v1/contacts?organization_id=none", headers=h)).json()["data"]
    assert [c["id"] for c in loners] == [dee_id]
    taken = await http.patch(f"/v1/contacts/{dee_id}", headers=h, json={"email": "EVE@acme.test"})
    assert taken.status_code == 409 and taken.json()["contact_id"] == eve["id"]


async def test_merging_moves_the_tickets_and_redirects(http, tenant, store):
    h = auth(tenant.admin_key)
    a = await _open(http, tenant.admin_key, "fay@example.com")
    b = await _open(http, tenant.admin_key, "fay.b@example.com")
    fay, fay_b = a["requester"]["contact_id"], b["requester"]["contact_id"]
    closed = await http.post(f"/v1/tickets/{a['id']}/state", headers=h,
                             json={"state": "solved"})
    assert closed.status_code == 200

    merged = await http.post(f"/v1/contacts/{fay}/merge", headers=h, json={"into": fay_b})
    assert merged.status_code == 200, merged.text
    assert merged.json()["tickets_moved"] == 1 and merged.json()["contact"]["id"] == fay_b
    moved = (await http.get(f"/v1/tickets/{a['id']}", headers=h)).json()
    assert moved["requester"] == {"contact_id": fay_b, "email": "fay.b@example.com",
                                  "name": None}
    redirect = await http.get(f"/v1/contacts/{fay}", headers=h, follow_redirects=False)
    assert redirect.status_code == 308 and redirect.headers["location"] == f"/v1/contacts/{fay_b}"
    tickets = await http.get(f"/v1/contacts/{fay}/tickets", headers=h, follow_redirects=False)
    assert tickets.status_code == 308
    survivor = (await http.get(f"/v1/tickets?requester_id={fay_b}", headers=h)).json()["data"]
    assert {t["id"] for t in survivor} == {a["id"], b["id"]}
    again = await _open(http, tenant.admin_key, "FAY@example.com")
    assert again["requester"]["contact_id"] == fay_b  # the old e-mail finds the survivor
    refused = await http.patch(f"/v1/contacts/{fay}", headers=h, json={"name": "F"})
    assert refused.status_code == 409 and refused.json()["code"] == "contact_merged"
    self_merge = await http.post(f"/v1/contacts/{fay_b}/merge", headers=h, json={"into": fay_b})
    assert self_merge.status_code == 422
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        types = [r["type"] for r in await s.conn.fetch(
            "SELECT type FROM events WHERE stream_id = $1 ORDER BY version", uuid.UUID(a["id"]))]
    assert types[-1] == "RequesterChanged"


async def test_roles(http, tenant, owner):
    t = tenant.tenant_id
    keys = {role: await owner.key(t, role) for role in ("intake", "analyst", "auditor")}
    keys["agent"] = await owner.key(t, "agent", await owner.agent(t))
    contact = {"email": "gil@example.com"}
    assert (await http.post("/v1/contacts", json=contact,
                            headers=auth(keys["intake"]))).status_code == 403
    assert (await http.post("/v1/contacts", json=contact,
                            headers=auth(keys["agent"]))).status_code == 201
    org = {"name": "Globex"}
    assert (await http.post("/v1/organizations", json=org,
                            headers=auth(keys["agent"]))).status_code == 403
    assert (await http.post("/v1/organizations", json=org,
                            headers=auth(tenant.admin_key))).status_code == 201
    for url in ("/v1/contacts", "/v1/organizations"):
        assert (await http.get(url, headers=auth(keys["auditor"]))).status_code == 200
        assert (await http.get(url, headers=auth(keys["analyst"]))).status_code == 403
        assert (await http.get(url, headers=auth(keys["intake"]))).status_code == 403


async def test_another_tenants_contacts_and_organizations_are_not_found(
        http, tenant, make_tenant):
    other = await make_tenant("Other")
    ha, hb = auth(tenant.admin_key), auth(other.admin_key)
    org = (await http.post("/v1/organizations", headers=ha,
                           json={"name": "Acme", "domains": ["acme.test"]})).json()
    ticket = await _open(http, tenant.admin_key, "hal@acme.test")
    contact = ticket["requester"]["contact_id"]
    b_contact = (await http.post("/v1/contacts", headers=hb,
                                 json={"email": "ida@example.com"})).json()

    for url in (f"/v1/contacts/{contact}", f"/v1/contacts/{contact}/tickets",
                f"/v1/organizations/{org['id']}", f"/v1/organizations/{org['id']}/tickets"):
        assert (await http.get(url, headers=hb)).status_code == 404, url
    assert (await http.patch(f"/v1/contacts/{contact}", headers=hb,
                             json={"name": "X"})).status_code == 404
    assert (await http.patch(f"/v1/organizations/{org['id']}", headers=hb,
                             json={"name": "X"})).status_code == 404
    assert (await http.post(f"/v1/contacts/{contact}/merge", headers=hb,
                            json={"into": b_contact["id"]})).status_code == 404
    into = await http.post(f"/v1/contacts/{b_contact['id']}/merge", headers=hb,
                           json={"into": contact})
    assert into.status_code == 422 and into.json()["code"] == "unknown_contact"
    for url in (f"/v1/tickets?requester_id={contact}", f"/v1/tickets?organization_id={org['id']}",
                f"/v1/contacts?organization_id={org['id']}"):
        r = await http.get(url, headers=hb)
        assert r.status_code == 404 and r.json()["code"] == "not_found", url
        assert (await http.get(url, headers=ha)).status_code == 200, url
    for url in ("/v1/contacts?email=hal@acme.test", "/v1/organizations?domain=acme.test"):
        r = await http.get(url, headers=hb)
        assert r.status_code == 200 and r.json()["data"] == [], url
    by_id = await http.post("/v1/tickets", headers=hb,
                            json=NEW_TICKET | {"requester": {"contact_id": contact}})
    assert by_id.status_code == 422
    foreign_org = await http.post("/v1/contacts", headers=hb,
                                  json={"email": "jo@example.com", "organization_id": org["id"]})
    assert foreign_org.status_code == 422
    # B's contact for the same domain joins no organization of A's.
    b_ticket = await _open(http, other.admin_key, "kim@acme.test")
    kim = (await http.get(f"/v1/contacts/{b_ticket['requester']['contact_id']}",
                          headers=hb)).json()
    assert kim["organization_id"] is None


async def test_history_and_as_of_of_contacts_and_organizations(http, tenant, owner,
                                                               make_tenant):
    h = auth(tenant.admin_key)
    auditor = auth(await owner.key(tenant.tenant_id, "auditor"))
    org = (await http.post("/v1/organizations", headers=h,
                           json={"name": "Acme", "domains": ["acme.test"]})).json()
    await http.patch(f"/v1/organizations/{org['id']}", headers=h, json={"name": "Acme Ltd"})
    ticket = await _open(http, tenant.admin_key, "lu@acme.test", name="Lu")
    lu = ticket["requester"]["contact_id"]
    await http.patch(f"/v1/contacts/{lu}", headers=h, json={"name": "Lu Chen"})

    history = await http.get(f"/v1/contacts/{lu}/history", headers=auditor)
    assert history.status_code == 200, history.text
    assert [e["type"] for e in history.json()["data"]] == ["ContactCreated", "ContactUpdated"]
    first = await http.get(f"/v1/contacts/{lu}/as-of?version=1", headers=auditor)
    assert first.status_code == 200 and first.headers["etag"] == '"1"'
    assert first.json()["name"] == "Lu" and first.json()["organization_id"] == org["id"]
    now = (await http.get(f"/v1/contacts/{lu}", headers=h)).json()
    recorded = history.json()["data"][-1]["recorded_at"]
    at_now = await http.get(f"/v1/contacts/{lu}/as-of", params={"at": recorded},
                            headers=auditor)
    assert at_now.json() == now

    org_history = (await http.get(f"/v1/organizations/{org['id']}/history",
                                  headers=auditor)).json()
    assert [e["type"] for e in org_history["data"]] == ["OrganizationCreated",
                                                        "OrganizationUpdated"]
    org_v1 = (await http.get(f"/v1/organizations/{org['id']}/as-of?version=1",
                             headers=auditor)).json()
    assert org_v1["name"] == "Acme" and org_v1["domains"] == ["acme.test"]

    # A ticket is not a contact, and another tenant has neither.
    assert (await http.get(f"/v1/contacts/{ticket['id']}/history",
                           headers=auditor)).status_code == 404
    assert (await http.get(f"/v1/organizations/{lu}/as-of?version=1",
                           headers=auditor)).status_code == 404
    other = auth((await make_tenant("Other")).admin_key)
    for url in (f"/v1/contacts/{lu}/history", f"/v1/contacts/{lu}/as-of?version=1",
                f"/v1/organizations/{org['id']}/history"):
        assert (await http.get(url, headers=other)).status_code == 404, url
    # The contact's events are in the tenant feed too.
    feed = (await http.get("/v1/events?type=ContactCreated,ContactUpdated",
                           headers=auditor)).json()
    assert {e["stream_id"] for e in feed["data"]} == {lu}


async def test_analytics_group_by_organization(http, tenant, owner, services):
    h = auth(tenant.admin_key)
    acme = (await http.post("/v1/organizations", headers=h,
                            json={"name": "Acme", "domains": ["acme.test"]})).json()
    for email in ("a@acme.test", "b@acme.test", "c@else.test"):
        await _open(http, tenant.admin_key, email)
    projector = Projector(services.store.pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    analyst = auth(await owner.key(tenant.tenant_id, "analyst"))
    r = await http.get("/v1/analytics/summary", headers=analyst,
                       params={"group_by": "organization"})
    assert r.status_code == 200, r.text
    # The analyst may not list organizations: the answer names them.
    groups = {g["key"]: (g["tickets"], g["name"]) for g in r.json()["groups"]}
    assert groups == {acme["id"]: (2, "Acme"), "none": (1, None)}
    assert (await http.get("/v1/organizations", headers=analyst)).status_code == 403
