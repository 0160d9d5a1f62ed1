"""The embeddable widget over HTTP: sessions from the tenant's allowed origins only,
CORS without credentials for them, and a session that reaches only the tickets it
opened and their public messages."""

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
from tests.support.redis import RedisServer

SHOP = "https://shop.example.com"
DEV = "http://localhost:3000"
CONSOLE = "https://console.example.net"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


@pytest.fixture
def app(db: Db, clock: ManualClock) -> FastAPI:
    return create_app(app_settings(db, cors_origins=CONSOLE), clock=clock)


async def allow(http: httpx.AsyncClient, tenant: NewTenant, *origins: str) -> None:
    """Set the tenant's widget origins, keeping the rest of its settings."""
    r = await http.get("/v1/settings", headers=auth(tenant.admin_key))
    assert r.status_code == 200, r.text
    r = await http.put("/v1/settings", headers=auth(tenant.admin_key),
                       json={**r.json(), "widget_origins": list(origins)})
    assert r.status_code == 200, r.text


def base(tenant: NewTenant) -> str:
    return f"/v1/widget/{tenant.tenant_id}"


async def session(http: httpx.AsyncClient, tenant: NewTenant, email: str,
                  origin: str = SHOP) -> dict[str, str]:
    """The headers of a widget page at ``origin`` holding a session for ``email``."""
    r = await http.post(f"{base(tenant)}/sessions", headers={"Origin": origin},
                        json={"email": email})
    assert r.status_code == 201, r.text
    assert r.headers["access-control-allow-origin"] == origin
    assert "access-control-allow-credentials" not in r.headers
    return {"Origin": origin, "Authorization": f"Bearer {r.json()['access_token']}"}


async def test_a_visitor_opens_follows_and_replies(http, tenant, clock) -> None:
    await allow(http, tenant, SHOP)
    visitor = await session(http, tenant, "Ann@Example.com")
    r = await http.post(f"{base(tenant)}/tickets", headers=visitor,
                        json={"subject": "Where is my order?", "body": "Ordered last week"})
    assert r.status_code == 201, r.text
    assert r.headers["access-control-allow-origin"] == SHOP
    assert "access-control-allow-credentials" not in r.headers
    assert "Location" in r.headers["access-control-expose-headers"]
    opened = r.json()
    assert set(opened) == {"id", "subject", "state", "created_at", "updated_at"}
    assert r.headers["location"] == f"{base(tenant)}/tickets/{opened['id']}"

    got = await http.get(f"{base(tenant)}/tickets/{opened['id']}", headers=visitor)
    assert got.status_code == 200 and got.json()["id"] == opened["id"]

    # Staff answer publicly and note internally; the visitor sees the answer only.
    for visibility in ("public", "internal"):
        m = await http.post(f"/v1/tickets/{opened['id']}/messages",
                            headers=auth(tenant.admin_key),
                            json={"body": f"{visibility} words", "visibility": visibility})
        assert m.status_code == 201, m.text
    clock.advance(timedelta(seconds=1))
    reply = await http.post(f"{base(tenant)}/tickets/{opened['id']}/messages",
                            headers=visitor, json={"body": "Thanks!"})
    assert reply.status_code == 201, reply.text
    assert reply.json()["message"]["author_kind"] == "customer"
    messages = await http.get(f"{base(tenant)}/tickets/{opened['id']}/messages",
                              headers=visitor)
    assert messages.status_code == 200, messages.text
    bodies = [m["body"] for m in messages.json()["data"]]
    assert sorted(bodies[:2]) == ["Ordered last week", "public words"]
    assert bodies[2:] == ["Thanks!"]

    # Staff see a ticket for the contact the e-mail resolved to, opened through the
    # widget; its events are stamped as the widget session, its messages the contact's.
    staff = await http.get(f"/v1/tickets/{opened['id']}", headers=auth(tenant.admin_key))
    requester = staff.json()["requester"]
    assert requester["email"] == "Ann@Example.com" and requester["contact_id"]
    assert staff.json()["source"] == "chat"
    events = await http.get("/v1/events", headers=auth(tenant.admin_key),
                            params={"stream_id": opened["id"]})
    assert events.status_code == 200, events.text
    stamped = {e["actor"]["kind"] for e in events.json()["data"]}
    assert stamped == {"widget", "api_key"}, stamped
    widget_ids = {e["actor"]["id"] for e in events.json()["data"]
                  if e["actor"]["kind"] == "widget"}
    assert len(widget_ids) == 1
    authors = {(e["data"]["author"]["kind"], e["data"]["author"]["id"])
               for e in events.json()["data"] if e["actor"]["kind"] == "widget"
               and "author" in e["data"]}
    assert authors == {("customer", requester["contact_id"])}, authors

    # A ticket for a known contact links to it (the same requester resolution).
    again = await session(http, tenant, "ann@example.com")
    r = await http.post(f"{base(tenant)}/tickets", headers=again,
                        json={"subject": "Another", "body": "Hello again"})
    assert r.status_code == 201, r.text
    other = await http.get(f"/v1/tickets/{r.json()['id']}", headers=auth(tenant.admin_key))
    assert other.json()["requester"]["contact_id"] == requester["contact_id"]


