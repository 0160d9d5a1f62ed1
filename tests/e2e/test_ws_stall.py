"""A feed consumer that stops reading is told so with a gap, and resumes missing nothing.

Over a real socket (uvicorn with the protocol ``helpdesk serve`` runs) and a client
whose socket buffers are small, so that "stops reading" fills them quickly.
"""

from __future__ import annotations

import asyncio
import gc
import socket
import uuid
from typing import Any

import httpx
import psutil
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from api.feed.flow import CLOSE_TOO_SLOW
from api.serving.websocket import FeedWebSocketProtocol
from client.stream import StreamClient
from tests.e2e.ws_support import (
    FIRST,
    Running,
    append_notes,
    recv,
    send,
    serve,
    ws_settings,
)
from tests.support.wait import until

EVENTS = 3000
BODY = "x" * 2000  # ~6 MB of messages in all
STALL = 0.5  # WS_STALL_SECONDS in these tests
CLIENTS = 3


def _shrink_server_send_buffers(srv: Running) -> None:
    """Small kernel send buffers on the server's WebSockets: the server then feels a
    reader's pauses at once, instead of after megabytes the kernel would absorb."""
    for protocol in srv.server.server_state.connections:
        if isinstance(protocol, FeedWebSocketProtocol):
            sock = protocol.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)


def _http_base(ws_url: str) -> str:
    return ws_url.replace("ws://", "http://").removesuffix("/v1/stream")


async def _stalling_client(url: str, token: str) -> Any:
    """A client with a small receive buffer and a one-message queue: once both are
    full, it reads nothing more, like a stalled browser tab."""
    port = int(url.split(":")[2].split("/")[0])
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.setblocking(False)
    ws = await websockets.connect(url, sock=sock, max_queue=1, max_size=2**20,
                                  compression=None,
                                  additional_headers={"Authorization": f"Bearer {token}"})
    assert (await recv(ws))["type"] == "authenticated"
    return ws


async def _rest_seqs(base: str, token: str, after: int, upto: int) -> list[int]:
    """The tenant's seqs in ``(after, upto]``, read over REST as a client refetches."""
    seqs: list[int] = []
    params: dict[str, Any] = {"after_seq": after, "limit": 100}
    async with httpx.AsyncClient(base_url=base,
                                 headers={"Authorization": f"Bearer {token}"}) as http:
        while True:
            r = await http.get("/v1/events", params=params)
            assert r.status_code == 200, r.text
            page = r.json()
            seqs += [e["seq"] for e in page["data"] if e["seq"] <= upto]
            if not page["next_cursor"] or page["data"][-1]["seq"] >= upto:
                return seqs
            params = {"after_seq": after, "limit": 100, "cursor": page["next_cursor"]}


async def _read_until_gap(ws: Any) -> tuple[list[int], dict[str, Any]]:
    """Events up to the gap, and the gap; what may follow it (a 4408 close) is left."""
    seqs: list[int] = []
    while True:
        message = await recv(ws, timeout=10)
        if message["type"] == "gap":
            return seqs, message
        assert message["type"] == "event", message
        seqs.append(message["seq"])


@pytest.mark.parametrize("queue", [256, 100_000], ids=["queue-bound", "stall-only"])
async def test_a_reader_that_stops_gets_a_gap_on_the_wire_and_resumes_missing_nothing(
        db, make_tenant, store, queue) -> None:
    t = await make_tenant("Acme")
    token = t.admin_key.secret
    ticket = uuid.uuid4()
    me = psutil.Process()
    settings = ws_settings(db.runtime_url, ws_send_queue=queue, ws_stall_seconds=STALL)
    async with serve(settings) as srv:
        clients = [await _stalling_client(srv.url, token) for _ in range(CLIENTS)]
        for ws in clients:
            await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
            assert (await recv(ws))["type"] == "subscribed"

        gc.collect()
        rss_before = rss_high = me.memory_info().rss
        queued_high = 0
        appended: list[int] = []
        while len(appended) < EVENTS:
            appended += await append_notes(store, t.tenant_id, ticket, 100, per_tx=100,
                                           body=BODY)
            rss_high = max(rss_high, me.memory_info().rss)
            queued_high = max(queued_high, srv.hub.stats()["max_queued"])
        appended = [s for s in appended if s > FIRST]
        # Every stalled subscription is ended, by the queue bound or the stall time.
        await until(lambda: not srv.hub.stats()["tenants"], timeout=20,
                    what="every stalled subscription to be ended")
        gc.collect()
        rss_high = max(rss_high, me.memory_info().rss)
        growth = (rss_high - rss_before) / 2**20
        print(f"\n[{queue}] RSS +{growth:.1f} MiB at most; at most {queued_high} messages "
              f"queued on one connection")
        assert growth < 40, f"RSS grew by {growth:.1f} MiB"
        if queue < EVENTS:
            assert queued_high <= queue + 2

        base = _http_base(srv.url)
        for ws in clients:
            # Reading again: contiguous events, then the gap right behind them.
            got, gap = await _read_until_gap(ws)
            assert got == list(range(FIRST + 1, FIRST + 1 + len(got)))
            assert len(got) < EVENTS
            head = gap["head_seq"]
            assert gap["room"] == "tenant" and got[-1] <= head <= appended[-1]
            with pytest.raises((ConnectionClosed, TimeoutError)) as after_gap:
                while True:  # nothing more of the room; then, unless it is read in
                    # time, the close for a socket that did not drain
                    message = await recv(ws, timeout=3 * STALL + 1)
                    assert message["type"] == "heartbeat", message
            if isinstance(after_gap.value, ConnectionClosed):
                assert after_gap.value.rcvd is not None
                assert after_gap.value.rcvd.code == CLOSE_TOO_SLOW
            print(f"  client read {len(got)} events, then gap(head_seq={head}), then "
                  f"{'close 4408' if isinstance(after_gap.value, ConnectionClosed) else 'nothing'}")
            await ws.close()
            # Refetch what it missed over REST and follow from head_seq, on a new
            # connection (the old one may have been closed with 4408); a head_seq now
            # beyond the replay window is another gap, followed the same way.
            follower = await _stalling_client(srv.url, token)
            position, seqs = got[-1], list(got)
            while True:
                seqs += await _rest_seqs(base, token, position, head)
                position = head
                await send(follower, op="subscribe", room="tenant", after_seq=position)
                message = await recv(follower)
                while message["type"] == "event":
                    seqs.append(message["seq"])
                    message = await recv(follower)
                if message["type"] == "subscribed":
                    break
                assert message["type"] == "gap", message
                head = message["head_seq"]
            assert seqs == appended  # nothing missing, nothing twice
            more = await append_notes(store, t.tenant_id, ticket, 3)
            assert [m["seq"] for m in [await recv(follower) for _ in more]] == more
            appended += more
            await follower.close()


