"""Helpers for the WebSocket feed tests: real servers on real sockets, real events."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn
import websockets

from api.app import create_app
from api.config import ProcessSettings
from api.feed.hub import Hub
from api.root import Services
from api.serving.server import server_options
from domain.ids import MessageId, TicketId
from domain.mapper import to_stored
from domain.sla import SlaPolicy
from domain.ticket.commands import OpenTicket
from domain.ticket.decide import decide
from domain.ticket.events import MessageAdded
from domain.values import Actor, ActorKind, Requester, Visibility
from eventstore.pool import connect
from eventstore.store import EventStore, arm
from eventstore.types import NewEvent, StoreActor
from tests.support.wait import until

REPO = Path(__file__).parents[2]
T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")
WRITER = StoreActor("system", "ws-test")


def ws_settings(database_url: str, **overrides: Any) -> ProcessSettings:
    base: dict[str, Any] = {"database_url": database_url, "db_pool_min": 1,
                            "db_pool_max": 5, "ws_heartbeat_seconds": 5.0,
                            "ws_auth_recheck_seconds": 5.0}
    base.update(overrides)
    return ProcessSettings(**base)


@dataclass
class Running:
    url: str
    services: Services
    server: uvicorn.Server

    @property
    def hub(self) -> Hub:
        assert self.services.hub is not None
        return self.services.hub


@asynccontextmanager
async def serve(settings: ProcessSettings) -> AsyncIterator[Running]:
    """The app on a real socket (uvicorn, 127.0.0.1, a free port) in this process."""
    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                            lifespan="on", **server_options(settings))
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await until(lambda: server.started or task.done(), timeout=10, interval=0.01,
                what="uvicorn to start")
    assert server.started, "server did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    services: Services = app.state.services
    running = Running(f"ws://127.0.0.1:{port}/v1/stream", services, server)
    assert running.hub.listener is not None
    await asyncio.wait_for(running.hub.listener.connected.wait(), 10)
    try:
        yield running
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@asynccontextmanager
async def serve_process(database_url: str, port: int | None = None,
                        **env_extra: str) -> AsyncIterator[str]:
    """``helpdesk serve`` as its own OS process; yields the stream URL."""
    port = port or free_port()
    # One process unless a test asks for more (serve runs one per core by default).
    env = {**os.environ, "DATABASE_URL": database_url, "LOG_LEVEL": "warning",
           "WORKERS": "1", **env_extra}
    with tempfile.TemporaryFile() as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "api.cli.main", "serve", "--port", str(port),
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log)

        def output() -> str:
            log.seek(0)
            return log.read().decode(errors="replace")

        try:
            async with httpx.AsyncClient() as http:

                async def live() -> bool:
                    assert proc.returncode is None, output()
                    try:
                        r = await http.get(f"http://127.0.0.1:{port}/health/live")
                    except httpx.TransportError:
                        return False
                    return r.status_code == 200

                await until(live, timeout=60, interval=0.05,
                            what=lambda: f"the server process to come up: {output()}")
            yield f"ws://127.0.0.1:{port}/v1/stream"
        finally:
            if proc.returncode is None:
                proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                proc.kill()
                await proc.wait()


def open_ticket(ticket_id: uuid.UUID) -> NewEvent:
    command = OpenTicket(ticket_id=TicketId(ticket_id), subject="Printer on fire",
                         body="It is on fire.",
                         requester=Requester(email="ann@example.com", name="Ann"),
                         actor=Actor(kind=ActorKind.CUSTOMER, id="intake-1"), at=T0)
    (event,) = decide(command, None, SlaPolicy())
    type_, version, data = to_stored(event)
    return NewEvent(type_, data, version)


def note(n: int, body: str = "internal note") -> NewEvent:
    event = MessageAdded(message_id=MessageId(uuid.uuid4()), body=f"{body} {n}",
                         visibility=Visibility.INTERNAL, author=AGENT,
                         at=T0 + timedelta(seconds=n))
    type_, version, data = to_stored(event)
    return NewEvent(type_, data, version)


async def append_notes(store: EventStore, tenant: uuid.UUID, ticket: uuid.UUID, n: int,
                       *, per_tx: int = 1, body: str = "internal note",
                       writer: StoreActor | None = None) -> list[int]:
    """Append ``n`` notes to ``ticket`` (opening it first if new) as ``writer`` (default
    ``WRITER``); returns their seqs."""
    seqs: list[int] = []

    async def append(events: list[NewEvent]) -> None:
        # Appends go out with the commit; their seqs are read back after it.
        async with store.unit_of_work(tenant, writer or WRITER) as s:  # type: ignore[arg-type]
            version = await s.stream_version(ticket)
            if version == 0:
                events = [open_ticket(ticket), *events]
            await s.append(ticket, version, events)
        async with store.unit_of_work(tenant) as s:  # type: ignore[arg-type]
            stored = await s.read_stream_page(ticket, version, len(events))
        seqs.extend(e.seq for e in stored)

    async with store.unit_of_work(tenant) as s:  # type: ignore[arg-type]
        opened = await s.stream_version(ticket) > 0
    if not opened:
        await append([])
    done = 0
    while done < n:
        batch = [note(done + i, body) for i in range(min(per_tx, n - done))]
        await append(batch)
        done += len(batch)
    return seqs


async def revoke_key(owner_dsn: str, tenant: uuid.UUID, key_id: uuid.UUID) -> None:
    """Revoke a key as the owner would (no API for it yet in this package)."""
    conn = await connect(owner_dsn)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await arm(conn, tenant, StoreActor("operator", "test"))  # type: ignore[arg-type]
            status = await conn.execute(
                "UPDATE api_keys SET revoked_at = now() WHERE id = $1", key_id)
            assert status == "UPDATE 1"
    finally:
        await conn.close()


async def connect_ws(url: str, token: str, **kw: Any) -> Any:
    ws = await websockets.connect(url, additional_headers={"Authorization": f"Bearer {token}"},
                                  open_timeout=10, max_size=2**24, **kw)
    hello = orjson.loads(await asyncio.wait_for(ws.recv(), 10))
    assert hello["type"] == "authenticated", hello
    return ws


async def send(ws: Any, **op: Any) -> None:
    await ws.send(orjson.dumps(op).decode())


async def recv(ws: Any, timeout: float = 10.0, *, skip_heartbeats: bool = True) -> dict[str, Any]:
    while True:
        message: dict[str, Any] = orjson.loads(await asyncio.wait_for(ws.recv(), timeout))
        if not (skip_heartbeats and message["type"] == "heartbeat"):
            return message


async def recv_until(ws: Any, type_: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    """Messages up to and including the first of ``type_``."""
    out: list[dict[str, Any]] = []
    while True:
        message = await recv(ws, timeout)
        out.append(message)
        if message["type"] == type_:
            return out


async def recv_events(ws: Any, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < count:
        message = await recv(ws, timeout)
        assert message["type"] == "event", message
        out.append(message)
    return out

# A new tenant's stream starts with its first admin key being issued (ApiKeyIssued
# at seq 1, by the operator); the events a test appends follow it.
FIRST = 1