async def test_a_visitor_fills_in_the_fields_open_to_customers(http, tenant) -> None:
    admin = auth(tenant.admin_key)
    await allow(http, tenant, SHOP)
    for body in ({"key": "product", "title": "Product", "type": "dropdown", "intake": True,
                  "required_on": "open", "options": [{"value": "app", "title": "App"}]},
                 {"key": "internal_score", "title": "Score", "type": "number"}):
        r = await http.post("/v1/ticket-fields", headers=admin, json=body)
        assert r.status_code == 201, r.text
    # The list is the portal's, from an allowed origin only, before any session.
    listed = await http.get(f"{base(tenant)}/ticket-fields", headers={"Origin": SHOP})
    assert listed.status_code == 200, listed.text
    assert listed.headers["access-control-allow-origin"] == SHOP
    assert listed.json()["data"] == [
        {"key": "product", "title": "Product", "type": "dropdown", "required": True,
         "read_only": False, "options": [{"value": "app", "title": "App"}]}]
    r = await http.get(f"{base(tenant)}/ticket-fields", headers={"Origin": DEV})
    assert r.status_code == 403 and r.json()["code"] == "origin_not_allowed"

    visitor = await session(http, tenant, "ann@example.com")
    new = {"subject": "Crash", "body": "On start"}
    for fields, where in (({}, "fields.product"), ({"product": "tv"}, "fields.product"),
                          ({"product": "app", "internal_score": 3}, "fields.internal_score")):
        r = await http.post(f"{base(tenant)}/tickets", headers=visitor,
                            json=new | {"fields": fields})
        assert r.status_code == 422, (fields, r.text)
        assert [e["loc"] for e in r.json()["errors"]] == [["body", *where.split(".")]]
    r = await http.post(f"{base(tenant)}/tickets", headers=visitor,
                        json=new | {"fields": {"product": "app"}})
    assert r.status_code == 201, r.text
    staff = await http.get(f"/v1/tickets/{r.json()['id']}", headers=admin)
    assert staff.json()["fields"] == {"product": "app"}


