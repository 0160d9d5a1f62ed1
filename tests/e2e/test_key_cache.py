"""API key lookups are remembered per process, and a revocation reaches every process
at once (api/http/keycache.py): in the revoking process when its command commits, in
the others by the database's notification."""

from __future__ import annotations

import time

import httpx
import pytest

from api.http.keycache import KeyCache
from tests.e2e.conftest import auth
from tests.e2e.ws_support import free_port, serve_process
from tests.support.wait import until


def lookups(metrics_text: str) -> dict[str, float]:
    out = {"hit": 0.0, "miss": 0.0}
    for line in metrics_text.splitlines():
        if line.startswith("helpdesk_key_lookups_total{"):
            result = line.split('result="', 1)[1].split('"', 1)[0]
            out[result] = float(line.rsplit(" ", 1)[1])
    return out


async def test_repeated_requests_are_answered_from_the_cache_until_a_revocation(
        http, tenant, services):
    admin = auth(tenant.admin_key)
    issued = (await http.post("/v1/api-keys", json={"name": "k", "role": "auditor"},
                              headers=admin)).json()
    key = auth(issued["secret"])
    before = lookups((await http.get("/metrics")).text)
    for _ in range(5):
        assert (await http.get("/v1/events", headers=key)).status_code == 200
    after = lookups((await http.get("/metrics")).text)
    assert after["miss"] - before["miss"] == 1  # the first request only
    assert after["hit"] - before["hit"] == 4
    assert services.keys.active
    revoked = await http.delete(f"/v1/api-keys/{issued['id']}", headers=admin)
    assert revoked.status_code == 200
    # In the revoking process, at once: no notification to wait for.
    r = await http.get("/v1/events", headers=key)
    assert r.status_code == 401 and r.json()["code"] == "invalid_api_key"


async def test_a_key_is_looked_up_every_time_while_no_one_listens(pool, tenant):
    cache = KeyCache(pool, ttl=60)  # never started: it could not hear a revocation
    counted: list[str] = []
    cache._counted = counted.append  # type: ignore[method-assign]
    for _ in range(3):
        principal = await cache.lookup(tenant.admin_key.secret)
        assert principal is not None and principal.tenant_id == tenant.tenant_id
    assert counted == ["miss", "miss", "miss"]
    assert await cache.lookup("hd_" + "x" * 43) is None
    assert await cache.lookup("not a key") is None


@pytest.mark.slow
async def test_a_key_revoked_in_one_process_is_refused_by_another_at_once(db, http, tenant):
    admin = auth(tenant.admin_key)
    issued = (await http.post("/v1/api-keys", json={"name": "k", "role": "auditor"},
                              headers=admin)).json()
    key = auth(issued["secret"])
    port = free_port()
    async with serve_process(db.runtime_url, port), httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}") as other:
        for _ in range(3):
            assert (await other.get("/v1/events", headers=key)).status_code == 200
        seen = lookups((await other.get("/metrics")).text)
        assert seen["hit"] >= 2, seen  # the other process answers from its cache
        revoked = await http.delete(f"/v1/api-keys/{issued['id']}", headers=admin)
        assert revoked.status_code == 200
        started = time.monotonic()

        async def refused() -> bool:
            return (await other.get("/v1/events", headers=key)).status_code == 401

        await until(refused, timeout=5, interval=0.005,
                    what="the other process to refuse the revoked key")
        # Milliseconds in practice; far below the cache's 10 s time-to-live.
        assert time.monotonic() - started < 2.0
