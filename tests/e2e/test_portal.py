"""The customer portal over HTTP: a password link spent once, sign-in with the staff
rules, and a contact who sees only their own tickets and their public messages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from api.app import create_app
from domain.clock import ManualClock
from handlers.tenants import NewTenant
from tests.e2e.conftest import app_settings, asgi_client, auth
from tests.support.pg import TestDatabase as Db

PASSWORD = "correct horse battery"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


@pytest.fixture
def app(db: Db, clock: ManualClock) -> FastAPI:
    return create_app(app_settings(db), clock=clock)


async def open_for(http: httpx.AsyncClient, tenant: NewTenant, email: str) -> dict[str, Any]:
    """A ticket opened by staff for ``email``, with a public reply and an internal note."""
    r = await http.post("/v1/tickets", headers=auth(tenant.admin_key), json={
        "subject": f"For {email}", "body": "It broke", "requester": {"email": email}})
    assert r.status_code == 201, r.text
    ticket: dict[str, Any] = r.json()
    for visibility in ("public", "internal"):
        m = await http.post(f"/v1/tickets/{ticket['id']}/messages",
                            headers=auth(tenant.admin_key),
                            json={"body": f"{visibility} words", "visibility": visibility})
        assert m.status_code == 201, m.text
    return ticket


async def link(http: httpx.AsyncClient, tenant: NewTenant, contact_id: str) -> str:
    r = await http.post(f"/v1/contacts/{contact_id}/portal-link",
                        headers=auth(tenant.admin_key))
    assert r.status_code == 201, r.text
    token: str = r.json()["token"]
    return token


async def customer(http: httpx.AsyncClient, tenant: NewTenant, ticket: dict[str, Any]
                   ) -> dict[str, str]:
    """The bearer header of the ticket's requester, signed in to the portal."""
    contact = ticket["requester"]["contact_id"]
    r = await http.post("/v1/portal/auth/password",
                        json={"token": await link(http, tenant, contact), "password": PASSWORD})
    assert r.status_code == 200, r.text
    r = await http.post("/v1/portal/auth/sign-in", json={
        "tenant": str(tenant.tenant_id), "email": ticket["requester"]["email"],
        "password": PASSWORD})
    assert r.status_code == 200, r.text
    assert r.json()["contact_id"] == contact
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


async def test_a_contact_sees_only_own_tickets_and_public_messages(http, tenant) -> None:
    mine = await open_for(http, tenant, "ann@example.com")
    theirs = await open_for(http, tenant, "bob@example.com")
    ann = await customer(http, tenant, mine)

    listed = await http.get("/v1/portal/tickets", headers=ann)
    assert listed.status_code == 200, listed.text
    assert [t["id"] for t in listed.json()["data"]] == [mine["id"]]
    assert set(listed.json()["data"][0]) == {"id", "subject", "state", "created_at",
                                             "updated_at"}
    got = await http.get(f"/v1/portal/tickets/{mine['id']}", headers=ann)
    assert got.status_code == 200 and got.json()["id"] == mine["id"]

    messages = await http.get(f"/v1/portal/tickets/{mine['id']}/messages", headers=ann)
    assert messages.status_code == 200, messages.text
    # One instant on the test's clock: the order within it is by id.
    assert sorted(m["body"] for m in messages.json()["data"]) == ["It broke", "public words"]

    # Another contact's ticket is 404 even by id, for every operation.
    for path in (f"/v1/portal/tickets/{theirs['id']}",
                 f"/v1/portal/tickets/{theirs['id']}/messages"):
        r = await http.get(path, headers=ann)
        assert r.status_code == 404, (path, r.text)
        assert r.headers["content-type"] == "application/problem+json"
    r = await http.post(f"/v1/portal/tickets/{theirs['id']}/messages", headers=ann,
                        json={"body": "let me in"})
    assert r.status_code == 404, r.text

    # A staff route refuses a portal token, and the portal refuses staff keys.
    assert (await http.get("/v1/tickets", headers=ann)).status_code == 401
    assert (await http.get("/v1/portal/tickets",
                           headers=auth(tenant.admin_key))).status_code == 401