async def test_a_session_reaches_only_the_tickets_it_opened(http, tenant) -> None:
    await allow(http, tenant, SHOP)
    first = await session(http, tenant, "ann@example.com")
    r = await http.post(f"{base(tenant)}/tickets", headers=first,
                        json={"subject": "Mine", "body": "Opened here"})
    assert r.status_code == 201, r.text
    mine = r.json()["id"]
    # The same e-mail typed again (by anyone): a new session, which does not reach
    # the first one's ticket although it is the same contact's.
    second = await session(http, tenant, "ann@example.com")
    # And a ticket staff opened for that contact, with an internal note.
    r = await http.post("/v1/tickets", headers=auth(tenant.admin_key), json={
        "subject": "By staff", "body": "Phoned in", "requester": {"email": "ann@example.com"}})
    assert r.status_code == 201, r.text
    staffs = r.json()["id"]
    for ticket in (mine, staffs):
        for path in (f"{base(tenant)}/tickets/{ticket}",
                     f"{base(tenant)}/tickets/{ticket}/messages"):
            r = await http.get(path, headers=second)
            assert r.status_code == 404, (path, r.text)
            assert r.headers["content-type"] == "application/problem+json"
            assert r.headers["access-control-allow-origin"] == SHOP
        r = await http.post(f"{base(tenant)}/tickets/{ticket}/messages", headers=second,
                            json={"body": "let me in"})
        assert r.status_code == 404, r.text
    assert (await http.get(f"{base(tenant)}/tickets/{staffs}",
                           headers=first)).status_code == 404

    # Internal notes never reach the widget.
    r = await http.post(f"/v1/tickets/{mine}/messages", headers=auth(tenant.admin_key),
                        json={"body": "secret note", "visibility": "internal"})
    assert r.status_code == 201, r.text
    messages = await http.get(f"{base(tenant)}/tickets/{mine}/messages", headers=first)
    assert [m["body"] for m in messages.json()["data"]] == ["Opened here"]

    # A reply on a closed ticket opens a follow-up, which the session then holds.
    for state in ("solved", "closed"):
        r = await http.post(f"/v1/tickets/{mine}/state", headers=auth(tenant.admin_key),
                            json={"state": state})
        assert r.status_code == 200, r.text
    r = await http.post(f"{base(tenant)}/tickets/{mine}/messages", headers=first,
                        json={"body": "It is back"})
    assert r.status_code == 201, r.text
    follow_up = r.json()["ticket"]["id"]
    assert follow_up != mine
    assert (await http.get(f"{base(tenant)}/tickets/{follow_up}",
                           headers=first)).status_code == 200
    assert (await http.get(f"{base(tenant)}/tickets/{follow_up}",
                           headers=second)).status_code == 404

    # Tokens and tenants: a widget token is nothing elsewhere, nor another tenant's.
    assert (await http.get("/v1/tickets", headers=first)).status_code == 401
    assert (await http.get("/v1/portal/tickets", headers=first)).status_code == 401
    r = await http.get(f"/v1/widget/{uuid.uuid4()}/tickets/{mine}", headers=first)
    assert r.status_code == 403, r.text  # that tenant lists no origin
    r = await http.get(f"{base(tenant)}/tickets/{mine}",
                       headers={"Origin": SHOP, **auth(tenant.admin_key)})
    assert r.status_code == 401 and r.json()["code"] == "invalid_widget_token"


async def test_unlisted_or_missing_origins_are_refused(http, tenant, make_tenant) -> None:
    await allow(http, tenant, SHOP, DEV)
    # The change is a settings change like any: an event on the tenant's stream.
    events = await http.get("/v1/events", headers=auth(tenant.admin_key),
                            params={"stream_id": str(tenant.tenant_id)})
    assert events.status_code == 200, events.text
    changed = [e for e in events.json()["data"] if e["type"] == "SettingsChanged"]
    assert changed[-1]["data"]["settings"]["widget_origins"] == [DEV, SHOP]
    for headers in ({"Origin": "https://evil.example"}, {},
                    {"Origin": "https://shop.example.com.evil.example"},
                    {"Origin": "null"}, {"Origin": SHOP + "/"}):
        r = await http.post(f"{base(tenant)}/sessions", headers=headers,
                            json={"email": "ann@example.com"})
        assert r.status_code == 403, (headers, r.text)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "origin_not_allowed"
        assert "access-control-allow-origin" not in r.headers
    # A tenant with no widget origins (the default) has no widget at all.
    other = await make_tenant("Other")
    r = await http.post(f"/v1/widget/{other.tenant_id}/sessions", headers={"Origin": SHOP},
                        json={"email": "ann@example.com"})
    assert r.status_code == 403, r.text

    # A session works only from the origin it was opened from, and only while that
    # origin is listed.
    visitor = await session(http, tenant, "ann@example.com", DEV)
    r = await http.post(f"{base(tenant)}/tickets", headers={**visitor, "Origin": SHOP},
                        json={"subject": "Hi", "body": "Hello"})
    assert r.status_code == 403, r.text
    r = await http.post(f"{base(tenant)}/tickets", headers={
        "Authorization": visitor["Authorization"]}, json={"subject": "Hi", "body": "Hello"})
    assert r.status_code == 403, r.text
    r = await http.post(f"{base(tenant)}/tickets", headers=visitor,
                        json={"subject": "Hi", "body": "Hello"})
    assert r.status_code == 201, r.text
    await allow(http, tenant, SHOP)
    r = await http.get(f"{base(tenant)}/tickets/{r.json()['id']}", headers=visitor)
    assert r.status_code == 403, r.text

    # Bad input is a 422 naming the field, with the CORS header for an allowed origin.
    r = await http.post(f"{base(tenant)}/sessions", headers={"Origin": SHOP},
                        json={"email": "not an address"})
    assert r.status_code == 422, r.text
    assert "email" in r.text
    assert r.headers["access-control-allow-origin"] == SHOP
    # The settings refuse what is not an origin.
    r = await http.get("/v1/settings", headers=auth(tenant.admin_key))
    bad = await http.put("/v1/settings", headers=auth(tenant.admin_key),
                         json={**r.json(), "widget_origins": ["https://*.example.com"]})
    assert bad.status_code == 422, bad.text
    assert "widget_origins" in bad.text


