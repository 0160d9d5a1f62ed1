"""HTTP benchmark of the ticket API against a real uvicorn, with baselines.

Run from the repository root (as a module, so this file never shadows the standard
library's ``http``)::

    python -m bench.http            # quick: 3 s per load, page 200 deep
    python -m bench.http --full     # 10 s per load, page 2,000 deep

Prints requests per second and p50/p99 latency at 16 concurrent clients for
``POST /v1/tickets/{id}/messages`` and ``GET /v1/tickets?limit=25``, beside a trivial
FastAPI route (GET and POST) served the same way in the same run, as ratios; and the
latency of a page N pages deep (by cursor) against the first page, as a ratio.

Database: ``BENCH_DATABASE_URL`` or ``TEST_DATABASE_URL`` (a superuser URL; a scratch
database is created and dropped), else an embedded Postgres in a temporary directory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from bench.common import report

ROOT = Path(__file__).resolve().parents[1]
CLIENTS = 16


# --- the two apps uvicorn serves (``--factory``) --------------------------------------


def helpdesk_app() -> Any:
    from api.app import create_app
    from api.config import Settings

    return create_app(Settings(db_pool_min=4, db_pool_max=CLIENTS + 4))


def trivial_app() -> FastAPI:
    app = FastAPI()

    @app.get("/trivial")
    async def read() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/trivial")
    async def write(body: dict[str, Any]) -> dict[str, bool]:
        return {"ok": bool(body)}

    return app


# --- serving and loading ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``uvicorn --factory bench.http:<factory>`` in a child process."""

    def __init__(self, factory: str, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", f"bench.http:{factory}",
             "--port", str(self.port), "--log-level", "warning", "--no-access-log"],
            cwd=ROOT, env=os.environ | env,
        )

    async def wait(self) -> None:
        async with httpx.AsyncClient() as client:
            for _ in range(300):
                try:
                    await client.get(self.url + "/openapi.json", timeout=1)
                    return
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
        raise RuntimeError(f"server on {self.url} did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


Request = Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]


