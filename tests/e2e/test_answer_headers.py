"""Every header the API sets on purpose is declared on the answer that carries it,
and every header declared as always sent is sent: on successes (ETag, Location,
Idempotent-Replayed, RateLimit, Read-From, Set-Cookie) and on problems
(WWW-Authenticate, Retry-After), with rate limits enforced so their headers are there.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from api.app import create_app
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support import pg
from tests.support.contract import header_drift
from tests.support.redis import RedisServer

PASSWORD = "a long enough password"


class Recorder:
    """Sends requests and keeps, for each, what the document says is wrong with its
    headers."""

    def __init__(self, http: httpx.AsyncClient, document: dict[str, Any]) -> None:
        self.http, self.document = http, document
        self.drift: list[str] = []
        self.seen: set[tuple[str, str, int]] = set()

    async def __call__(self, method: str, template: str, url: str | None = None,
                       **kwargs: Any) -> httpx.Response:
        answer = await self.http.request(method, url or template, **kwargs)
        self.drift += header_drift(self.document, method, template, answer.status_code,
                                   answer.headers)
        self.seen.add((method, template, answer.status_code))
        return answer


@pytest.mark.slow  # starts a redis-server
async def test_headers_sent_are_headers_declared(db: pg.TestDatabase,
                                                 redis_server: RedisServer, tenant):
    settings = app_settings(db, redis_url=redis_server.url)
    async with asgi_client(create_app(settings)) as http:
        call = Recorder(http, (await http.get("/openapi.json")).json())
        h = auth(tenant.admin_key)
        key = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
        opened = await call("POST", "/v1/tickets", json=NEW_TICKET, headers=h | key)
        assert opened.status_code == 201 and opened.headers["location"]
        again = await call("POST", "/v1/tickets", json=NEW_TICKET, headers=h | key)
        assert again.headers["idempotent-replayed"] == "true"
        tid = opened.json()["id"]
        one = await call("GET", "/v1/tickets/{ticket_id}", f"/v1/tickets/{tid}", headers=h)
        etag = one.headers["etag"]
        assert one.headers["ratelimit"] and one.headers["ratelimit-policy"]
        state = "/v1/tickets/{ticket_id}/state"
        moved = await call("POST", state, f"/v1/tickets/{tid}/state", headers=h | {
            "If-Match": etag}, json={"state": "pending"})
        assert moved.status_code == 200, moved.text
        stale = await call("POST", state, f"/v1/tickets/{tid}/state", headers=h | {
            "If-Match": etag}, json={"state": "open"})
        assert stale.status_code == 412 and stale.json()["current_version"] > 0
        summary = await call("GET", "/v1/analytics/summary", headers=h)
        assert summary.headers["read-from"] == "primary"
        await call("GET", "/v1/settings", headers=h)
        await call("GET", "/v1/meta/error-codes", headers=h)
        anonymous = await call("GET", "/v1/tickets")
        assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"]
        await call("GET", "/health/ready")
        await call("GET", "/metrics")
        # Signing in and out: the refresh cookie.
        invitation = (await http.post("/v1/agents/invitations", headers=h, json={
            "email": f"{uuid.uuid4()}@example.com", "name": "Pat"})).json()
        accepted = await call("POST", "/v1/auth/invitations/accept", json={
            "token": invitation["token"], "password": PASSWORD})
        signed = await call("POST", "/v1/auth/sign-in", json={
            "tenant": str(tenant.tenant_id), "email": invitation["email"],
            "password": PASSWORD})
        assert signed.status_code == 200 and signed.headers["set-cookie"], accepted.text
        refreshed = await call("POST", "/v1/auth/refresh")
        assert refreshed.status_code == 200
        http.cookies.clear()
        refused = await call("POST", "/v1/auth/refresh",
                             headers={"Cookie": "hd_refresh=spent"})
        assert refused.status_code == 401
        await call("POST", "/v1/auth/sign-out")
        assert call.drift == [], "\n".join(call.drift)
        assert len(call.seen) == 15  # every answer above, distinct by status
