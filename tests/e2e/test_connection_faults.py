"""Database connections that die under load: every request whose connection dies gets
a 503 ``database_unavailable`` (never a 500, never a connection reset), nothing
acknowledged is lost, nothing is half-written, and the pool recovers by itself.

A real ``helpdesk serve`` process on a Postgres this test owns, driven by real HTTP
clients over TCP (so a reset is visible as one): first a superuser terminates the
runtime role's busy backends every 0.3 s, then the server is shut down (``pg_ctl stop
-m fast``) with requests in flight and started again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from handlers.tenants import create_tenant_as_operator
from migrations.runner import migrate
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, with_database
from tests.support.pgserver import PostgresServer, free_port
from tests.support.wait import until

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
CLIENTS = 8
KILL_EVERY = 0.3
CHAOS_SECONDS = 6.0

TICKET = {"subject": "Printer on fire", "body": "It is really on fire.",
          "requester": {"email": "ann@example.com", "name": "Ann"}, "priority": "high",
          "source": "email", "tags": ["hardware"]}


@dataclass
class Outcomes:
    """What every request got, by phase."""

    created: list[str] = field(default_factory=list)  # ids of tickets answered 201
    counts: Counter[str] = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)  # anything but 201 or a proper 503
    keyed: dict[str, str] = field(default_factory=dict)  # Idempotency-Key -> ticket id
    replays: int = 0
    phase: str = "warm-up"  # an answer counts in the phase in which it arrives
    sent: dict[int, float] = field(default_factory=dict)  # client -> its request's start

    def answered_since(self, instant: float) -> bool:
        """Every request sent before ``instant`` has been answered."""
        return all(started > instant for started in self.sent.values())

    def record(self, outcome: str, detail: str = "") -> None:
        self.counts[f"{self.phase}:{outcome}"] += 1
        if outcome not in ("201", "503"):
            self.bad.append(f"{self.phase}: {outcome} {detail}"[:400])

    def total(self, outcome: str) -> int:
        return sum(n for key, n in self.counts.items() if key.endswith(f":{outcome}"))


async def _client(n: int, base: str, key: str, out: Outcomes, stop: asyncio.Event, *,
                  keyed: bool) -> None:
    """POST tickets until ``stop``. A keyed client sends an Idempotency-Key and
    retries the same request after a 503 or a reset until it is answered, and
    remembers which ticket each key got (it names the key in the subject)."""
    pending: str | None = None  # the key of a request to retry
    async with httpx.AsyncClient(base_url=base, timeout=20.0) as http:
        while not stop.is_set() or pending is not None:
            headers = {"Authorization": f"Bearer {key}"}
            body = TICKET
            if keyed:
                pending = pending or uuid.uuid4().hex
                headers["Idempotency-Key"] = pending
                body = {**TICKET, "subject": f"keyed {pending}"}
            out.sent[n] = time.monotonic()
            try:
                r = await http.post("/v1/tickets", json=body, headers=headers)
            except httpx.TransportError as exc:  # a reset, a refused or cut connection
                out.record("reset", repr(exc))
                await asyncio.sleep(0.05)
                continue
            finally:
                del out.sent[n]
            if r.status_code == 201:
                out.created.append(r.json()["id"])
                out.record("201")
                if pending is not None:
                    out.keyed[pending] = r.json()["id"]
                    out.replays += r.headers.get("idempotent-replayed") == "true"
                pending = None
            elif (r.status_code == 503
                  and r.headers.get("content-type") == "application/problem+json"
                  and r.json().get("code") == "database_unavailable"
                  and r.headers.get("retry-after") == "1"):
                out.record("503")
                await asyncio.sleep(0.02)
            else:
                out.record(str(r.status_code), r.text)
                pending = None


async def _terminator(admin_url: str, stop: asyncio.Event) -> int:
    """Every KILL_EVERY seconds, end the runtime role's busy backends; returns how many."""
    ended = 0
    conn = await asyncpg.connect(admin_url)
    try:
        while not stop.is_set():
            ended += await conn.fetchval(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                "FROM pg_stat_activity WHERE usename = $1 AND state <> 'idle' "
                "AND pid <> pg_backend_pid()", RUNTIME_USER)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), KILL_EVERY)
    finally:
        await conn.close()
    return ended


@contextlib.asynccontextmanager
async def _serve(database_url: str) -> AsyncIterator[tuple[str, Any]]:
    """``helpdesk serve`` in its own process; yields its base URL and its stderr log."""
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "LOG_LEVEL": "warning",
           "DB_POOL_MIN": "2", "DB_POOL_MAX": "8", "DB_CONNECT_TIMEOUT": "1",
           "DB_ACQUIRE_TIMEOUT": "2", "RUN_SCHEDULER": "false"}
    env.pop("REDIS_URL", None)
    with tempfile.TemporaryFile() as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "api.cli.main", "serve", "--port", str(port),
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log)
        base = f"http://127.0.0.1:{port}"
        try:
            async with httpx.AsyncClient() as http:

                async def live() -> bool:
                    assert proc.returncode is None, _read(log)
                    try:
                        return (await http.get(f"{base}/health/live")).status_code == 200
                    except httpx.TransportError:
                        return False

                await until(live, timeout=30, interval=0.05,
                            what=lambda: f"serve to come up: {_read(log)}")
            yield base, log
        finally:
            if proc.returncode is None:
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def _read(log: Any) -> str:
    log.seek(0)
    text: str = log.read().decode(errors="replace")
    return text


