"""OpenID Connect sign-in against a provider this test runs (tests/support/oidc.py):
its own RSA keys, discovery document, JWKS and token endpoint.

One desk, one provider, every path: dormant until an admin configures it, a good
sign-in that ends in the password sign-in's session (refresh cookie, access token,
``AgentSignedIn``), and each refusal (a replayed callback, wrong ``aud``, expired,
a replayed ``nonce``, an unverified e-mail, another domain, an e-mail with no agent or
a deactivated one, a key the provider does not publish before and after it rotates),
then agents added at first sign-in once the tenant allows it.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import asyncpg
import httpx

from api.root import Services
from handlers.oidc_provider import Providers
from handlers.tenants import NewTenant
from tests.e2e.conftest import Owner, auth
from tests.support.oidc import CLIENT_ID, CLIENT_SECRET, Provider, running_provider


class Ticks:
    """The monotonic clock of the JWKS cache, moved by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _sign_in(http: httpx.AsyncClient, tenant: NewTenant, provider: Provider, *,
                   email: str, **claims: Any) -> tuple[httpx.Response, dict[str, Any]]:
    """Start, pass the provider, come back: the callback's answer and the request's
    query as the provider saw it."""
    http.cookies.clear()
    r = await http.get(f"/v1/auth/oidc/{tenant.slug}/start")
    assert r.status_code == 303, r.text
    assert r.headers["Location"].startswith(f"{provider.issuer}/authorize?")
    code, query = provider.authorize(r.headers["Location"], email=email, **claims)
    back = await http.get(f"/v1/auth/oidc/{tenant.slug}/callback",
                          params={"code": code, "state": query["state"]})
    return back, query


def _refused(r: httpx.Response, reason: str) -> None:
    assert r.status_code == 401, r.text
    assert r.json()["code"] == "oidc_sign_in_failed", r.text
    assert reason in r.json()["reason"], r.text
    assert "hd_refresh" not in r.headers.get("set-cookie", "")


