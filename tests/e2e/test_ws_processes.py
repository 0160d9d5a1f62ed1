"""The feed across OS processes: fan-out through LISTEN/NOTIFY, resume across restarts."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import websockets

from client.stream import StreamClient
from tests.e2e.ws_support import (
    FIRST,
    append_notes,
    connect_ws,
    free_port,
    recv,
    recv_events,
    send,
    serve_process,
)
from tests.support.wait import until

# Each test runs `helpdesk serve` as its own process.
pytestmark = pytest.mark.slow


async def test_two_processes_share_one_database(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    async with serve_process(db.runtime_url) as url_a, serve_process(db.runtime_url) as url_b:
        on_a = await connect_ws(url_a, t.admin_key.secret)
        on_b = await connect_ws(url_b, t.admin_key.secret)
        for ws in (on_a, on_b):
            await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
            assert (await recv(ws))["type"] == "subscribed"
        seqs = await append_notes(store, t.tenant_id, ticket, 3)
        for ws in (on_a, on_b):
            got = await recv_events(ws, len(seqs))
            assert [m["seq"] for m in got] == seqs
            assert got[0]["event"]["type"] == "TicketOpened"
            await ws.close()


async def test_the_client_resumes_across_a_server_restart(db, make_tenant, store) -> None:
    """The client helper reconnects to a restarted process and gets exactly the events
    appended while it was down (replayed from the store), then live ones."""
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    port = free_port()
    received: list[dict[str, Any]] = []

    async def on_event(room: str, message: dict[str, Any]) -> None:
        received.append(message)

    async def until_received(count: int) -> None:
        await until(lambda: len(received) >= count, timeout=15, interval=0.01,
                    what=lambda: f"{count} events (got {len(received)})")

    client = StreamClient(f"ws://127.0.0.1:{port}/v1/stream", t.admin_key.secret,
                          rooms={"tenant": FIRST}, on_event=on_event, max_backoff=0.2)
    async with serve_process(db.runtime_url, port=port):
        runner = asyncio.create_task(client.run())
        await client.wait_subscribed("tenant")
        first = await append_notes(store, t.tenant_id, ticket, 2)
        await until_received(len(first))
    # The server is gone; these are appended while nobody listens.
    missed = await append_notes(store, t.tenant_id, ticket, 4)
    async with serve_process(db.runtime_url, port=port):
        await until_received(len(first + missed))
        await client.wait_subscribed("tenant")
        live = await append_notes(store, t.tenant_id, ticket, 2)
        await until_received(len(first + missed + live))
        await client.close()
        await asyncio.wait_for(runner, 10)
    assert [m["seq"] for m in received] == first + missed + live
    assert client.connects >= 2 and client.gaps == 0


async def test_an_oversized_client_message_closes_the_connection(db, make_tenant) -> None:
    t = await make_tenant("Acme")
    async with serve_process(db.runtime_url) as url:
        ws = await connect_ws(url, t.admin_key.secret)
        await send(ws, op="ping", id="x" * 100)  # an ordinary op is answered
        assert (await recv(ws))["type"] == "pong"
        await ws.send('{"op": "ping", "pad": "' + "x" * 70_000 + '"}')
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await recv(ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
