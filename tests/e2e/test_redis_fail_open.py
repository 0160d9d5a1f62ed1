"""Redis is allowed to die: requests are served whatever Redis does.

A real redis-server owned by the test is killed under load and restarted; a fake
Redis that accepts connections and never answers costs a request at most the short
timeout, and then nothing once the breaker opens.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from api.app import create_app
from api.config import ProcessSettings
from api.ops.redis_guard import OPEN
from tests.e2e.conftest import asgi_client
from tests.support.pg import TestDatabase as Db
from tests.support.redis import RedisServer, SilentServer
from tests.support.wait import until


class FakeMonotonic:
    """The breaker's clock: moved by the test instead of sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _settings(db: Db, redis_url: str, **kw: object) -> ProcessSettings:
    values: dict[str, object] = {"redis_socket_timeout": 0.1, "redis_connect_timeout": 0.1,
                                 "redis_breaker_failures": 3, "redis_breaker_cooldown": 5.0,
                                 **kw}
    return ProcessSettings(database_url=db.runtime_url, redis_url=redis_url, db_pool_min=1,
                           db_pool_max=8, **values)  # type: ignore[arg-type]


@pytest.mark.slow  # starts a redis-server
async def test_killing_redis_under_load_fails_no_request_and_limits_return(
    db: Db, make_tenant, redis_server: RedisServer
) -> None:
    tenants = [await make_tenant(f"T{i}") for i in range(4)]
    settings = _settings(db, redis_server.url, rate_limit_per_key=8, rate_limit_window=3600)
    clock = FakeMonotonic()
    app = create_app(settings, breaker_clock=clock)
    per_client = 30
    done = 0
    async with asgi_client(app) as http:
        guard = app.state.services.redis
        async def client(secret: str) -> list[tuple[int, bool]]:
            nonlocal done
            out = []
            for _ in range(per_client):
                r = await http.get("/v1/webhooks",
                                   headers={"Authorization": f"Bearer {secret}"})
                out.append((r.status_code, "ratelimit" in r.headers))
                done += 1
                await asyncio.sleep(0)  # a yield: the clients and the killer interleave
            return out

        async def killer() -> None:
            # Kill while the clients are mid-run: a third of the way through.
            await until(lambda: done >= 40, timeout=30, interval=0.001,
                        what="the clients to get 40 answers")
            await asyncio.to_thread(redis_server.kill)

        results = await asyncio.gather(*(client(t.admin_key.secret) for t in tenants),
                                       killer())
        runs: list[list[tuple[int, bool]]] = list(results[:4])
        statuses = [s for run in runs for s, _ in run]
        assert set(statuses) <= {404, 429}, statuses
        assert 429 in statuses  # limits applied before the kill
        for run in runs:
            # Past its quota of 8, a client was still served: Redis was gone.
            assert sum(1 for s, _ in run if s == 404) > 8
            assert not run[-1][1]  # the last answers carry no limit headers

        r = await http.get("/health/ready")
        assert r.status_code == 200
        assert r.json()["checks"]["redis"]["status"] == "degraded"
        assert r.json()["checks"]["database"]["status"] == "ok"
        assert guard.breaker.state == OPEN
        assert "helpdesk_redis_circuit_state 2.0" in (await http.get("/metrics")).text

        # Back on the same port: after the cool-down the breaker probes, closes,
        # and the (fresh, empty) Redis enforces limits again.
        redis_server.start()
        h = {"Authorization": f"Bearer {tenants[0].admin_key.secret}"}
        codes = []
        for _ in range(30):
            clock.now += 6.0
            r = await http.get("/v1/webhooks", headers=h)
            codes.append(r.status_code)
            if r.status_code == 429:
                break
        assert codes[-1] == 429, codes
        assert r.headers["ratelimit-policy"] == '"key";q=8;w=3600'
        assert codes.count(404) >= 8
        r = await http.get("/health/ready")
        assert r.json()["checks"]["redis"]["status"] == "ok"
        assert "helpdesk_redis_circuit_state 0.0" in (await http.get("/metrics")).text


async def test_a_redis_that_never_answers_costs_at_most_the_timeout(
    db: Db, make_tenant
) -> None:
    t = await make_tenant("A")
    silent = SilentServer()
    await silent.start()
    settings = _settings(db, silent.url, redis_socket_timeout=0.05,
                         redis_connect_timeout=0.05, redis_breaker_failures=3,
                         redis_breaker_cooldown=600)
    app = create_app(settings)
    h = {"Authorization": f"Bearer {t.admin_key.secret}"}
    try:
        async with asgi_client(app) as http:
            latencies = []
            for _ in range(20):
                started = time.perf_counter()
                r = await http.get("/v1/webhooks", headers=h)
                latencies.append(time.perf_counter() - started)
                assert r.status_code == 404
                assert "ratelimit" not in r.headers
            # Each of the first few waits for the 0.1 s operation bound; generous
            # margin for a loaded machine, far below any client timeout.
            assert max(latencies) < 1.0, latencies
            # Then the breaker is open: Redis is not even tried any more.
            assert silent.connections <= 3
            r = await http.get("/health/ready")
            assert r.status_code == 200
            assert r.json()["checks"]["redis"]["status"] == "degraded"
            assert r.json()["checks"]["redis"]["latency_ms"] < 50
    finally:
        await silent.close()
