"""Reads that tolerate lag on a real streaming replica (READ_DATABASE_URL).

The module starts its own primary and a replica made from it with ``pg_basebackup -R``
(tests/support/replication.py), each on a port of its own, migrates the primary and
lets the replica stream. The app runs in-process with its real lifespan, writing to
the primary and reading analytics and audit answers from the replica:

- a write on the primary, then reads on the replica that report the lag (in events
  and in seconds) while its replay is paused, until it has caught up;
- a replica further behind than READ_MAX_LAG_SECONDS is not read: the primary answers
  and readiness says ``lagging``;
- the replica stopped: analytics and audit still answer, from the primary, readiness
  says ``degraded`` (and 200), and once it is back the replica is read again;
- tenant isolation on the replica, which is connected to as the runtime role, and a
  READ_DATABASE_URL that would bypass row-level security refused at start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from api.app import create_app
from api.root import ProcessRole, UnsafeRole, running
from eventstore.pool import create_pool
from handlers.tenants import NewTenant, create_tenant_as_operator
from migrations.runner import migrate
from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, app_settings, auth
from tests.support import pg
from tests.support.http import asgi_client
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, with_database
from tests.support.pgserver import PostgresServer
from tests.support.replication import primary_server, replica_of
from tests.support.wait import until

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Pair:
    primary: PostgresServer
    replica: PostgresServer

    @property
    def primary_runtime(self) -> str:
        return with_database(self.primary.url, "postgres", user=RUNTIME_USER,
                             password=RUNTIME_PASSWORD)

    @property
    def replica_runtime(self) -> str:
        return with_database(self.replica.url, "postgres", user=RUNTIME_USER,
                             password=RUNTIME_PASSWORD)

    def database(self) -> pg.TestDatabase:
        """The primary as app_settings takes it."""
        return pg.TestDatabase("postgres", self.primary.url, self.primary_runtime)


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    primary = primary_server()
    replica: PostgresServer | None = None
    try:
        primary.start()
        import asyncio

        asyncio.run(migrate(primary.url, runtime_user=RUNTIME_USER,
                            runtime_password=RUNTIME_PASSWORD))
        replica = replica_of(primary)
        replica.start()
        yield Pair(primary, replica)
    finally:
        if replica is not None:
            replica.destroy()
        primary.destroy()


def settings_for(pair: Pair, **over: Any) -> Any:
    return app_settings(pair.database(), read_database_url=pair.replica_runtime,
                        read_probe_seconds=0.1, db_connect_timeout=1.0, **over)


@asynccontextmanager
async def served(pair: Pair, **over: Any) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(create_app(settings_for(pair, **over))) as http:
        yield http


async def project(pair: Pair) -> None:
    """Apply every committed event to the analytics read models, on the primary."""
    pool = await create_pool(pair.primary_runtime, min_size=1, max_size=2)
    try:
        projector = Projector(pool)
        await projector.ensure_checkpoints()
        await projector.drain()
    finally:
        await pool.close()


async def replica_sql(pair: Pair, sql: str) -> Any:
    conn = await asyncpg.connect(pair.replica.url)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


async def pause_replay(pair: Pair) -> None:
    """Pause replay on the replica and wait until it has (a pause is only requested
    at first: replay goes on until the startup process sees the request)."""
    await replica_sql(pair, "SELECT pg_wal_replay_pause()")
    await until(lambda: replica_state_is(pair, "paused"), timeout=10,
                what="replay on the replica to pause")


async def replica_state_is(pair: Pair, state: str) -> bool:
    return bool(await replica_sql(pair, "SELECT pg_get_wal_replay_pause_state()") == state)


async def summary(http: httpx.AsyncClient, tenant: NewTenant) -> dict[str, Any]:
    r = await http.get("/v1/analytics/summary", headers=auth(tenant.admin_key))
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert r.headers["read-from"] == body["read_from"]
    return body


async def open_ticket(http: httpx.AsyncClient, tenant: NewTenant, subject: str) -> str:
    r = await http.post("/v1/tickets", json=NEW_TICKET | {"subject": subject},
                        headers=auth(tenant.admin_key))
    assert r.status_code == 201, r.text
    ticket_id: str = r.json()["id"]
    return ticket_id


async def caught_up(http: httpx.AsyncClient, tenant: NewTenant, tickets: int) -> dict[str, Any]:
    """The summary once the replica answers it with every ticket and no lag."""
    last: dict[str, Any] = {}

    async def fresh() -> bool:
        nonlocal last
        last = await summary(http, tenant)
        return (last["read_from"] == "replica" and last["lag"] == 0
                and last["total"]["tickets"] == tickets)

    await until(fresh, timeout=20, interval=0.05,
                what=lambda: f"the replica to catch up (last answer: {last})")
    return last


async def test_replica_answers_with_its_lag_until_it_catches_up(pair: Pair) -> None:
    tenant = await create_tenant_as_operator(pair.primary.url, "Lagging")
    async with served(pair) as http:
        first = await open_ticket(http, tenant, "one")
        await project(pair)
        before = await caught_up(http, tenant, 1)
        assert before["lag_seconds"] < 30

        # Replay stops on the replica; the primary takes a write and projects it.
        await pause_replay(pair)
        try:
            await open_ticket(http, tenant, "two")
            await project(pair)
            behind: dict[str, Any] = {}

            async def reports_lag() -> bool:
                nonlocal behind
                behind = await summary(http, tenant)
                return behind["lag_seconds"] > 0

            await until(reports_lag, timeout=10, interval=0.05,
                        what=lambda: f"a lag in seconds (last: {behind})")
            assert behind["read_from"] == "replica"
            assert behind["as_of_seq"] == before["as_of_seq"]
            assert behind["total"]["tickets"] == 1
            assert behind["lag"] > 0  # the events the replica has not replayed
            ready = (await http.get("/health/ready")).json()
            assert ready["checks"]["replica"]["status"] == "ok"
            assert "behind" in ready["checks"]["replica"]["detail"]

            # The audit routes read there too, and say so.
            verified = await http.get("/v1/audit/verify", headers=auth(tenant.admin_key))
            assert verified.status_code == 200, verified.text
            assert verified.json()["read_from"] == "replica"
            assert verified.json()["head_seq"] < before["as_of_seq"] + behind["lag"]
            assert verified.headers["read-from"] == "replica"
            # Its delay in seconds was shown above; here the header is there and sane
            # (a probe between the two answers can start counting from newer WAL).
            assert float(verified.headers["read-lag-seconds"]) >= 0
            history = await http.get(f"/v1/tickets/{first}/history",
                                     headers=auth(tenant.admin_key))
            assert history.status_code == 200 and history.headers["read-from"] == "replica"
            # The changes feed too: up to the head the replica has replayed, no further.
            changes = await http.get("/v1/changes", headers=auth(tenant.admin_key))
            assert changes.status_code == 200 and changes.headers["read-from"] == "replica"
            assert changes.json()["head_seq"] == verified.json()["head_seq"]
            assert changes.json()["next_after_seq"] == changes.json()["head_seq"]
            assert [c["data"]["subject"] for c in changes.json()["data"]
                    if c["type"] == "TicketOpened"] == ["one"]
            # A ticket read goes to the primary, whatever the replica has.
            tickets = await http.get("/v1/tickets", headers=auth(tenant.admin_key))
            assert len(tickets.json()["data"]) == 2 and "read-from" not in tickets.headers
        finally:
            await replica_sql(pair, "SELECT pg_wal_replay_resume()")

        after = await caught_up(http, tenant, 2)
        assert after["as_of_seq"] == before["as_of_seq"] + behind["lag"]

        async def no_delay() -> bool:
            return (await summary(http, tenant))["lag_seconds"] == 0

        await until(no_delay, timeout=10, what="the replica's delay to come back to 0")
        as_of = await http.get(f"/v1/tickets/{first}/as-of", params={"version": 1},
                               headers=auth(tenant.admin_key))
        assert as_of.status_code == 200 and as_of.headers["read-from"] == "replica"


async def test_a_replica_too_far_behind_is_not_read(pair: Pair) -> None:
    tenant = await create_tenant_as_operator(pair.primary.url, "Far behind")
    async with served(pair, read_max_lag_seconds=0.3) as http:
        await open_ticket(http, tenant, "one")
        await project(pair)
        await caught_up(http, tenant, 1)
        await pause_replay(pair)
        try:
            await open_ticket(http, tenant, "two")
            await project(pair)

            async def lagging() -> bool:
                ready = (await http.get("/health/ready")).json()
                return bool(ready["checks"]["replica"]["status"] == "lagging")

            await until(lagging, timeout=10, what="readiness to say the replica lags")
            ready = await http.get("/health/ready")
            assert ready.status_code == 200 and ready.json()["status"] == "ok"
            body = await summary(http, tenant)
            assert body["read_from"] == "primary" and body["lag_seconds"] == 0
            assert body["total"]["tickets"] == 2 and body["lag"] == 0
        finally:
            await replica_sql(pair, "SELECT pg_wal_replay_resume()")
        await caught_up(http, tenant, 2)


def helpdesk(pair: Pair, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("DATABASE_URL")}
    env |= {"DATABASE_URL": pair.primary_runtime, "READ_DATABASE_URL": pair.replica_runtime,
            "DB_CONNECT_TIMEOUT": "1"}
    return subprocess.run([sys.executable, "-m", "api.cli.main", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


async def test_a_stopped_replica_leaves_every_read_to_the_primary(pair: Pair) -> None:
    tenant = await create_tenant_as_operator(pair.primary.url, "Replica down")
    async with served(pair) as http:
        ticket = await open_ticket(http, tenant, "one")
        await project(pair)
        await caught_up(http, tenant, 1)
        cli = helpdesk(pair, "audit", "verify", "--tenant", str(tenant.tenant_id), "--quiet")
        assert cli.returncode == 0, cli.stderr
        assert json.loads(cli.stdout)["read_from"] == "replica"
        assert "read from the replica" in cli.stderr

        pair.replica.stop("fast")
        try:
            await open_ticket(http, tenant, "two")
            await project(pair)
            body = await summary(http, tenant)
            assert body["read_from"] == "primary" and body["total"]["tickets"] == 2
            assert body["lag"] == 0 and body["lag_seconds"] == 0
            for path in ("/v1/analytics/volume", "/v1/analytics/backlog",
                         "/v1/analytics/agents", "/v1/audit/verify",
                         f"/v1/tickets/{ticket}/history", "/v1/changes"):
                r = await http.get(path, headers=auth(tenant.admin_key))
                assert r.status_code == 200, (path, r.text)
                assert r.headers["read-from"] == "primary", path
            ready = await http.get("/health/ready")
            assert ready.status_code == 200, ready.text
            replica = ready.json()["checks"]["replica"]
            assert replica["status"] == "degraded" and replica["detail"], replica
            status = helpdesk(pair, "projections", "status")
            assert status.returncode == 0, status.stderr
            assert "read from the primary" in status.stdout
            assert str(tenant.tenant_id) in status.stdout
        finally:
            pair.replica.start()

        # Back: the probe finds it and reads go there again, by themselves.
        await caught_up(http, tenant, 2)
        ready = await http.get("/health/ready")
        assert ready.json()["checks"]["replica"]["status"] == "ok"


async def test_tenants_stay_apart_on_the_replica(pair: Pair) -> None:
    a = await create_tenant_as_operator(pair.primary.url, "Tenant A")
    b = await create_tenant_as_operator(pair.primary.url, "Tenant B")
    async with served(pair) as http:
        for _ in range(3):
            await open_ticket(http, a, "a")
        b_ticket = await open_ticket(http, b, "b")
        await project(pair)
        await caught_up(http, a, 3)
        assert (await caught_up(http, b, 1))["total"]["tickets"] == 1
        # B's ticket through A's key, read on the replica: not there for A.
        r = await http.get(f"/v1/tickets/{b_ticket}/history", headers=auth(a.admin_key))
        assert r.status_code == 404

    # The replica itself, as the runtime role: row-level security holds there.
    conn = await asyncpg.connect(pair.replica_runtime)
    try:
        assert await conn.fetchval("SELECT pg_is_in_recovery()")
        assert await conn.fetchval("SELECT count(*) FROM tickets") == 0  # no tenant armed
        async with conn.transaction(readonly=True):
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                               str(a.tenant_id))
            assert await conn.fetchval("SELECT count(*) FROM tickets") == 3
            assert await conn.fetchval("SELECT count(DISTINCT tenant_id) FROM events") == 1
    finally:
        await conn.close()


async def test_a_replica_url_that_bypasses_row_level_security_is_refused(pair: Pair) -> None:
    settings = app_settings(pair.database(), read_database_url=pair.replica.url)  # superuser
    with pytest.raises(UnsafeRole, match="READ_DATABASE_URL"):
        async with running(settings, ProcessRole.CLI):
            pass
