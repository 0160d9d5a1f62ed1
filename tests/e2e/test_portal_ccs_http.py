"""Customer CCs and merged threads over HTTP: a contact copied on a ticket lists and
reads it and its public messages in the portal, and neither replies nor rates (403
``copied_only``); anyone else gets 404; taking the CC off revokes it on the next
request; a merged ticket's public messages are in its target's thread in the portal
and the widget, never its internal notes."""

from __future__ import annotations

from typing import Any

import httpx

from handlers.tenants import NewTenant
from tests.e2e.conftest import auth
from tests.e2e.test_portal import customer
from tests.support.customers import ORIGIN, portal_headers

MESSAGES = "/v1/portal/tickets/{}/messages"


async def _open(http: httpx.AsyncClient, h: dict[str, str], email: str) -> dict[str, Any]:
    """A ticket for ``email`` with a public reply and an internal note."""
    r = await http.post("/v1/tickets", headers=h, json={
        "subject": f"For {email}", "body": f"opening of {email}",
        "requester": {"email": email}})
    assert r.status_code == 201, r.text
    ticket: dict[str, Any] = r.json()
    for visibility in ("public", "internal"):
        m = await http.post(f"/v1/tickets/{ticket['id']}/messages", headers=h,
                            json={"body": f"{visibility} to {email}",
                                  "visibility": visibility})
        assert m.status_code == 201, m.text
    return ticket


async def _bodies(http: httpx.AsyncClient, path: str, headers: dict[str, str]) -> list[str]:
    r = await http.get(path, headers=headers)
    assert r.status_code == 200, r.text
    return [m["body"] for m in r.json()["data"]]


async def _listed(http: httpx.AsyncClient, headers: dict[str, str]) -> list[str]:
    r = await http.get("/v1/portal/tickets", headers=headers)
    assert r.status_code == 200, r.text
    return [t["id"] for t in r.json()["data"]]


async def test_a_cc_reads_the_ticket_in_the_portal_until_taken_off(
        http: httpx.AsyncClient, tenant: NewTenant) -> None:
    h = auth(tenant.admin_key)
    ann = await portal_headers(http, h, "ann@example.com")
    ticket = await _open(http, h, "ann@example.com")
    tid = ticket["id"]
    carl = await portal_headers(http, h, "carl@example.com")
    dora = await portal_headers(http, h, "dora@example.com")
    assert (await http.get(f"/v1/portal/tickets/{tid}", headers=carl)).status_code == 404

    r = await http.post(f"/v1/tickets/{tid}/ccs", headers=h,
                        json={"add": [{"email": "Carl@example.com"}]})
    assert r.status_code == 200, r.text

    assert await _listed(http, carl) == [tid]
    got = await http.get(f"/v1/portal/tickets/{tid}", headers=carl)
    assert got.status_code == 200, got.text
    assert got.json()["ccs"] == [{"email": "Carl@example.com", "name": None}]
    # The CC's read says they are only copied (the portal offers them no reply box);
    # the requester's does not.
    assert got.json()["copied"] is True
    own = await http.get(f"/v1/portal/tickets/{tid}", headers=ann)
    assert own.status_code == 200 and "copied" not in own.json(), own.text
    assert await _bodies(http, MESSAGES.format(tid), carl) == [
        "opening of ann@example.com", "public to ann@example.com"]
    for path, body in ((MESSAGES.format(tid), {"body": "me too"}),
                       (f"/v1/portal/tickets/{tid}/rating", {"rating": "good"})):
        refused = await http.post(path, headers=carl, json=body)
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "copied_only"
        assert refused.headers["content-type"].startswith("application/problem+json")

    # Neither the requester nor a CC: 404 everywhere, nothing listed.
    for path in (f"/v1/portal/tickets/{tid}", MESSAGES.format(tid)):
        assert (await http.get(path, headers=dora)).status_code == 404, path
    assert (await http.post(MESSAGES.format(tid), headers=dora,
                            json={"body": "hi"})).status_code == 404
    assert await _listed(http, dora) == []

    r = await http.post(f"/v1/tickets/{tid}/ccs", headers=h,
                        json={"remove": ["carl@example.com"]})
    assert r.status_code == 200, r.text
    for path in (f"/v1/portal/tickets/{tid}", MESSAGES.format(tid)):
        assert (await http.get(path, headers=carl)).status_code == 404, path
    assert await _listed(http, carl) == []


