"""WebSocket feed: commit-to-delivery delay with many subscribers, and replay time.

N subscribers (default 200; ``--full``: 1,000) of one tenant room on an API server
process; events are committed one at a time and the delay from just before the commit
to each subscriber's receipt is recorded (p50/p99 over every delivery). Then the time
to replay 1,000 missed events on resubscribe, from the process's ring buffer and from
the event store (no other subscriber, so nothing in memory). The baseline is a bare
websockets broadcast server (no database, no auth) in its own process, measured in the
same run with the same clients, message sizes and counts.
Targets: p99 < 100 ms, replay < 200 ms.

    python -m bench.ws [--full] [--subscribers N] [--events N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import websockets

from bench.common import bench_server, fresh_database, report
from domain.ids import TenantId
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from handlers.tenants import create_tenant_as_operator

ROOT = Path(__file__).parents[1]
REPLAY = 1000
ACTOR = StoreActor("api_key", "bench")


# --- the baseline: a raw broadcast server ---------------------------------------------


async def baseline_server(port: int) -> None:
    """Broadcast what a publisher sends to every subscriber; replay n canned messages."""
    subscribers: set[Any] = set()

    async def handler(ws: Any) -> None:
        async for raw in ws:
            op = orjson.loads(raw)
            if op["op"] == "subscribe":
                subscribers.add(ws)
                await ws.send(orjson.dumps({"type": "subscribed"}).decode())
            elif op["op"] == "publish":
                websockets.broadcast(subscribers, op["message"])
            elif op["op"] == "replay":
                for text in op["messages"]:
                    await ws.send(text)
                await ws.send(orjson.dumps({"type": "subscribed"}).decode())
        subscribers.discard(ws)

    async with websockets.serve(handler, "127.0.0.1", port, max_size=2**26,
                                compression=None):
        await asyncio.Future()


# --- plumbing ---------------------------------------------------------------------------


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def process(args: list[str], env: dict[str, str], ready: str) -> AsyncIterator[None]:
    proc = await asyncio.create_subprocess_exec(sys.executable, *args, cwd=ROOT,
                                                env={**os.environ, **env})
    try:
        async with httpx.AsyncClient() as http:
            for _ in range(400):
                try:
                    await http.get(ready)
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            else:
                raise RuntimeError(f"{args} did not come up")
        yield
    finally:
        proc.terminate()
        await proc.wait()


class Subscribers:
    """N client connections reading one room; records when each seq arrives."""

    def __init__(self) -> None:
        self.sockets: list[Any] = []
        self.arrivals: dict[int, list[float]] = {}
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self, n: int, connect: Callable[[], Awaitable[Any]]) -> None:
        for start in range(0, n, 50):
            self.sockets += await asyncio.gather(*(connect() for _ in range(start,
                                                                            min(n, start + 50))))
        self.tasks = [asyncio.create_task(self._read(ws)) for ws in self.sockets]

    async def _read(self, ws: Any) -> None:
        async for raw in ws:
            seq = orjson.loads(raw).get("seq")
            if seq is not None:
                self.arrivals.setdefault(seq, []).append(time.perf_counter())

    async def wait_for(self, seq: int, timeout: float = 10.0) -> list[float]:
        deadline = time.perf_counter() + timeout
        while len(self.arrivals.get(seq, ())) < len(self.sockets):
            if time.perf_counter() > deadline:
                raise TimeoutError(f"seq {seq}: {len(self.arrivals.get(seq, ()))} arrivals")
            await asyncio.sleep(0.002)
        return self.arrivals.pop(seq)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*(ws.close() for ws in self.sockets), return_exceptions=True)


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 \
        else values[0]


async def measure_feed(url: str, key: str, tenant: TenantId, store: EventStore,
                       n_subs: int, n_events: int) -> tuple[list[float], int]:
    async def connect() -> Any:
        ws = await websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"},
                                      compression=None, max_size=2**24, open_timeout=60)
        await ws.recv()  # authenticated
        await ws.send(orjson.dumps({"op": "subscribe", "room": "tenant"}).decode())
        while orjson.loads(await ws.recv())["type"] != "subscribed":
            pass
        return ws

    subs = Subscribers()
    await subs.open(n_subs, connect)
    delays: list[float] = []
    ticket = uuid.uuid4()
    size = 0
    for i in range(n_events):
        async with store.unit_of_work(tenant, ACTOR) as s:
            (event,) = await s.append(ticket, None, [NewEvent("MessageAdded", payload(i))])
            t0 = time.perf_counter()
        arrivals = await subs.wait_for(event.seq)
        delays += [t - t0 for t in arrivals]
        await asyncio.sleep(0.02)
    size = await sample_size(url, key, tenant)
    await subs.close()
    return delays, size


async def sample_size(url: str, key: str, tenant: TenantId) -> int:
    async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"},
                                  compression=None) as ws:
        await ws.recv()
        await ws.send(orjson.dumps({"op": "subscribe", "room": "tenant",
                                    "after_seq": 0}).decode())
        return len(await ws.recv())


def payload(i: int) -> dict[str, Any]:
    return {"message_id": str(uuid.uuid4()), "body": f"Reply number {i}: " + "lorem ipsum " * 20,
            "visibility": "public", "author": {"kind": "agent", "id": "agent-1"},
            "clocks": {}, "at": "2026-06-01T09:00:00.000000Z"}


async def measure_replay(url: str, key: str, tenant: TenantId, store: EventStore,
                         keep_ring: bool) -> float:
    headers = {"Authorization": f"Bearer {key}"}
    keeper = None
    if keep_ring:
        keeper = await websockets.connect(url, additional_headers=headers, compression=None,
                                          max_size=2**26)
        await keeper.recv()
        await keeper.send(orjson.dumps({"op": "subscribe", "room": "tenant"}).decode())
        await keeper.recv()
    async with store.unit_of_work(tenant, ACTOR) as s:
        k, _ = await s.head()
    ticket = uuid.uuid4()
    for start in range(0, REPLAY, 100):
        async with store.unit_of_work(tenant, ACTOR) as s:
            await s.append(ticket, None, [NewEvent("MessageAdded", payload(start + i))
                                          for i in range(100)])
    await asyncio.sleep(0.3)  # let the live feed settle so only the replay is timed
    async with websockets.connect(url, additional_headers=headers, compression=None,
                                  max_size=2**26) as ws:
        await ws.recv()
        t0 = time.perf_counter()
        await ws.send(orjson.dumps({"op": "subscribe", "room": "tenant",
                                    "after_seq": k}).decode())
        count = 0
        while True:
            message = orjson.loads(await ws.recv())
            if message["type"] == "subscribed":
                break
            count += 1
        elapsed = time.perf_counter() - t0
    assert count == REPLAY and message["replayed"] == REPLAY, (count, message)
    if keeper is not None:
        await keeper.close()
    return elapsed


async def measure_baseline(url: str, n_subs: int, n_events: int, size: int
                           ) -> tuple[list[float], float]:
    async def connect() -> Any:
        ws = await websockets.connect(url, compression=None, max_size=2**26, open_timeout=60)
        await ws.send(orjson.dumps({"op": "subscribe"}).decode())
        await ws.recv()
        return ws

    subs = Subscribers()
    await subs.open(n_subs, connect)
    publisher = await websockets.connect(url, compression=None, max_size=2**26)
    delays: list[float] = []
    for seq in range(1, n_events + 1):
        text = orjson.dumps({"type": "event", "room": "tenant", "seq": seq}).decode()
        text = text[:-1] + ',"pad":"' + "x" * max(size - len(text) - 9, 0) + '"}'
        t0 = time.perf_counter()
        await publisher.send(orjson.dumps({"op": "publish", "message": text}).decode())
        delays += [t - t0 for t in await subs.wait_for(seq)]
        await asyncio.sleep(0.02)
    await subs.close()
    canned = [orjson.dumps({"type": "event", "seq": i, "pad": "x" * size}).decode()
              for i in range(REPLAY)]
    request = orjson.dumps({"op": "replay", "messages": canned}).decode()
    async with websockets.connect(url, compression=None, max_size=2**26) as ws:
        # The canned messages travel to the server first; time only what comes back.
        await ws.send(request)
        t0 = time.perf_counter()
        first = True
        while orjson.loads(await ws.recv()).get("type") != "subscribed":
            if first:
                t0, first = time.perf_counter(), False
        replay = time.perf_counter() - t0
    await publisher.close()
    return delays, replay


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--full", action="store_true", help="1,000 subscribers, 100 events")
    parser.add_argument("--subscribers", type=int)
    parser.add_argument("--events", type=int)
    parser.add_argument("--baseline-server", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_server:
        await baseline_server(args.baseline_server)
        return
    n_subs = args.subscribers or (1000 if args.full else 200)
    n_events = args.events or (100 if args.full else 30)
    with bench_server() as server:
        async with fresh_database(server) as db:
            t = await create_tenant_as_operator(db.admin_url, "bench")
            pool = await create_pool(db.runtime_url, min_size=2, max_size=4)
            store = EventStore(pool)
            api_port, raw_port = free_port(), free_port()
            env = {"DATABASE_URL": db.runtime_url, "LOG_LEVEL": "warning",
                   "WS_SEND_QUEUE": "4096"}
            async with process(["-m", "api.cli.main", "serve", "--port", str(api_port)], env,
                               f"http://127.0.0.1:{api_port}/health/live"):
                url = f"ws://127.0.0.1:{api_port}/v1/stream"
                delays, size = await measure_feed(url, t.admin_key.secret, t.tenant_id, store,
                                                  n_subs, n_events)
                ring = await measure_replay(url, t.admin_key.secret, t.tenant_id, store, True)
                cold = await measure_replay(url, t.admin_key.secret, t.tenant_id, store, False)
            async with process(["-m", "bench.ws", "--baseline-server", str(raw_port)], {},
                               f"http://127.0.0.1:{raw_port}/"):
                base, base_replay = await measure_baseline(f"ws://127.0.0.1:{raw_port}",
                                                           n_subs, n_events, size)
            await store.notifier.flush()
            await pool.close()

    def ms(v: float) -> float:
        return round(v * 1000, 1)

    rows: list[dict[str, object]] = []
    for q in (50, 99):
        value, baseline = pct(delays, q), pct(base, q)
        rows.append({"figure": f"commit->delivery p{q}, {n_subs} subs (ms)", "value": ms(value),
                     "baseline": ms(baseline), "ratio": round(value / baseline, 2),
                     "target": "< 100 ms" if q == 99 else ""})
    for name, value in (("ring", ring), ("event store", cold)):
        rows.append({"figure": f"replay {REPLAY} missed, from {name} (ms)", "value": ms(value),
                     "baseline": ms(base_replay), "ratio": round(value / base_replay, 2),
                     "target": "< 200 ms"})
    report(f"websocket feed ({n_subs} subscribers, {n_events} events, {size} B messages)", rows)


if __name__ == "__main__":
    asyncio.run(main())
