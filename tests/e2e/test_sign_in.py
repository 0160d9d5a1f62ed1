"""People sign in: invitations, sessions, refresh rotation with replay revocation, and
access tokens that act exactly as the same agent's API key would."""

from __future__ import annotations

import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import httpx
import pytest
from fastapi import FastAPI

from api.app import create_app
from domain.clock import ManualClock
from handlers.tenants import NewTenant
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support.pg import TestDatabase as Db
from tests.support.wait import until

PASSWORD = "correct horse battery"
COOKIE = "hd_refresh"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC))


@pytest.fixture
def app(db: Db, clock: ManualClock) -> FastAPI:
    return create_app(app_settings(db), clock=clock)


async def invite(http: httpx.AsyncClient, tenant: NewTenant, email: str | None = None,
                 role: str = "agent") -> dict[str, Any]:
    r = await http.post("/v1/agents/invitations", headers=auth(tenant.admin_key), json={
        "email": email or f"{uuid.uuid4()}@example.com", "name": "Pat", "role": role})
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


async def person(http: httpx.AsyncClient, tenant: NewTenant, role: str = "agent"
                 ) -> dict[str, Any]:
    """An invited agent who has set their password: their e-mail and agent id."""
    invitation = await invite(http, tenant, role=role)
    r = await http.post("/v1/auth/invitations/accept",
                        json={"token": invitation["token"], "password": PASSWORD})
    assert r.status_code == 200, r.text
    accepted: dict[str, Any] = r.json()
    return accepted


async def sign_in(http: httpx.AsyncClient, tenant_id: uuid.UUID, email: str,
                  password: str = PASSWORD) -> httpx.Response:
    http.cookies.clear()
    return await http.post("/v1/auth/sign-in", json={"tenant": str(tenant_id), "email": email,
                                                     "password": password})


async def refresh(http: httpx.AsyncClient, token: str) -> httpx.Response:
    """Present exactly ``token`` as the refresh cookie."""
    http.cookies.clear()
    return await http.post("/v1/auth/refresh", headers={"Cookie": f"{COOKIE}={token}"})


def bearer(response: httpx.Response) -> dict[str, str]:
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


async def test_an_invitation_is_spent_once_then_refused(http, tenant, clock) -> None:
    invitation = await invite(http, tenant, email="new@example.com", role="admin")
    assert invitation["token"].startswith("hdi_") and invitation["role"] == "admin"
    accept = {"token": invitation["token"], "password": PASSWORD}
    first = await http.post("/v1/auth/invitations/accept", json=accept)
    assert first.status_code == 200, first.text
    assert first.json()["email"] == "new@example.com"
    again = await http.post("/v1/auth/invitations/accept", json=accept)
    assert again.status_code == 410
    assert again.headers["content-type"] == "application/problem+json"
    assert again.json()["code"] == "invitation_gone"
    # The agent was added with the invitation's name and role, and signs in.
    agent = (await http.get(f"/v1/agents/{first.json()['agent_id']}",
                            headers=auth(tenant.admin_key))).json()
    assert (agent["name"], agent["role"], agent["email"]) == ("Pat", "admin", "new@example.com")
    assert (await sign_in(http, tenant.tenant_id, "new@example.com")).status_code == 200

    # Expired: the clock passes the invitation's lifetime (72 hours by default).
    late = await invite(http, tenant)
    clock.advance(hours=73)
    r = await http.post("/v1/auth/invitations/accept",
                        json={"token": late["token"], "password": PASSWORD})
    assert r.status_code == 410
    # Unknown, malformed, and a password too short.
    fresh = await invite(http, tenant)
    unknown = "hdi_" + fresh["token"][4:-4] + "AAAA"
    assert (await http.post("/v1/auth/invitations/accept",
                            json={"token": unknown, "password": PASSWORD})).status_code == 404
    assert (await http.post("/v1/auth/invitations/accept",
                            json={"token": "nope", "password": PASSWORD})).status_code == 404
    short = await http.post("/v1/auth/invitations/accept",
                            json={"token": fresh["token"], "password": "short"})
    assert short.status_code == 422 and short.json()["errors"][0]["loc"] == ["body", "password"]

    # Every step is an event with its actor: the admin's key invites, the invitee accepts.
    events = (await http.get("/v1/events", headers=auth(tenant.admin_key),
                             params={"type": "AgentInvited,AgentAdded,AgentPasswordSet,"
                                             "AgentInvitationAccepted"})).json()["data"]
    steps = [(e["type"], e["actor"]["kind"], e["actor"]["id"]) for e in events][:4]
    agent_id = first.json()["agent_id"]
    assert steps == [("AgentInvited", "api_key", str(tenant.admin_key.id)),
                     ("AgentAdded", "agent", agent_id),
                     ("AgentPasswordSet", "agent", agent_id),
                     ("AgentInvitationAccepted", "agent", agent_id)]


