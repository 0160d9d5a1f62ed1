"""A subscriber that stops reading gets a gap; the server's memory stays bounded."""

from __future__ import annotations

import gc
import socket
import uuid

import psutil
import websockets

from tests.e2e.ws_support import FIRST, append_notes, recv, send, serve, ws_settings
from tests.support.wait import until

EVENTS = 10_000
BODY = "x" * 8_000  # ~80 MB of messages in all: an unbounded queue would show in RSS
QUEUE = 64


async def test_a_stalled_reader_gets_a_gap_and_memory_stays_bounded(
        db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    me = psutil.Process()
    async with serve(ws_settings(db.runtime_url, ws_send_queue=QUEUE)) as srv:
        port = int(srv.url.split(":")[2].split("/")[0])
        # A small receive buffer and a one-frame client queue: once they are full the
        # client reads nothing more, like a stalled browser tab.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", port))
        sock.setblocking(False)
        ws = await websockets.connect(
            srv.url, sock=sock, max_queue=1, max_size=2**20, compression=None,
            additional_headers={"Authorization": f"Bearer {t.admin_key.secret}"})
        assert (await recv(ws))["type"] == "authenticated"
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws))["type"] == "subscribed"

        gc.collect()
        rss_before = me.memory_info().rss
        high = 0
        done = 0
        while done < EVENTS:
            await append_notes(store, t.tenant_id, ticket, 500, per_tx=100, body=BODY)
            done += 500
            high = max(high, srv.hub.stats()["max_queued"])
        # Let the feed publish everything it was told about.
        await until(lambda: srv.hub.stats()["tenants"] == 0 or not any(
                    f.dirty or (f.task and not f.task.done()) for f in srv.hub.feeds.values()),
                    timeout=30, what="the feed to publish every event it was told about")
        gc.collect()
        rss_growth = me.memory_info().rss - rss_before
        stats = srv.hub.stats()

        # The bound held: never more than QUEUE events (plus the one gap) queued.
        assert max(high, stats["high_water"]) <= QUEUE + 1, stats
        assert rss_growth < 40 * 2**20, f"RSS grew by {rss_growth / 2**20:.1f} MiB"
        # The subscription was dropped, so the hub no longer serves the tenant.
        assert stats["tenants"] == 0, stats

        # Reading again: contiguous events, then a gap telling where to resume.
        seqs: list[int] = []
        while True:
            message = await recv(ws, timeout=10)
            if message["type"] == "gap":
                break
            assert message["type"] == "event", message
            seqs.append(message["seq"])
        assert seqs == list(range(FIRST + 1, FIRST + len(seqs) + 1))
        assert len(seqs) < EVENTS
        assert message["room"] == "tenant" and message["head_seq"] >= seqs[-1]
        # Following gaps (the head moved on since this one) ends in a live subscription
        # at the tenant's head.
        for _ in range(3):
            await send(ws, op="subscribe", room="tenant", after_seq=message["head_seq"])
            message = await recv(ws)
            if message["type"] == "subscribed":
                break
            assert message["type"] == "gap", message
        assert message == {"type": "subscribed", "room": "tenant", "head_seq": FIRST + EVENTS + 1,
                           "replayed": 0}
        await ws.close()