async def test_oidc_sign_in_and_each_refusal(http: httpx.AsyncClient, tenant: NewTenant,
                                             owner: Owner, services: Services) -> None:
    ticks = Ticks()
    admin = auth(tenant.admin_key)
    async with httpx.AsyncClient(timeout=5) as client:
        services.oidc = Providers(client, refetch_after=30, clock=ticks)
        with running_provider() as provider:
            # Dormant: nothing to sign in with, nothing configured.
            nothing = {"label": None, "start_url": None}
            assert (await http.get(f"/v1/auth/oidc/{tenant.slug}")).json() == nothing
            assert (await http.get("/v1/auth/oidc/no-such-tenant")).json() == nothing
            r = await http.get(f"/v1/auth/oidc/{tenant.slug}/start")
            assert r.status_code == 404 and r.json()["code"] == "oidc_not_configured"
            assert (await http.get("/v1/settings/oidc", headers=admin)).status_code == 404

            body = {"label": "Example ID", "issuer": provider.issuer, "client_id": CLIENT_ID,
                    "allowed_domain": "Example.com"}
            r = await http.put("/v1/settings/oidc", headers=admin, json=body)
            assert r.status_code == 422, "a new provider needs its secret"
            r = await http.put("/v1/settings/oidc", headers=admin,
                               json={**body, "issuer": "http://idp.example.com"})
            assert r.status_code == 422, "plain http only on loopback"
            r = await http.put("/v1/settings/oidc", headers=admin,
                               json={**body, "client_secret": CLIENT_SECRET})
            assert r.status_code == 200, r.text
            shown = r.json()
            assert CLIENT_SECRET not in r.text and "client_secret" not in shown
            assert shown["allowed_domain"] == "example.com" and not shown["create_agents"]
            assert shown["redirect_uri"] == (
                f"http://test/v1/auth/oidc/{tenant.tenant_id}/callback")
            conn = await asyncpg.connect(owner.db.admin_url)
            try:
                stored = bytes(await conn.fetchval(
                    "SELECT client_secret FROM oidc_providers WHERE tenant_id = $1",
                    tenant.tenant_id))
            finally:
                await conn.close()
            assert CLIENT_SECRET.encode() not in stored, "the secret is sealed"
            got = await http.get("/v1/settings/oidc", headers=admin)
            assert got.status_code == 200 and CLIENT_SECRET not in got.text
            agent_key = await owner.key(tenant.tenant_id, "agent",
                                        await owner.agent(tenant.tenant_id))
            r = await http.get("/v1/settings/oidc", headers=auth(agent_key))
            assert r.status_code == 403
            button = (await http.get(f"/v1/auth/oidc/{tenant.slug}")).json()
            assert button == {"label": "Example ID",
                              "start_url": f"/v1/auth/oidc/{tenant.tenant_id}/start"}

            # A good sign-in: the same session, cookie and event as a password's.
            agent_id = await owner.agent(tenant.tenant_id)
            email = f"{agent_id}@example.com"
            back, first = await _sign_in(http, tenant, provider, email=email.upper())
            assert back.status_code == 303, back.text
            assert back.headers["Location"].startswith("/console/?signed_in=oidc")
            assert "hd_refresh=hdr_" in back.headers["set-cookie"]
            assert first["redirect_uri"] == shown["redirect_uri"]
            r = await http.post("/v1/auth/refresh")
            assert r.status_code == 200, r.text
            assert r.json()["agent_id"] == str(agent_id) and r.json()["role"] == "agent"
            me = await http.get("/v1/auth/me", headers={
                "Authorization": f"Bearer {r.json()['access_token']}"})
            assert me.json()["agent"]["id"] == str(agent_id)
            assert me.json()["credential"]["kind"] == "session"
            assert provider.jwks_fetches == 1

            # The same callback again: its state is spent (and so is the code).
            http.cookies.set("hd_oidc", first["state"], path="/v1/auth/oidc")
            again = await http.get(f"/v1/auth/oidc/{tenant.slug}/callback",
                                   params={"code": "x", "state": first["state"]})
            _refused(again, "completed already")
            # A callback this browser did not start.
            http.cookies.clear()
            r = await http.get(f"/v1/auth/oidc/{tenant.slug}/start")
            _code, query = provider.authorize(r.headers["Location"], email=email)
            http.cookies.clear()
            r = await http.get(f"/v1/auth/oidc/{tenant.slug}/callback",
                               params={"code": _code, "state": query["state"]})
            _refused(r, "not started in this browser")

            # The person declined at the provider; a provider naming another issuer.
            for extra, reason in (({"error": "access_denied"}, "access_denied"),
                                  ({"iss": "https://evil.example.com"}, "another issuer")):
                http.cookies.clear()
                r = await http.get(f"/v1/auth/oidc/{tenant.slug}/start")
                _code, query = provider.authorize(r.headers["Location"], email=email)
                params = {"state": query["state"], "scope": "openid email", **extra}
                if "error" not in extra:
                    params["code"] = _code
                _refused(await http.get(f"/v1/auth/oidc/{tenant.slug}/callback",
                                        params=params), reason)

            now = int(time.time())
            _refused((await _sign_in(http, tenant, provider, email=email,
                                     aud="someone-else"))[0], "another client")
            _refused((await _sign_in(http, tenant, provider, email=email, iat=now - 7200,
                                     exp=now - 3600))[0], "expired")
            _refused((await _sign_in(http, tenant, provider, email=email,
                                     nonce=first["nonce"]))[0], "nonce")
            _refused((await _sign_in(http, tenant, provider, email=email,
                                     nonce=None))[0], "nonce")
            _refused((await _sign_in(http, tenant, provider, email=email,
                                     email_verified=False))[0], "not verified")
            _refused((await _sign_in(http, tenant, provider,
                                     email=f"{agent_id}@example.org"))[0], "allowed domain")
            _refused((await _sign_in(http, tenant, provider,
                                     email="nobody@example.com"))[0], "no agent")
            gone = await owner.agent(tenant.tenant_id, active=False)
            _refused((await _sign_in(http, tenant, provider,
                                     email=f"{gone}@example.com"))[0], "deactivated")
            assert provider.jwks_fetches == 1, "known keys come from the cache"

            # A key the provider does not publish: the JWKS is fetched again once
            # (past the refetch interval), and the key is still unknown.
            provider.add_key("k2", publish=False)
            ticks.now += 31
            _refused((await _sign_in(http, tenant, provider, email=email, kid="k2"))[0],
                     "does not publish")
            assert provider.jwks_fetches == 2
            # Within the interval, made-up kids fetch nothing.
            _refused((await _sign_in(http, tenant, provider, email=email, kid="k2"))[0],
                     "does not publish")
            assert provider.jwks_fetches == 2
            # The provider rotates to k2: an unknown kid refreshes the cached JWKS.
            provider.rotate("k2")
            ticks.now += 31
            back, _query = await _sign_in(http, tenant, provider, email=email, kid="k2")
            assert back.status_code == 303, back.text
            assert provider.jwks_fetches == 3
            # ...and k1, withdrawn, signs nothing any more.
            ticks.now += 31
            _refused((await _sign_in(http, tenant, provider, email=email, kid="k1"))[0],
                     "does not publish")

            # Agents added at first sign-in, once the tenant allows it (the secret kept).
            r = await http.put("/v1/settings/oidc", headers=admin,
                               json={**body, "create_agents": True})
            assert r.status_code == 200 and r.json()["version"] == 2, r.text
            back, _query = await _sign_in(http, tenant, provider, email="new@example.com")
            assert back.status_code == 303, back.text
            r = await http.post("/v1/auth/refresh")
            new_agent = r.json()["agent_id"]
            listed = await http.get(f"/v1/agents/{new_agent}", headers=admin)
            assert listed.json()["email"] == "new@example.com"
            assert listed.json()["role"] == "agent" and listed.json()["name"] == "Sam"

            assert (await http.delete("/v1/settings/oidc", headers=admin)).status_code == 200
            assert (await http.get(f"/v1/auth/oidc/{tenant.slug}")).json() == nothing

    conn = await asyncpg.connect(owner.db.admin_url)
    try:
        left = await conn.fetchval("SELECT count(*) FROM oidc_providers")
        types = await conn.fetch(
            "SELECT type, actor_id FROM events WHERE tenant_id = $1 AND type = ANY($2) "
            "ORDER BY seq", tenant.tenant_id,
            ["AgentSignedIn", "OidcProviderSet", "OidcProviderRemoved", "AgentAdded"])
    finally:
        await conn.close()
    assert left == 0
    kinds = [row["type"] for row in types]
    assert kinds.count("OidcProviderSet") == 2 and kinds[-1] == "OidcProviderRemoved"
    signed_in = [row["actor_id"] for row in types if row["type"] == "AgentSignedIn"]
    assert signed_in[0] == str(agent_id) and signed_in[-1] == new_agent
    assert len(signed_in) == 3
    assert uuid.UUID(new_agent)