async def test_only_admins_invite(http, tenant, owner) -> None:
    agent_key = await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id))
    r = await http.post("/v1/agents/invitations", headers=auth(agent_key),
                        json={"email": "x@example.com", "name": "X"})
    assert r.status_code == 403


async def test_sign_in_refresh_rotation_and_replay_revokes_the_family(http, tenant) -> None:
    me = await person(http, tenant)
    signed = await sign_in(http, tenant.tenant_id, me["email"])
    assert signed.status_code == 200, signed.text
    body = signed.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 15 * 60
    assert (body["agent_id"], body["role"]) == (me["agent_id"], "agent")
    assert signed.headers["cache-control"] == "no-store"
    cookie = signed.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "path=/v1/auth" in cookie.lower()
    assert "samesite=strict" in cookie.lower()
    first = signed.cookies[COOKIE]
    assert first.startswith("hdr_") and first not in signed.text

    who = (await http.get("/v1/auth/me", headers=bearer(signed))).json()
    assert who["credential"]["kind"] == "session" and who["agent"]["id"] == me["agent_id"]
    assert who["role"] == "agent"

    # Each refresh hands out a new pair; the token it spent is dead.
    second = await refresh(http, first)
    assert second.status_code == 200, second.text
    second_token = second.cookies[COOKIE]
    assert second_token != first
    third = await refresh(http, second_token)
    assert third.status_code == 200
    third_token = third.cookies[COOKIE]
    assert (await http.get("/v1/auth/me", headers=bearer(third))).status_code == 200

    # Someone presents a token that was already rotated: refused, and the whole family
    # is revoked: the newest refresh token and every access token of the session stop.
    replay = await refresh(http, first)
    assert replay.status_code == 401 and replay.json()["code"] == "invalid_refresh_token"
    assert f'{COOKIE}=""' in replay.headers["set-cookie"] or "max-age=0" in \
        replay.headers["set-cookie"].lower()
    assert (await refresh(http, third_token)).status_code == 401
    stopped = await http.get("/v1/auth/me", headers=bearer(third))
    assert stopped.status_code == 401 and stopped.json()["code"] == "invalid_access_token"
    events = (await http.get("/v1/events", headers=auth(tenant.admin_key),
                             params={"type": "AgentSignedIn,AgentSessionRevoked"})).json()
    assert [(e["type"], e["actor"]["id"]) for e in events["data"]] == [
        ("AgentSignedIn", me["agent_id"]), ("AgentSessionRevoked", me["agent_id"])]
    assert events["data"][1]["data"]["reason"] == "replay"

    # Signing in again opens a new session.
    assert (await sign_in(http, tenant.tenant_id, me["email"])).status_code == 200


async def test_sign_out_ends_the_session_at_once(http, tenant) -> None:
    me = await person(http, tenant)
    signed = await sign_in(http, tenant.tenant_id, me["email"])
    token = signed.cookies[COOKIE]
    assert (await http.get("/v1/tickets", headers=bearer(signed))).status_code == 200
    http.cookies.clear()
    out = await http.post("/v1/auth/sign-out", headers={"Cookie": f"{COOKIE}={token}"})
    assert out.status_code == 204
    assert (await http.get("/v1/tickets", headers=bearer(signed))).status_code == 401
    assert (await refresh(http, token)).status_code == 401
    # Signing out with no cookie, or twice, is nothing to do.
    assert (await http.post("/v1/auth/sign-out")).status_code == 204


