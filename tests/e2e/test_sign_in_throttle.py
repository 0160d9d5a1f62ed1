"""Failed sign-ins are throttled without Redis: counted in Postgres per account and per
address, the 11th wrong password in the window is a 429 with ``Retry-After`` (for an
account that does not exist as well), a right password after the backoff works, and
the portal's sign-in runs through the same throttle. The app has no ``REDIS_URL``;
the clock is moved by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from api.app import create_app
from domain.clock import ManualClock
from tests.e2e.conftest import app_settings, auth
from tests.e2e.test_sign_in import PASSWORD, person
from tests.support.pg import TestDatabase as Db

ALLOWED = 10


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


@pytest.fixture
def app(db: Db, clock: ManualClock) -> FastAPI:
    settings = app_settings(db)
    assert not settings.redis_url
    return create_app(settings, clock=clock)


async def _try(http: httpx.AsyncClient, tenant: str, email: str, password: str,
               path: str = "/v1/auth/sign-in") -> httpx.Response:
    http.cookies.clear()
    return await http.post(path, json={"tenant": tenant, "email": email,
                                       "password": password})


async def test_the_eleventh_wrong_password_is_a_429_and_the_right_one_works_after_it(
        http, tenant, clock):
    agent = await person(http, tenant)
    tid = str(tenant.tenant_id)
    for i in range(ALLOWED):
        r = await _try(http, tid, agent["email"], f"wrong password {i}")
        assert r.status_code == 401 and r.json()["code"] == "sign_in_failed", (i, r.text)
    eleventh = await _try(http, tid, agent["email"], "wrong password again")
    assert eleventh.status_code == 429, eleventh.text
    assert eleventh.headers["content-type"] == "application/problem+json"
    assert eleventh.json()["code"] == "too_many_sign_in_attempts"
    wait = int(eleventh.headers["Retry-After"])
    assert 1 <= wait <= 30
    # Blocked, the right password is refused too: nothing is checked while it lasts.
    assert (await _try(http, tid, agent["email"], PASSWORD)).status_code == 429
    # The slug of the same tenant is the same account.
    assert (await _try(http, tenant.slug, agent["email"], PASSWORD)).status_code == 429
    clock.advance(seconds=wait)
    ok = await _try(http, tid, agent["email"], PASSWORD)
    assert ok.status_code == 200, ok.text
    # The right password forgave the account: ten more failures before the next pause.
    for i in range(ALLOWED - 1):
        assert (await _try(http, tid, agent["email"], f"w{i}")).status_code == 401


async def test_an_unknown_account_is_throttled_the_same_way(http, tenant, clock):
    for tenant_text, email in ((str(tenant.tenant_id), "nobody@example.com"),
                               ("no-such-tenant", "nobody@example.com")):
        answers = [await _try(http, tenant_text, email, f"guess {i}")
                   for i in range(ALLOWED + 1)]
        assert [r.status_code for r in answers] == [401] * ALLOWED + [429], tenant_text
        assert answers[0].json() == {**answers[0].json(), "code": "sign_in_failed"}
        assert int(answers[-1].headers["Retry-After"]) >= 1
    # The backoff doubles: the next failure after the pause pauses twice as long.
    clock.advance(seconds=30)
    again = await _try(http, "no-such-tenant", "nobody@example.com", "guess")
    assert again.status_code == 401
    blocked = await _try(http, "no-such-tenant", "nobody@example.com", "guess")
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) == 60
    # A window's quiet forgets the count.
    clock.advance(minutes=16, seconds=60)
    assert (await _try(http, "no-such-tenant", "nobody@example.com", "x")).status_code == 401


async def test_one_address_is_throttled_across_accounts(http, tenant, clock, db):
    tid = str(tenant.tenant_id)
    codes = [(await _try(http, tid, f"p{i}@example.com", "guess")).status_code
             for i in range(50)]
    assert codes == [401] * 50
    r = await _try(http, tid, "p51@example.com", "guess")
    assert r.status_code == 429 and "Retry-After" in r.headers
    # Only hashes are kept: no e-mail or address in the table.
    conn = await asyncpg.connect(db.admin_url)
    try:
        rows = await conn.fetch("SELECT key_hash FROM sign_in_failures")
    finally:
        await conn.close()
    assert len(rows) == 51 and all(len(row["key_hash"]) == 32 for row in rows)


async def test_the_portal_sign_in_takes_slugs_and_shares_the_throttle(http, tenant, clock):
    admin = tenant.admin_key
    r = await http.post("/v1/tickets", headers=auth(admin), json={
        "subject": "Hi", "body": "Hello", "requester": {"email": "cu@example.com"},
        "source": "email"})
    contact = r.json()["requester"]["contact_id"]
    link = (await http.post(f"/v1/contacts/{contact}/portal-link", headers=auth(admin))).json()
    r = await http.post("/v1/portal/auth/password",
                        json={"token": link["token"], "password": PASSWORD})
    assert r.status_code == 200, r.text
    portal = "/v1/portal/auth/sign-in"
    ok = await _try(http, tenant.slug.upper(), "cu@example.com", PASSWORD, portal)
    assert ok.status_code == 200, ok.text
    assert ok.json()["tenant_id"] == str(tenant.tenant_id)
    codes = [(await _try(http, tenant.slug, "cu@example.com", "no", portal)).status_code
             for _ in range(ALLOWED + 1)]
    assert codes == [401] * ALLOWED + [429]
    # The staff account of the same e-mail is another account.
    assert (await _try(http, tenant.slug, "cu@example.com", "no")).status_code == 401


async def test_an_unknown_slug_is_the_same_401_as_a_wrong_password(http, tenant):
    agent = await person(http, tenant)
    wrong = await _try(http, tenant.slug, agent["email"], "not the password")
    unknown = await _try(http, "no-such-desk", agent["email"], PASSWORD)
    assert wrong.status_code == unknown.status_code == 401
    assert {k: v for k, v in wrong.json().items() if k != "instance"} == {
        k: v for k, v in unknown.json().items() if k != "instance"}
    ok = await _try(http, tenant.slug, agent["email"], PASSWORD)
    assert ok.status_code == 200 and ok.json()["agent_id"] == agent["agent_id"]


def test_the_documented_limits_are_the_throttles():
    from handlers.sign_in_throttle import Throttle

    t = Throttle()
    assert (t.account.allowed, t.address.allowed) == (ALLOWED, 50)
    assert t.account.backoff == timedelta(seconds=30)
    assert t.account.window == timedelta(minutes=15)
    assert t.account.longest == timedelta(hours=1)