async def test_a_contact_opens_and_follows_a_ticket_as_the_customer(http, tenant,
                                                                    clock) -> None:
    first = await open_for(http, tenant, "ann@example.com")
    ann = await customer(http, tenant, first)
    clock.advance(timedelta(seconds=1))  # newest first: the second ticket is newer
    r = await http.post("/v1/portal/tickets", headers={**ann, "Idempotency-Key": "k1"},
                        json={"subject": "Another thing", "body": "Please help"})
    assert r.status_code == 201, r.text
    opened = r.json()
    assert r.headers["location"] == f"/v1/portal/tickets/{opened['id']}"
    again = await http.post("/v1/portal/tickets", headers={**ann, "Idempotency-Key": "k1"},
                            json={"subject": "Another thing", "body": "Please help"})
    assert again.status_code == 201 and again.json()["id"] == opened["id"]

    reply = await http.post(f"/v1/portal/tickets/{opened['id']}/messages", headers=ann,
                            json={"body": "More detail"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["message"]["author_kind"] == "customer"

    # Staff see the ticket for the contact, its events stamped as the customer.
    staff = await http.get(f"/v1/tickets/{opened['id']}", headers=auth(tenant.admin_key))
    assert staff.json()["requester"]["contact_id"] == first["requester"]["contact_id"]
    assert staff.json()["source"] == "portal"
    events = await http.get("/v1/events", headers=auth(tenant.admin_key),
                            params={"stream_id": opened["id"]})
    assert events.status_code == 200, events.text
    contact = first["requester"]["contact_id"]
    stamped = {(e["actor"]["kind"], e["actor"]["id"]) for e in events.json()["data"]}
    assert stamped == {("customer", contact)}, stamped

    page = await http.get("/v1/portal/tickets", headers=ann, params={"limit": 1})
    assert [t["id"] for t in page.json()["data"]] == [opened["id"]]
    rest = await http.get("/v1/portal/tickets", headers=ann,
                          params={"limit": 1, "cursor": page.json()["next_cursor"]})
    assert [t["id"] for t in rest.json()["data"]] == [first["id"]]
    assert rest.json()["next_cursor"] is None

    out = await http.post("/v1/portal/auth/sign-out", headers=ann)
    assert out.status_code == 204
    assert (await http.get("/v1/portal/tickets", headers=ann)).status_code == 401


async def test_a_password_link_is_spent_once_and_expires(http, tenant, clock) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    contact = ticket["requester"]["contact_id"]
    token = await link(http, tenant, contact)
    assert token.startswith("hdp_")
    body = {"token": token, "password": PASSWORD}
    assert (await http.post("/v1/portal/auth/password", json=body)).status_code == 200
    spent = await http.post("/v1/portal/auth/password", json=body)
    assert spent.status_code == 410 and spent.json()["code"] == "link_gone", spent.text

    late = await link(http, tenant, contact)
    clock.advance(timedelta(hours=73))
    expired = await http.post("/v1/portal/auth/password", json={"token": late,
                                                                "password": PASSWORD})
    assert expired.status_code == 410, expired.text
    unknown = await http.post("/v1/portal/auth/password",
                              json={"token": "hdp_" + "A" * 64, "password": PASSWORD})
    assert unknown.status_code == 404, unknown.text
    r = await http.post(f"/v1/contacts/{uuid.uuid4()}/portal-link",
                        headers=auth(tenant.admin_key))
    assert r.status_code == 404, r.text


async def test_every_sign_in_failure_is_the_same_401(http, tenant, make_tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    await customer(http, tenant, ticket)
    other = await make_tenant("Other")
    answers = []
    for tenant_id, email, password in (
            (tenant.tenant_id, "ann@example.com", "wrong password!"),
            (tenant.tenant_id, "nobody@example.com", PASSWORD),
            (tenant.tenant_id, "bob@example.com", PASSWORD),
            (other.tenant_id, "ann@example.com", PASSWORD),
            (uuid.uuid4(), "ann@example.com", PASSWORD)):
        r = await http.post("/v1/portal/auth/sign-in", json={
            "tenant": str(tenant_id), "email": email, "password": password})
        answers.append((r.status_code, r.json()["code"], r.json()["detail"]))
    assert set(answers) == {(401, "sign_in_failed", "the e-mail or the password is wrong")}


async def test_a_customer_reply_keeps_internal_notes_searchable_for_staff(http, tenant) -> None:
    # The reply re-indexes the ticket inside the customer's transaction, where row-level
    # security hides internal notes; the staff vector must still hold them afterwards.
    ticket = await open_for(http, tenant, "cy@example.com")
    note = await http.post(f"/v1/tickets/{ticket['id']}/messages",
                           headers=auth(tenant.admin_key),
                           json={"body": "zanzibarite escalation", "visibility": "internal"})
    assert note.status_code == 201, note.text
    cy = await customer(http, tenant, ticket)
    reply = await http.post(f"/v1/portal/tickets/{ticket['id']}/messages", headers=cy,
                            json={"body": "Any news on quokkaberry?"})
    assert reply.status_code == 201, reply.text
    for word in ("zanzibarite", "quokkaberry"):
        found = await http.get("/v1/search", headers=auth(tenant.admin_key),
                               params={"q": word, "type": "ticket"})
        assert found.status_code == 200, found.text
        assert [r["id"] for r in found.json()["data"]] == [ticket["id"]], (word, found.json())


COOKIE = "hd_portal_refresh"


async def portal_sign_in(http: httpx.AsyncClient, tenant: NewTenant, email: str
                         ) -> httpx.Response:
    r = await http.post("/v1/portal/auth/sign-in", json={
        "tenant": str(tenant.tenant_id), "email": email, "password": PASSWORD})
    assert r.status_code == 200, r.text
    return r


async def portal_refresh(http: httpx.AsyncClient, token: str) -> httpx.Response:
    """Present exactly ``token`` as the portal refresh cookie."""
    http.cookies.clear()
    return await http.post("/v1/portal/auth/refresh", headers={"Cookie": f"{COOKIE}={token}"})


def portal_bearer(response: httpx.Response) -> dict[str, str]:
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def auditor(http: httpx.AsyncClient, tenant: NewTenant) -> dict[str, str]:
    r = await http.post("/v1/api-keys", json={"name": "audit", "role": "auditor"},
                        headers=auth(tenant.admin_key))
    assert r.status_code == 201, r.text
    return auth(r.json()["secret"])


async def test_portal_refresh_rotation_and_replay_revokes_the_session(http, tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    contact = ticket["requester"]["contact_id"]
    await customer(http, tenant, ticket)
    signed = await portal_sign_in(http, tenant, "ann@example.com")
    cookie = signed.headers["set-cookie"].lower()
    assert "httponly" in cookie and "path=/v1/portal/auth" in cookie
    assert "samesite=strict" in cookie
    assert signed.headers["cache-control"] == "no-store"
    first = signed.cookies[COOKIE]
    assert first.startswith("hdq_") and first not in signed.text
    assert signed.json()["refresh_expires_at"] <= signed.json()["session_expires_at"]

    # Each refresh hands out a new portal token and a new cookie; the spent one is dead.
    second = await portal_refresh(http, first)
    assert second.status_code == 200, second.text
    assert second.json()["contact_id"] == contact
    second_token = second.cookies[COOKIE]
    assert second_token != first
    third = await portal_refresh(http, second_token)
    assert third.status_code == 200, third.text
    third_token = third.cookies[COOKIE]
    assert (await http.get("/v1/portal/tickets", headers=portal_bearer(third))).status_code == 200

    # A token rotated before comes back: refused, and the whole session is revoked.
    replay = await portal_refresh(http, first)
    assert replay.status_code == 401 and replay.json()["code"] == "invalid_refresh_token"
    assert "max-age=0" in replay.headers["set-cookie"].lower() or \
        f'{COOKIE}=""' in replay.headers["set-cookie"]
    assert (await portal_refresh(http, third_token)).status_code == 401
    stopped = await http.get("/v1/portal/tickets", headers=portal_bearer(third))
    assert stopped.status_code == 401 and stopped.json()["code"] == "invalid_access_token"

    # The kinds do not mix: a portal cookie is no staff refresh token and the other way.
    fresh = await portal_sign_in(http, tenant, "ann@example.com")
    http.cookies.clear()
    staff = await http.post("/v1/auth/refresh",
                            headers={"Cookie": f"hd_refresh={fresh.cookies[COOKIE]}"})
    assert staff.status_code == 401
    assert (await portal_refresh(http, "hdr_" + fresh.cookies[COOKIE][4:])).status_code == 401
    assert (await portal_refresh(http, fresh.cookies[COOKIE])).status_code == 200

    # Auditors see every step as an event with its actor, and no secret in any.
    events = (await http.get("/v1/events", headers=await auditor(http, tenant), params={
        "type": "PortalLinkIssued,PortalPasswordSet,PortalSignedIn,PortalSessionRevoked"}))
    assert events.status_code == 200, events.text
    seen = [(e["type"], e["actor"]["kind"], e["data"]["contact_id"])
            for e in events.json()["data"]]
    admin_kind = events.json()["data"][0]["actor"]["kind"]
    assert admin_kind != "customer"
    assert seen == [("PortalLinkIssued", admin_kind, contact),
                    ("PortalPasswordSet", "customer", contact),
                    ("PortalSignedIn", "customer", contact),
                    ("PortalSignedIn", "customer", contact),
                    ("PortalSessionRevoked", "customer", contact),
                    ("PortalSignedIn", "customer", contact)]
    assert {e["actor"]["id"] for e in events.json()["data"][1:]} == {contact}
    assert events.json()["data"][4]["data"]["reason"] == "replay"
    assert events.json()["data"][4]["data"]["session_id"] == \
        events.json()["data"][3]["data"]["session_id"]
    text = events.text
    for secret in (first, second_token, third_token, "argon2", "hdp_", "ann@example.com",
                   PASSWORD):
        assert secret not in text, secret


async def test_portal_sign_out_by_cookie_ends_the_session(http, tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    contact = ticket["requester"]["contact_id"]
    await customer(http, tenant, ticket)
    signed = await portal_sign_in(http, tenant, "ann@example.com")
    token = signed.cookies[COOKIE]
    http.cookies.clear()
    out = await http.post("/v1/portal/auth/sign-out", headers={"Cookie": f"{COOKIE}={token}"})
    assert out.status_code == 204
    assert "max-age=0" in out.headers["set-cookie"].lower() or \
        f'{COOKIE}=""' in out.headers["set-cookie"]
    assert (await http.get("/v1/portal/tickets", headers=portal_bearer(signed))).status_code == 401
    assert (await portal_refresh(http, token)).status_code == 401
    # Nothing to end, or ended already: still 204, and no second event.
    assert (await http.post("/v1/portal/auth/sign-out")).status_code == 204
    assert (await http.post("/v1/portal/auth/sign-out",
                            headers={"Cookie": f"{COOKIE}={token}"})).status_code == 204
    events = (await http.get("/v1/events", headers=auth(tenant.admin_key),
                             params={"type": "PortalSignedOut"})).json()["data"]
    assert [(e["actor"]["kind"], e["actor"]["id"], e["data"]["session_id"]) for e in events] \
        == [("customer", contact, events[0]["data"]["session_id"])]


async def test_the_portal_refresh_cookie_slides_up_to_the_session_cap(db, tenant,
                                                                      clock) -> None:
    app = create_app(app_settings(db, refresh_token_days=1, session_max_days=2), clock=clock)
    async with asgi_client(app) as http:
        ticket = await open_for(http, tenant, "ann@example.com")
        await customer(http, tenant, ticket)
        signed = await portal_sign_in(http, tenant, "ann@example.com")
        clock.advance(timedelta(minutes=16))
        late = await http.get("/v1/portal/tickets", headers=portal_bearer(signed))
        assert late.status_code == 401
        clock.advance(timedelta(hours=20))
        again = await portal_refresh(http, signed.cookies[COOKIE])
        assert again.status_code == 200, again.text
        fresh = await http.get("/v1/portal/tickets", headers=portal_bearer(again))
        assert fresh.status_code == 200
        clock.advance(timedelta(hours=20))
        again = await portal_refresh(http, again.cookies[COOKIE])
        assert again.status_code == 200, again.text
        clock.advance(timedelta(hours=9))  # 49 hours after signing in: past the cap
        assert (await portal_refresh(http, again.cookies[COOKIE])).status_code == 401
        other = await portal_sign_in(http, tenant, "ann@example.com")
        clock.advance(timedelta(hours=25))  # unused for longer than a day
        assert (await portal_refresh(http, other.cookies[COOKIE])).status_code == 401


async def test_merging_a_contact_revokes_its_portal_sessions(http, tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    ann = ticket["requester"]["contact_id"]
    await customer(http, tenant, ticket)
    signed = await portal_sign_in(http, tenant, "ann@example.com")
    r = await http.post("/v1/contacts", headers=auth(tenant.admin_key),
                        json={"email": "bea@example.com"})
    assert r.status_code == 201, r.text
    bea = r.json()["id"]
    merged = await http.post(f"/v1/contacts/{ann}/merge", headers=auth(tenant.admin_key),
                             json={"into": bea})
    assert merged.status_code == 200, merged.text
    stopped = await http.get("/v1/portal/tickets", headers=portal_bearer(signed))
    assert stopped.status_code == 401
    assert (await portal_refresh(http, signed.cookies[COOKIE])).status_code == 401
    events = (await http.get("/v1/events", headers=auth(tenant.admin_key),
                             params={"type": "ContactMerged,PortalSessionRevoked"})).json()
    # Both of Ann's sessions (the helper's sign-in and this one), by the merge's actor.
    by = events["data"][0]["actor"]
    assert [(e["type"], e["actor"]) for e in events["data"]] == [
        ("ContactMerged", by), ("PortalSessionRevoked", by), ("PortalSessionRevoked", by)]
    assert {(e["data"]["contact_id"], e["data"]["reason"]) for e in events["data"][1:]} == {
        (ann, "merged")}
    assert len({e["data"]["session_id"] for e in events["data"][1:]}) == 2


async def test_a_contact_fills_in_the_fields_open_to_customers(http, tenant) -> None:
    admin = auth(tenant.admin_key)
    ann = await customer(http, tenant, await open_for(http, tenant, "ann@example.com"))
    for body in ({"key": "product", "title": "Product", "type": "dropdown", "intake": True,
                  "required_on": "open", "options": [{"value": "app", "title": "App"},
                                                      {"value": "web", "title": "Web"}]},
                 {"key": "since", "title": "Since", "type": "date", "intake": True},
                 {"key": "internal_score", "title": "Score", "type": "number"}):
        r = await http.post("/v1/ticket-fields", headers=admin, json=body)
        assert r.status_code == 201, r.text

    listed = await http.get("/v1/portal/ticket-fields", headers=ann)
    assert listed.status_code == 200, listed.text
    assert listed.json()["data"] == [
        {"key": "product", "title": "Product", "type": "dropdown", "required": True,
         "read_only": False,
         "options": [{"value": "app", "title": "App"}, {"value": "web", "title": "Web"}]},
        {"key": "since", "title": "Since", "type": "date", "required": False,
         "read_only": False, "options": []}]

    new = {"subject": "Crash", "body": "On start"}
    for fields, where in (({"since": "2026-01-02"}, "fields.product"),
                          ({"product": "tv"}, "fields.product"),
                          ({"product": "app", "since": "yesterday"}, "fields.since"),
                          ({"product": "app", "internal_score": 3}, "fields.internal_score")):
        r = await http.post("/v1/portal/tickets", headers=ann, json=new | {"fields": fields})
        assert r.status_code == 422, (fields, r.text)
        assert [e["loc"] for e in r.json()["errors"]] == [["body", *where.split(".")]]
    assert len((await http.get("/v1/portal/tickets", headers=ann)).json()["data"]) == 1

    r = await http.post("/v1/portal/tickets", headers=ann,
                        json=new | {"fields": {"product": "app", "since": "2026-01-02"}})
    assert r.status_code == 201, r.text
    assert r.json()["fields"] == {"product": "app", "since": "2026-01-02"}
    ticket = r.json()["id"]
    # Staff set a staff-only value: the customer's view of the ticket never shows it.
    r = await http.post(f"/v1/tickets/{ticket}/fields", headers=admin,
                         json={"fields": {"internal_score": 7}})
    assert r.status_code == 200, r.text
    assert r.json()["fields"]["internal_score"] == 7
    got = await http.get(f"/v1/portal/tickets/{ticket}", headers=ann)
    assert got.json()["fields"] == {"product": "app", "since": "2026-01-02"}


async def test_a_field_shown_read_only_is_seen_by_customers_and_set_by_agents(
        http, tenant, owner) -> None:
    admin = auth(tenant.admin_key)
    ann = await customer(http, tenant, await open_for(http, tenant, "ann@example.com"))
    # Read-only needs the field open to customers: refused alone, and on closing it.
    r = await http.post("/v1/ticket-fields", headers=admin, json={
        "key": "dispatch", "title": "Dispatched on", "type": "date",
        "customer_read_only": True})
    assert r.status_code == 422, r.text
    assert [e["loc"] for e in r.json()["errors"]] == [["body", "customer_read_only"]]
    r = await http.post("/v1/ticket-fields", headers=admin, json={
        "key": "dispatch", "title": "Dispatched on", "type": "date", "intake": True,
        "customer_read_only": True, "required_on": "open"})
    assert r.status_code == 201, r.text
    assert (r.json()["intake"], r.json()["customer_read_only"]) == (True, True)
    r = await http.patch("/v1/ticket-fields/dispatch", headers=admin, json={"intake": False})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == [
        "body", "customer_read_only"], r.text

    listed = await http.get("/v1/portal/ticket-fields", headers=ann)
    # Listed read-only, and not required of customers: agents fill it in.
    assert listed.json()["data"] == [
        {"key": "dispatch", "title": "Dispatched on", "type": "date", "required": False,
         "read_only": True, "options": []}]
    new = {"subject": "Parcel", "body": "Where is it?"}
    r = await http.post("/v1/portal/tickets", headers=ann,
                        json=new | {"fields": {"dispatch": "2026-12-01"}})
    assert r.status_code == 422, r.text
    assert [e["loc"] for e in r.json()["errors"]] == [["body", "fields", "dispatch"]]
    assert "dispatch" in r.json()["errors"][0]["msg"]
    r = await http.post("/v1/portal/tickets", headers=ann, json=new)
    assert r.status_code == 201, r.text
    ticket = r.json()["id"]

    # An agent sets it; the customer sees it and still cannot change it.
    r = await http.post(f"/v1/tickets/{ticket}/fields", headers=admin,
                        json={"fields": {"dispatch": "2026-12-01"}})
    assert r.status_code == 200, r.text
    got = await http.get(f"/v1/portal/tickets/{ticket}", headers=ann)
    assert got.json()["fields"] == {"dispatch": "2026-12-01"}
    # Nor may an intake key writing for the customer.
    intake = await owner.key(tenant.tenant_id, "intake")
    r = await http.post(f"/v1/tickets/{ticket}/fields", headers=auth(intake),
                        json={"fields": {"dispatch": "2026-12-24"}})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "fields", "dispatch"]