async def test_the_access_token_expires_and_the_refresh_cookie_slides_up_to_its_cap(
        db, tenant, clock) -> None:
    app = create_app(app_settings(db, refresh_token_days=1, session_max_days=2), clock=clock)
    async with asgi_client(app) as http:
        me = await person(http, tenant)
        signed = await sign_in(http, tenant.tenant_id, me["email"])
        clock.advance(minutes=16)
        late = await http.get("/v1/auth/me", headers=bearer(signed))
        assert late.status_code == 401 and late.json()["code"] == "invalid_access_token"
        # Used within a day, the refresh token slides; the session ends after two days.
        clock.advance(hours=20)
        again = await refresh(http, signed.cookies[COOKIE])
        assert again.status_code == 200
        clock.advance(hours=20)
        again = await refresh(http, again.cookies[COOKIE])
        assert again.status_code == 200
        assert again.json()["refresh_expires_at"] == (
            datetime.fromisoformat(signed.json()["refresh_expires_at"]) + timedelta(days=1)
        ).isoformat().replace("+00:00", "Z")
        clock.advance(hours=9)  # 49 hours after signing in
        assert (await refresh(http, again.cookies[COOKIE])).status_code == 401
        # Unused for longer than a day, a fresh session's token expires as well.
        other = await sign_in(http, tenant.tenant_id, me["email"])
        clock.advance(hours=25)
        assert (await refresh(http, other.cookies[COOKIE])).status_code == 401


async def test_every_failure_is_the_same_401(http, tenant, make_tenant, owner) -> None:
    me = await person(http, tenant)
    other = await make_tenant("Elsewhere")
    async with asgi_client(create_app(app_settings(owner.db))) as elsewhere:
        stranger = await person(elsewhere, other)
    gone = await person(http, tenant)
    await owner.set_active(tenant.tenant_id, uuid.UUID(gone["agent_id"]), False)
    never = await owner.agent(tenant.tenant_id)  # an agent with no password at all
    attempts = [
        (tenant.tenant_id, me["email"], "wrong password!"),
        (tenant.tenant_id, "nobody@example.com", PASSWORD),
        (tenant.tenant_id, stranger["email"], PASSWORD),
        (tenant.tenant_id, gone["email"], PASSWORD),
        (tenant.tenant_id, f"{never}@example.com", PASSWORD),
        (uuid.uuid4(), me["email"], PASSWORD),
    ]
    answers = []
    for tenant_id, email, password in attempts:
        r = await sign_in(http, tenant_id, email, password)
        assert COOKIE not in r.cookies
        answers.append((r.status_code, r.headers["content-type"],
                        {k: v for k, v in r.json().items() if k != "instance"}))
    assert answers == [answers[0]] * len(attempts)
    assert answers[0][0] == 401 and answers[0][2]["code"] == "sign_in_failed"
    # The stranger signs in to their own tenant with the same password.
    assert (await sign_in(http, other.tenant_id, stranger["email"])).status_code == 200


async def test_an_unknown_email_takes_as_long_as_a_wrong_password(db, tenant) -> None:
    # The real hashing parameters: with them, a sign-in that skipped the hash would be
    # several times faster than one that computed it.
    app = create_app(app_settings(db, password_hash_memory_kib=65536,
                                  password_hash_time_cost=3))
    async with asgi_client(app) as http:
        me = await person(http, tenant)

        async def timed(email: str, password: str) -> float:
            began = time.perf_counter()
            r = await sign_in(http, tenant.tenant_id, email, password)
            assert r.status_code == 401
            return time.perf_counter() - began

        await timed("warm@example.com", "x" * 10)  # the decoy hash is made on first use
        wrong, unknown = [], []
        for _ in range(7):  # interleaved, so a slow moment of the machine hits both
            wrong.append(await timed(me["email"], "not the password"))
            unknown.append(await timed("nobody@example.com", "not the password"))
        ratio = statistics.median(unknown) / statistics.median(wrong)
        assert 0.5 < ratio < 2.0, (ratio, wrong, unknown)