async def test_a_merged_tickets_public_messages_are_in_the_targets_customer_thread(
        http: httpx.AsyncClient, tenant: NewTenant) -> None:
    h = auth(tenant.admin_key)
    # The target is opened in the widget, so a widget session holds it.
    settings = (await http.get("/v1/settings", headers=h)).json()
    await http.put("/v1/settings", headers=h, json={**settings, "widget_origins": [ORIGIN]})
    opened = await http.post(f"/v1/widget/{tenant.tenant_id}/sessions",
                             headers={"Origin": ORIGIN}, json={"email": "ann@example.com"})
    assert opened.status_code == 201, opened.text
    visitor = {"Origin": ORIGIN, "Authorization": f"Bearer {opened.json()['access_token']}"}
    r = await http.post(f"/v1/widget/{tenant.tenant_id}/tickets", headers=visitor,
                        json={"subject": "Order", "body": "opening of the target"})
    assert r.status_code == 201, r.text
    target = r.json()["id"]
    source = await _open(http, h, "bob@example.com")
    # A file on the source's public reply: once merged, its readers are the target's.
    up = await http.post("/v1/uploads", params={"name": "receipt.txt"}, content=b"paid",
                         headers=h | {"Content-Type": "text/plain"})
    assert up.status_code == 201, up.text
    filed = await http.post(f"/v1/tickets/{source['id']}/messages", headers=h, json={
        "body": "the receipt", "attachments": [up.json()["id"]]})
    assert filed.status_code == 201, filed.text
    merged = await http.post(f"/v1/tickets/{source['id']}/merge", headers=h,
                             json={"into": target})
    assert merged.status_code == 200, merged.text

    thread = ["opening of the target", "opening of bob@example.com",
              "public to bob@example.com", "the receipt"]
    ann = await customer(http, tenant, (await http.get(f"/v1/tickets/{target}",
                                                        headers=h)).json())
    file = f"/v1/portal/attachments/{up.json()['id']}"
    got = await http.get(file, headers=ann)
    assert (got.status_code, got.content) == (200, b"paid"), got.text
    got = await http.get(f"/v1/widget/{tenant.tenant_id}/attachments/{up.json()['id']}",
                         headers=visitor)
    assert (got.status_code, got.content) == (200, b"paid"), got.text
    assert await _bodies(http, MESSAGES.format(target), ann) == thread
    assert await _bodies(http, f"/v1/widget/{tenant.tenant_id}/tickets/{target}/messages",
                         visitor) == thread
    # Paged, the same thread; the merged ticket itself stays out of the list.
    first = await http.get(MESSAGES.format(target), headers=ann, params={"limit": 2})
    rest = await http.get(MESSAGES.format(target), headers=ann,
                          params={"limit": 2, "cursor": first.json()["next_cursor"]})
    assert [m["body"] for m in first.json()["data"] + rest.json()["data"]] == thread
    assert await _listed(http, ann) == [target]
    assert (await http.get(f"/v1/portal/tickets/{source['id']}", headers=ann)
            ).status_code == 404
    # The staff's thread is the same messages, with the internal note.
    staff = await _bodies(http, f"/v1/tickets/{target}/messages", h)
    assert [b for b in staff if not b.startswith("internal")] == thread
    assert "internal to bob@example.com" in staff


async def test_a_contact_merged_into_another_is_copied_as_the_survivor(
        http: httpx.AsyncClient, tenant: NewTenant) -> None:
    h = auth(tenant.admin_key)
    dave = await portal_headers(http, h, "dave@example.com")
    ann_s = await _open(http, h, "ann@example.com")
    daves = await _open(http, h, "dave@example.com")
    for ticket in (ann_s, daves):
        r = await http.post(f"/v1/tickets/{ticket['id']}/ccs", headers=h,
                            json={"add": [{"email": "carl@example.com"}]})
        assert r.status_code == 200, r.text
    carl = (await http.get(f"/v1/tickets/{ann_s['id']}", headers=h)).json()["ccs"][0]
    survivor = (await http.get(f"/v1/tickets/{daves['id']}", headers=h)
                ).json()["requester"]["contact_id"]
    merged = await http.post(f"/v1/contacts/{carl['contact_id']}/merge", headers=h,
                             json={"into": survivor})
    assert merged.status_code == 200, merged.text

    # Ann's ticket copies Dave in Carl's place, and Dave reads it in the portal.
    after = (await http.get(f"/v1/tickets/{ann_s['id']}", headers=h)).json()
    assert [(c["email"], c["contact_id"]) for c in after["ccs"]] == [
        ("dave@example.com", survivor)]
    assert sorted(await _listed(http, dave)) == sorted([ann_s["id"], daves["id"]])
    read = await http.get(f"/v1/portal/tickets/{ann_s['id']}", headers=dave)
    assert read.status_code == 200 and read.json()["copied"] is True, read.text
    # Dave's own ticket does not copy its requester: Carl's entry only goes.
    own = (await http.get(f"/v1/tickets/{daves['id']}", headers=h)).json()
    assert own.get("ccs", []) == []
    assert "copied" not in (await http.get(f"/v1/portal/tickets/{daves['id']}",
                                           headers=dave)).json()
