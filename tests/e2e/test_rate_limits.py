"""Rate limits per API key and per client address, against a real redis-server."""

from __future__ import annotations

import re

import pytest

from api.app import create_app
from api.config import ProcessSettings
from tests.e2e.conftest import asgi_client
from tests.support.pg import TestDatabase as Db
from tests.support.redis import RedisServer


def _settings(db: Db, redis_url: str | None, **kw: object) -> ProcessSettings:
    return ProcessSettings(database_url=db.runtime_url, redis_url=redis_url, db_pool_min=1,
                           db_pool_max=4, **kw)  # type: ignore[arg-type]


@pytest.mark.slow  # starts a redis-server
async def test_exceeding_the_limit_gives_429_with_headers_per_key(
    db: Db, make_tenant, redis_server: RedisServer
) -> None:
    a = await make_tenant("A")
    b = await make_tenant("B")
    app = create_app(_settings(db, redis_server.url, rate_limit_per_key=3,
                               rate_limit_window=60))
    async with asgi_client(app) as http:
        ha = {"Authorization": f"Bearer {a.admin_key.secret}"}
        seen = []
        for _ in range(3):
            r = await http.get("/v1/webhooks", headers=ha)
            assert r.status_code == 404, r.text  # served: no webhook configured yet
            assert r.headers["ratelimit-policy"] == '"key";q=3;w=60'
            seen.append(r.headers["ratelimit"])
        assert [re.match(r'"key";r=(\d+);t=\d+$', s).group(1) for s in seen] == ["2", "1", "0"]

        r = await http.get("/v1/webhooks", headers=ha)
        assert r.status_code == 429
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["code"] == "rate_limited"
        retry_after = int(r.headers["retry-after"])
        assert 1 <= retry_after <= 20  # one emission interval: 60 s / 3
        assert r.headers["ratelimit-policy"] == '"key";q=3;w=60'
        m = re.match(r'"key";r=0;t=(\d+)$', r.headers["ratelimit"])
        assert m and 40 <= int(m.group(1)) <= 60

        # Another key has its own budget.
        r = await http.get("/v1/webhooks",
                           headers={"Authorization": f"Bearer {b.admin_key.secret}"})
        assert r.status_code == 404
        assert r.headers["ratelimit"].startswith('"key";r=2;')

        # Health and metrics are not limited.
        r = await http.get("/health/live")
        assert "ratelimit" not in r.headers
        metrics = (await http.get("/metrics")).text
        assert "helpdesk_rate_limited_total 1.0" in metrics
        assert 'route="unmatched",status="429"} 1.0' in metrics


@pytest.mark.slow  # starts a redis-server
async def test_requests_without_a_key_are_limited_per_address(
    db: Db, redis_server: RedisServer
) -> None:
    app = create_app(_settings(db, redis_server.url, rate_limit_per_address=2))
    async with asgi_client(app, client=("10.0.0.1", 5000)) as one, \
            asgi_client(app, client=("10.0.0.2", 5000)) as two:
        assert [(await one.get("/v1/webhooks")).status_code for _ in range(3)] == [401, 401, 429]
        r = await two.get("/v1/webhooks")
        assert r.status_code == 401
        assert r.headers["ratelimit-policy"] == '"address";q=2;w=60'


@pytest.mark.slow  # starts a redis-server
async def test_made_up_tokens_use_up_their_address_budget(
    db: Db, make_tenant, redis_server: RedisServer
) -> None:
    a = await make_tenant("A")
    app = create_app(_settings(db, redis_server.url, rate_limit_per_address=2,
                               rate_limit_per_key=100))
    valid = {"Authorization": f"Bearer {a.admin_key.secret}"}
    async with asgi_client(app, client=("10.0.0.3", 5000)) as sprayer, \
            asgi_client(app, client=("10.0.0.4", 5000)) as other:
        # Valid requests never count against an address's failure budget.
        assert [(await sprayer.get("/v1/webhooks", headers=valid)).status_code
                for _ in range(4)] == [404] * 4
        codes = [(await sprayer.get("/v1/webhooks",
                                    headers={"Authorization": f"Bearer hd_made_up_{i}"}))
                 for i in range(3)]
        assert [r.status_code for r in codes] == [401, 401, 429]
        refused = codes[2]
        assert refused.headers["ratelimit-policy"] == '"auth-failures";q=2;w=60'
        assert "failed authentications" in refused.json()["detail"]
        assert int(refused.headers["retry-after"]) >= 1
        # Until the bucket drains, the address's requests with tokens wait too ...
        assert (await sprayer.get("/v1/webhooks", headers=valid)).status_code == 429
        # ... while other addresses are untouched.
        assert (await other.get("/v1/webhooks", headers=valid)).status_code == 404
        r = await other.get("/v1/webhooks", headers={"Authorization": "Bearer hd_nope"})
        assert r.status_code == 401