async def test_a_signed_in_person_is_the_principal_their_agent_key_would_be(
        http, tenant, owner) -> None:
    me = await person(http, tenant)
    signed = await sign_in(http, tenant.tenant_id, me["email"])
    h = bearer(signed)
    # The same role table: an agent works tickets but may not add agents.
    r = await http.post("/v1/tickets", json=NEW_TICKET, headers=h | {"Idempotency-Key": "a-1"})
    assert r.status_code == 201, r.text
    ticket = r.json()
    replayed = await http.post("/v1/tickets", json=NEW_TICKET,
                               headers=h | {"Idempotency-Key": "a-1"})
    assert replayed.headers["idempotent-replayed"] == "true"
    assert (await http.post("/v1/agents", headers=h,
                            json={"email": "z@example.com", "name": "Z"})).status_code == 403
    # What they do is stamped by the database with their agent id.
    history = (await http.get(f"/v1/tickets/{ticket['id']}/history",
                              headers=auth(tenant.admin_key))).json()
    assert history["data"][0]["actor"] == {"kind": "agent", "id": me["agent_id"]}
    # Their role is read at every request: made admin, the same token may add agents.
    await http.patch(f"/v1/agents/{me['agent_id']}", headers=auth(tenant.admin_key),
                     json={"role": "admin"})
    assert (await http.post("/v1/agents", headers=h,
                            json={"email": "z@example.com", "name": "Z"})).status_code == 201
    # Deactivated: the access token stops at once, and so does the refresh cookie.
    await owner.set_active(tenant.tenant_id, uuid.UUID(me["agent_id"]), False)

    async def stopped() -> bool:  # the operator's change reaches the process by NOTIFY
        return (await http.get("/v1/tickets", headers=h)).status_code == 401

    await until(stopped, timeout=5, what="the deactivated agent's access token to stop")
    assert (await refresh(http, signed.cookies[COOKIE])).status_code == 401


async def test_a_forged_or_foreign_access_token_is_refused(db, http, tenant) -> None:
    me = await person(http, tenant)
    signed = await sign_in(http, tenant.tenant_id, me["email"])
    token = signed.json()["access_token"]
    head, payload, signature = token.split(".")
    tampered = f"{head}.{payload[:-2]}xx.{signature}"
    for bad in (tampered, f"{head}.{payload}.{signature[:-2]}AA", head + ".e30.",
                f"{head}.{payload}"):
        r = await http.get("/v1/auth/me", headers={"Authorization": f"Bearer {bad}"})
        assert r.status_code == 401, bad
    # Signed with another key (ACCESS_TOKEN_SECRET set): not valid here.
    other = create_app(app_settings(db, access_token_secret="s" * 32))
    async with asgi_client(other) as elsewhere:
        assert (await elsewhere.get("/v1/auth/me", headers=bearer(signed))).status_code == 401
        mine = await sign_in(elsewhere, tenant.tenant_id, me["email"])
        assert (await elsewhere.get("/v1/auth/me", headers=bearer(mine))).status_code == 200
    assert (await http.get("/v1/auth/me", headers=bearer(mine))).status_code == 401


async def test_a_password_hashed_with_old_parameters_is_rehashed_at_sign_in(
        db, tenant) -> None:
    async with asgi_client(create_app(app_settings(db))) as http:
        me = await person(http, tenant)

    async def stored() -> str:
        conn = await asyncpg.connect(db.admin_url)
        try:
            value: str = await conn.fetchval(
                "SELECT password_hash FROM agent_logins WHERE agent_id = $1",
                uuid.UUID(me["agent_id"]))
            return value
        finally:
            await conn.close()

    before = await stored()
    assert before.startswith("$argon2id$") and "m=1024,t=1" in before
    stronger = create_app(app_settings(db, password_hash_memory_kib=2048,
                                       password_hash_time_cost=2))
    async with asgi_client(stronger) as http:
        assert (await sign_in(http, tenant.tenant_id, me["email"], "wrong password")
                ).status_code == 401
        assert await stored() == before  # only the right password rehashes
        assert (await sign_in(http, tenant.tenant_id, me["email"])).status_code == 200
        after = await stored()
        assert "m=2048,t=2" in after
        assert (await sign_in(http, tenant.tenant_id, me["email"])).status_code == 200
        assert await stored() == after