async def _until_created(base: str, key: str, within: float) -> float:
    """Seconds until a ticket can be opened again (fails after ``within``: the pool
    must recover by itself, promptly)."""
    started = time.monotonic()
    async with httpx.AsyncClient(base_url=base, timeout=5.0) as http:

        async def created() -> bool:
            try:
                r = await http.post("/v1/tickets", json=TICKET,
                                    headers={"Authorization": f"Bearer {key}"})
            except httpx.TransportError:
                return False
            return r.status_code == 201

        await until(created, timeout=within, interval=0.1,
                    what="the service to open tickets again")
    return time.monotonic() - started


async def test_dying_connections_answer_503_lose_nothing_and_recover() -> None:
    pg = await asyncio.to_thread(PostgresServer)
    try:
        await asyncio.to_thread(pg.start)
        await _scenario(pg)
    finally:
        await asyncio.to_thread(pg.destroy)


async def _scenario(pg: PostgresServer) -> None:
    await migrate(pg.url, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
    tenant = await create_tenant_as_operator(pg.url, "Faults")
    key = tenant.admin_key.secret
    runtime_url = with_database(pg.url, "postgres", user=RUNTIME_USER,
                                password=RUNTIME_PASSWORD)
    out = Outcomes()
    async with _serve(runtime_url) as (base, log):
        await _until_created(base, key, within=10)

        # 1. Busy backends terminated every 0.3 s under 8 clients.
        out.phase = "terminate"
        stop_clients, stop_killer = asyncio.Event(), asyncio.Event()
        clients = [asyncio.create_task(_client(i, base, key, out, stop_clients,
                                               keyed=i % 2 == 1))
                   for i in range(CLIENTS)]
        killer = asyncio.create_task(_terminator(pg.url, stop_killer))
        await asyncio.sleep(CHAOS_SECONDS)  # the length of the phase, not a wait
        stop_killer.set()
        ended = await killer
        # Answers to requests that were in flight during the last round still count
        # here, whenever they arrive.
        killed_at = time.monotonic()
        await until(lambda: out.answered_since(killed_at),
                    what="the requests of the last round to be answered")

        # 2. No more faults: the same pool serves again, by itself. (Phase lengths from
        # here on are load, not waits.)
        out.phase = "recovered"
        await asyncio.sleep(1.0)
        recovered_503 = out.counts["recovered:503"]

        # 3. Postgres shuts down with requests in flight, and comes back.
        out.phase = "shutdown"
        await asyncio.to_thread(pg.stop, "fast")
        await asyncio.sleep(1.0)
        out.phase = "restarted"
        await asyncio.to_thread(pg.start)
        back_after = await _until_created(base, key, within=10)
        await asyncio.sleep(0.5)
        stop_clients.set()
        await asyncio.gather(*clients)
        server_log = _read(log)

    summary = ", ".join(f"{k}={v}" for k, v in sorted(out.counts.items()))
    print(f"\nconnection faults: {ended} backends terminated; {summary}; "
          f"201={out.total('201')} 503={out.total('503')} "
          f"other={len(out.bad)}; {len(out.keyed)} keyed, {out.replays} replayed; "
          f"served again {back_after:.1f} s after restart")
    assert not out.bad, f"{len(out.bad)} bad answers: {out.bad[:5]}\n{server_log[-3000:]}"
    errors = [line for line in server_log.splitlines()
              if '"level":"error"' in line or '"level":"critical"' in line]
    assert not errors, errors[:3]
    assert ended >= 10, "the test did not terminate enough backends to mean anything"
    assert out.counts["terminate:503"] > 0 and out.counts["terminate:201"] > 0
    assert out.counts["shutdown:503"] > 0
    assert recovered_503 == 0, "503s after the faults stopped: the pool did not recover"
    assert out.counts["restarted:201"] > 0

    # Nothing acknowledged is lost, nothing is half-written.
    admin = await asyncpg.connect(pg.url)
    try:
        rows = await admin.fetch(
            "SELECT t.id::text AS id, t.version, "
            "       (SELECT max(e.version) FROM events e WHERE e.tenant_id = t.tenant_id "
            "          AND e.stream_id = t.id) AS stream_version "
            "FROM tickets t WHERE t.tenant_id = $1", tenant.tenant_id)
        opened = {r["id"] for r in await admin.fetch(
            "SELECT stream_id::text AS id FROM events WHERE tenant_id = $1 "
            "AND type = 'TicketOpened'", tenant.tenant_id)}
        by_key = {r["subject"].removeprefix("keyed "): r["ids"] for r in await admin.fetch(
            "SELECT subject, array_agg(id::text) AS ids FROM tickets "
            "WHERE tenant_id = $1 AND subject LIKE 'keyed %' GROUP BY subject",
            tenant.tenant_id)}
        gaps = await admin.fetchval(
            "SELECT count(*) - (max(seq) - min(seq) + 1) FROM events WHERE tenant_id = $1",
            tenant.tenant_id)
    finally:
        await admin.close()
    tickets = {r["id"]: r for r in rows}
    missing = set(out.created) - tickets.keys()
    assert not missing, f"{len(missing)} acknowledged tickets are gone"
    assert tickets.keys() == opened, "a ticket without its events, or events without it"
    assert all(r["version"] == r["stream_version"] for r in rows)
    assert gaps == 0
    # A request retried with its Idempotency-Key took effect exactly once, whether its
    # first attempt committed before the connection died or not.
    assert {k: by_key.get(k) for k in out.keyed} == {k: [v] for k, v in out.keyed.items()}