async def load(url: str, request: Request, seconds: float) -> dict[str, float]:
    """``CLIENTS`` clients issuing ``request`` back to back for ``seconds``."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=30) as client:
        end = time.perf_counter() + seconds

        async def worker(n: int) -> None:
            nonlocal errors
            while time.perf_counter() < end:
                start = time.perf_counter()
                response = await request(client, n)
                latencies.append(time.perf_counter() - start)
                errors += response.status_code >= 400

        began = time.perf_counter()
        await asyncio.gather(*(worker(n) for n in range(CLIENTS)))
        elapsed = time.perf_counter() - began
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "errors": errors,
    }


async def median_latencies(client: httpx.AsyncClient, path: str,
                           variants: list[dict[str, Any]], n: int = 60) -> list[float]:
    """Median latency (ms) of each query-parameter variant, measured interleaved so
    background noise falls on all of them alike."""
    times: list[list[float]] = [[] for _ in variants]
    for _ in range(n):
        for i, params in enumerate(variants):
            start = time.perf_counter()
            response = await client.get(path, params=params)
            times[i].append(time.perf_counter() - start)
            assert response.status_code == 200, response.text
    return [1000 * statistics.median(t) for t in times]


# --- the run ----------------------------------------------------------------------------


async def seed(runtime_url: str, tenant_id: Any, count: int) -> None:
    """Open ``count`` tickets through the real write path, 500 per transaction."""
    from domain import Actor, ActorKind, OpenTicket, Requester
    from domain.ids import TicketId
    from eventstore.pool import create_pool
    from eventstore.store import EventStore
    from eventstore.types import StoreActor
    from handlers.tickets import execute

    pool = await create_pool(runtime_url, min_size=1, max_size=2)
    store = EventStore(pool)
    t0 = datetime.now(UTC) - timedelta(days=30)
    customer = Actor(kind=ActorKind.CUSTOMER, id="bench@example.com")
    try:
        for start in range(0, count, 500):
            async with store.session(tenant_id, StoreActor("api_key", "bench")) as s:
                for i in range(start, min(count, start + 500)):
                    tid = TicketId(uuid.uuid4())
                    await execute(s, tid, OpenTicket(
                        ticket_id=tid, subject=f"bench {i}", body="b",
                        requester=Requester(email="bench@example.com"), actor=customer,
                        at=t0 + timedelta(seconds=i)))
    finally:
        await pool.close()


async def run(full: bool) -> None:
    from handlers.tenants import create_tenant_as_operator
    from tests.support.pg import Databases, server_url

    seconds = 10.0 if full else 3.0
    depth = 2000 if full else 200
    limit = 25
    admin_url = os.environ.get("BENCH_DATABASE_URL") or os.environ.get("TEST_DATABASE_URL")
    with server_url() if admin_url is None else _given(admin_url) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            tenant = await create_tenant_as_operator(db.admin_url, "bench")
            count = depth * limit + limit
            began = time.perf_counter()
            await seed(db.runtime_url, tenant.tenant_id, count)
            print(f"seeded {count} tickets in {time.perf_counter() - began:.1f} s")
            await measure(db.runtime_url, tenant.admin_key.secret, seconds, depth, limit)
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)


class _given:
    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *_: object) -> None:
        return None


async def measure(runtime_url: str, secret: str, seconds: float, depth: int, limit: int
                  ) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    trivial = Server("trivial_app", {})
    helpdesk = Server("helpdesk_app", {"DATABASE_URL": runtime_url})
    try:
        await trivial.wait()
        await helpdesk.wait()
        async with httpx.AsyncClient(base_url=helpdesk.url, headers=headers) as client:
            tickets = [(await client.post("/v1/tickets", json={
                "subject": f"load {n}", "body": "b",
                "requester": {"email": "load@example.com"}})).json()["id"]
                for n in range(CLIENTS)]

        results = {
            "trivial GET": await load(trivial.url, lambda c, n: c.get("/trivial"), seconds),
            "trivial POST": await load(
                trivial.url, lambda c, n: c.post("/trivial", json={"body": "hello"}), seconds),
            "GET /v1/tickets?limit=25": await load(
                helpdesk.url, lambda c, n: c.get("/v1/tickets", params={"limit": 25},
                                                 headers=headers), seconds),
            "POST /v1/tickets/{id}/messages": await load(
                helpdesk.url, lambda c, n: c.post(f"/v1/tickets/{tickets[n]}/messages",
                                                  json={"body": "hello"}, headers=headers),
                seconds),
        }
        print(f"\n{CLIENTS} concurrent clients, {seconds:.0f} s each")
        print(f"{'route':34} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6}")
        for name, r in results.items():
            print(f"{name:34} {r['rps']:8.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
                  f"{int(r['errors']):6d}")
        for route, base in (("GET /v1/tickets?limit=25", "trivial GET"),
                            ("POST /v1/tickets/{id}/messages", "trivial POST")):
            r, b = results[route], results[base]
            print(f"{route} vs {base}: throughput x{r['rps'] / b['rps']:.2f}, "
                  f"p50 x{r['p50_ms'] / b['p50_ms']:.1f}, p99 x{r['p99_ms'] / b['p99_ms']:.1f}")

        async with httpx.AsyncClient(base_url=helpdesk.url, headers=headers) as client:
            cursor = None
            for _ in range(depth - 1):  # walk to the page `depth` deep, as a client would
                page = (await client.get("/v1/tickets", params={"limit": limit} | (
                    {"cursor": cursor} if cursor else {}))).json()
                cursor = page["next_cursor"]
            first, deep = await median_latencies(
                client, "/v1/tickets", [{"limit": limit}, {"limit": limit, "cursor": cursor}])
        print(f"\npage {depth} deep: median {deep:.2f} ms vs first page {first:.2f} ms: "
              f"ratio {deep / first:.2f} (target <= 1.5)")
        rows: list[dict[str, object]] = []
        for route, base in (("GET /v1/tickets?limit=25", "trivial GET"),
                            ("POST /v1/tickets/{id}/messages", "trivial POST")):
            r, b = results[route], results[base]
            rows += [
                {"figure": f"{route} req/s", "value": round(r["rps"]),
                 "baseline": round(b["rps"]), "ratio": round(r["rps"] / b["rps"], 2)},
                {"figure": f"{route} p50 ms", "value": round(r["p50_ms"], 1),
                 "baseline": round(b["p50_ms"], 1), "ratio": round(r["p50_ms"] / b["p50_ms"], 2)},
                {"figure": f"{route} p99 ms", "value": round(r["p99_ms"], 1),
                 "baseline": round(b["p99_ms"], 1), "ratio": round(r["p99_ms"] / b["p99_ms"], 2)},
            ]
        rows.append({"figure": f"page {depth} deep, median ms (baseline: first page)",
                     "value": round(deep, 2), "baseline": round(first, 2),
                     "ratio": round(deep / first, 2), "target": "<= 1.5"})
        report(f"http ({CLIENTS} clients, {seconds:.0f} s per route; baseline: trivial route)",
               rows)
    finally:
        helpdesk.stop()
        trivial.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="longer loads, 2,000 pages deep")
    args = parser.parse_args()
    asyncio.run(run(args.full))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.http")
    main()