async def test_cors_preflight_answers_widget_origins_without_credentials(http,
                                                                         tenant) -> None:
    await allow(http, tenant, SHOP)
    for path in (f"{base(tenant)}/sessions", f"{base(tenant)}/tickets/{uuid.uuid4()}"):
        r = await http.options(path, headers={
            "Origin": SHOP, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        assert r.status_code == 204, r.text
        assert r.headers["access-control-allow-origin"] == SHOP
        assert "POST" in r.headers["access-control-allow-methods"]
        allowed = r.headers["access-control-allow-headers"].lower()
        assert "authorization" in allowed and "content-type" in allowed
        assert "access-control-allow-credentials" not in r.headers
        assert "Origin" in r.headers["vary"]
        for origin in ("https://evil.example", CONSOLE):
            r = await http.options(path, headers={
                "Origin": origin, "Access-Control-Request-Method": "POST"})
            assert r.status_code == 403, r.text
            assert r.json()["code"] == "origin_not_allowed"
            assert "access-control-allow-origin" not in r.headers
            assert "access-control-allow-credentials" not in r.headers
        r = await http.options(path, headers={"Access-Control-Request-Method": "POST"})
        assert r.status_code == 403, r.text

    # A configured front end (CORS_ORIGINS) gets credentialed CORS on the other routes;
    # a widget origin gets none there, and a front end none on the widget's.
    r = await http.options("/v1/tickets", headers={
        "Origin": CONSOLE, "Access-Control-Request-Method": "GET"})
    assert r.status_code == 204, r.text
    assert r.headers["access-control-allow-origin"] == CONSOLE
    assert r.headers["access-control-allow-credentials"] == "true"
    r = await http.get("/v1/tickets", headers={"Origin": CONSOLE, **auth(tenant.admin_key)})
    assert r.status_code == 200, r.text
    assert r.headers["access-control-allow-origin"] == CONSOLE
    assert r.headers["access-control-allow-credentials"] == "true"
    r = await http.get("/v1/tickets", headers={"Origin": SHOP, **auth(tenant.admin_key)})
    assert "access-control-allow-origin" not in r.headers
    r = await http.options("/v1/tickets", headers={
        "Origin": SHOP, "Access-Control-Request-Method": "GET"})
    assert "access-control-allow-origin" not in r.headers


def _limited(db: Db, redis_url: str, **kw: Any) -> FastAPI:
    return create_app(app_settings(db, redis_url=redis_url, rate_limit_window=60,
                                   rate_limit_per_address=1000, **kw))


@pytest.mark.slow  # starts a redis-server
async def test_opening_sessions_is_limited_per_address_and_per_origin(
        db: Db, make_tenant, redis_server: RedisServer) -> None:
    tenant = await make_tenant("Acme")
    app = _limited(db, redis_server.url, widget_sessions_per_address=2,
                   widget_sessions_per_origin=3)
    here, there, elsewhere = (asgi_client(app, client=(address, 40000))
                              for address in ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
    async with here as a, there as b, elsewhere as c:
        await allow(a, tenant, SHOP, DEV)

        async def open_(http: httpx.AsyncClient, origin: str = SHOP) -> httpx.Response:
            return await http.post(f"{base(tenant)}/sessions", headers={"Origin": origin},
                                   json={"email": "ann@example.com"})

        assert [(await open_(a)).status_code for _ in range(2)] == [201, 201]
        r = await open_(a)
        assert r.status_code == 429, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "rate_limited"
        assert int(r.headers["retry-after"]) >= 1
        assert r.headers["access-control-allow-origin"] == SHOP
        # Another address has its own budget, but the origin's is nearly spent.
        assert (await open_(b)).status_code == 201
        r = await open_(c)
        assert r.status_code == 429, r.text
        assert "per-origin" in r.json()["detail"]
        # Another origin of the tenant has its own.
        assert (await open_(c, DEV)).status_code == 201