async def test_a_slow_reader_that_keeps_up_gets_every_event_and_no_gap(
        db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    settings = ws_settings(db.runtime_url, ws_send_queue=256, ws_stall_seconds=STALL)
    async with serve(settings) as srv:
        ws = await _stalling_client(srv.url, t.admin_key.secret)
        _shrink_server_send_buffers(srv)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws))["type"] == "subscribed"
        got: list[int] = []
        last = FIRST + 1 + 1000  # the ticket's opening, then its notes

        async def read_slowly() -> None:
            while not got or got[-1] < last:
                message = await recv(ws)
                assert message["type"] == "event", message  # never a gap
                got.append(message["seq"])
                if len(got) % 100 == 0:
                    await asyncio.sleep(STALL / 2)  # a pause, shorter than the stall time

        reader = asyncio.create_task(read_slowly())
        appended: list[int] = []
        loop = asyncio.get_running_loop()
        started = loop.time()
        for _ in range(10):  # bursts of 100 (~200 kB) that fill the small buffers
            appended += await append_notes(store, t.tenant_id, ticket, 100, per_tx=100,
                                           body=BODY)
            await asyncio.sleep(0.3)
        appended = [s for s in appended if s > FIRST]
        appending = loop.time() - started
        await asyncio.wait_for(reader, 30)
        reading = loop.time() - started
        stats = srv.hub.stats()
        print(f"\nappended in {appending:.2f} s, read in {reading:.2f} s; the server waited "
              f"for the socket {stats['socket_waits']} times")
        assert got == appended
        assert stats["socket_waits"] > 0  # the reader did hold the server back
        assert sum(o.gaps_sent for o in srv.hub.outboxes) == 0
        await ws.close()


async def test_the_client_helper_reconnects_after_4408_and_resumes(
        db, make_tenant, store) -> None:
    """A client whose application stops taking events: the server ends its subscription
    with a gap, then closes with 4408; the helper refetches on the gap, reconnects and
    resumes, and the application ends up with every event once."""
    t = await make_tenant("Acme")
    token = t.admin_key.secret
    ticket = uuid.uuid4()
    settings = ws_settings(db.runtime_url, ws_send_queue=100_000, ws_stall_seconds=STALL)
    async with serve(settings) as srv:
        base = _http_base(srv.url)
        seen: list[int] = []
        stuck = asyncio.Event()
        release = asyncio.Event()

        async def on_event(room: str, message: dict[str, Any]) -> None:
            seen.append(message["seq"])
            if len(seen) == 10:
                stuck.set()
                await release.wait()  # the application hangs: the socket fills

        async def on_gap(room: str, head_seq: int) -> None:
            seen.extend(await _rest_seqs(base, token, seen[-1], head_seq))

        client = StreamClient(srv.url, token, rooms={"tenant": FIRST}, on_event=on_event,
                              on_gap=on_gap)
        runner = asyncio.create_task(client.run())
        await client.wait_subscribed("tenant")
        _shrink_server_send_buffers(srv)
        appended: list[int] = []
        while len(appended) < 1000:  # ~10 MB: more than the client's socket takes
            appended += await append_notes(store, t.tenant_id, ticket, 100, per_tx=100,
                                           body=BODY * 5)
        await asyncio.wait_for(stuck.wait(), 10)
        # The server gives up on the connection (gap, then 4408 when nothing drains).
        await until(lambda: not srv.hub.outboxes, timeout=20,
                    what="the server to give up on the stalled connection")
        release.set()
        await client.wait_subscribed("tenant", timeout=20)
        more = await append_notes(store, t.tenant_id, ticket, 5)
        appended += more
        await until(lambda: bool(seen) and seen[-1] >= more[-1], timeout=10,
                    what="the live events after the resume")
        await client.close()
        await asyncio.wait_for(runner, 10)
        assert client.gaps >= 1 and client.connects >= 2 and client.too_slow >= 1
        assert seen == [s for s in appended if s > FIRST]