@pytest.mark.slow  # starts a redis-server
async def test_failed_sign_ins_use_up_their_address_budget(
    db: Db, make_tenant, redis_server: RedisServer
) -> None:
    a = await make_tenant("A")
    app = create_app(_settings(db, redis_server.url, rate_limit_per_address=2,
                               rate_limit_per_key=100, password_hash_memory_kib=1024,
                               password_hash_time_cost=1))
    admin = {"Authorization": f"Bearer {a.admin_key.secret}"}
    async with asgi_client(app, client=("10.0.0.5", 5000)) as setup, \
            asgi_client(app, client=("10.0.0.6", 5000)) as guesser, \
            asgi_client(app, client=("10.0.0.7", 5000)) as other:
        invited = (await setup.post("/v1/agents/invitations", headers=admin,
                                    json={"email": "pat@example.com", "name": "Pat"})).json()
        accepted = await setup.post("/v1/auth/invitations/accept",
                                    json={"token": invited["token"], "password": "p" * 12})
        assert accepted.status_code == 200

        def attempt(password: str) -> dict[str, str]:
            return {"tenant": str(a.tenant_id), "email": "pat@example.com",
                    "password": password}

        codes = [(await guesser.post("/v1/auth/sign-in", json=attempt(f"guess {i}"))).status_code
                 for i in range(2)]
        assert codes == [401, 401]
        # The failures are the address's: its made-up bearer tokens now wait as well ...
        r = await guesser.get("/v1/webhooks", headers={"Authorization": "Bearer hd_made_up"})
        assert r.status_code == 429
        assert r.headers["ratelimit-policy"] == '"auth-failures";q=2;w=60'
        # ... and so does the right password, from there; not from elsewhere.
        assert (await guesser.post("/v1/auth/sign-in", json=attempt("p" * 12))).status_code == 429
        assert (await other.post("/v1/auth/sign-in", json=attempt("p" * 12))).status_code == 200


@pytest.mark.slow  # starts a redis-server
async def test_failed_portal_sign_ins_use_up_their_address_budget(
    db: Db, make_tenant, redis_server: RedisServer
) -> None:
    a = await make_tenant("A")
    app = create_app(_settings(db, redis_server.url, rate_limit_per_address=2,
                               rate_limit_per_key=100, password_hash_memory_kib=1024,
                               password_hash_time_cost=1))
    admin = {"Authorization": f"Bearer {a.admin_key.secret}"}
    async with asgi_client(app, client=("10.0.0.5", 5000)) as setup, \
            asgi_client(app, client=("10.0.0.6", 5000)) as guesser, \
            asgi_client(app, client=("10.0.0.7", 5000)) as other:
        contact = (await setup.post("/v1/contacts", headers=admin,
                                    json={"email": "ann@example.com"})).json()
        link = (await setup.post(f"/v1/contacts/{contact['id']}/portal-link",
                                 headers=admin)).json()
        done = await setup.post("/v1/portal/auth/password",
                                json={"token": link["token"], "password": "p" * 12})
        assert done.status_code == 200

        def attempt(password: str) -> dict[str, str]:
            return {"tenant": str(a.tenant_id), "email": "ann@example.com",
                    "password": password}

        codes = [(await guesser.post("/v1/portal/auth/sign-in",
                                     json=attempt(f"guess {i}"))).status_code
                 for i in range(2)]
        assert codes == [401, 401]
        refused = await guesser.post("/v1/portal/auth/sign-in", json=attempt("p" * 12))
        assert refused.status_code == 429
        # The staff sign-in shares the address's failures budget.
        staff = await guesser.post("/v1/auth/sign-in", json=attempt("p" * 12))
        assert staff.status_code == 429
        ok = await other.post("/v1/portal/auth/sign-in", json=attempt("p" * 12))
        assert ok.status_code == 200


async def test_without_redis_url_nothing_is_limited_and_ready_says_dormant(
    db: Db, make_tenant
) -> None:
    t = await make_tenant("A")
    app = create_app(_settings(db, None, rate_limit_per_key=1))
    async with asgi_client(app) as http:
        h = {"Authorization": f"Bearer {t.admin_key.secret}"}
        for _ in range(3):
            r = await http.get("/v1/webhooks", headers=h)
            assert r.status_code == 404
            assert "ratelimit" not in r.headers
        r = await http.get("/health/ready")
        assert r.status_code == 200
        assert r.json()["checks"]["redis"]["status"] == "dormant"
        assert r.headers["x-request-id"]
