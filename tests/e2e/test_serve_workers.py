"""``helpdesk serve --workers N``: N API processes on one port, and everything that
crosses processes still holds among them (the feed, revoked keys, the scheduler)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import NEW_TICKET, auth
from tests.e2e.ws_support import FIRST, connect_ws, free_port, recv, send, serve_process
from tests.support.wait import until

pytestmark = pytest.mark.slow


def worker_processes(port: int) -> list[int]:
    """Pids of the processes uvicorn spawned for a server listening on ``port``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"multiprocessing.spawn" in cmdline:
            try:
                status = (proc / "status").read_text()
            except OSError:
                continue
            parent = int(status.split("PPid:")[1].split()[0])
            parent_cmd = Path(f"/proc/{parent}/cmdline").read_bytes().replace(b"\0", b" ")
            if f"--port {port}".encode() in parent_cmd:
                pids.append(int(proc.name))
    return pids


async def test_two_workers_share_a_port_the_feed_and_revocations(db, http, make_tenant):
    t = await make_tenant("Acme")
    admin = auth(t.admin_key)
    issued = (await http.post("/v1/api-keys", json={"name": "k", "role": "admin"},
                              headers=admin)).json()
    key = auth(issued["secret"])
    port = free_port()
    async with serve_process(db.runtime_url, port, WORKERS="2") as url, \
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        await until(lambda: len(worker_processes(port)) == 2, timeout=30,
                    what=lambda: f"two worker processes (got {worker_processes(port)})")
        # The feed: a subscriber on whichever process took the socket sees tickets
        # opened through whichever processes took those requests.
        ws = await connect_ws(url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST + 1)
        assert (await recv(ws))["type"] == "subscribed"
        opened = await asyncio.gather(*(client.post("/v1/tickets", json=NEW_TICKET,
                                                    headers=key) for _ in range(12)))
        assert all(r.status_code == 201 for r in opened), [r.text for r in opened]
        ids = {r.json()["id"] for r in opened}
        seen: set[str] = set()
        while not ids <= seen:
            message = await recv(ws, timeout=10)
            if message.get("type") == "event" and message["event"]["type"] == "TicketOpened":
                seen.add(message["event"]["stream_id"])
        await ws.close()
        # Revocation: every process had the key cached; none accepts it after.
        for _ in range(10):
            assert (await client.get("/v1/tickets", headers=key)).status_code == 200
        assert (await http.delete(f"/v1/api-keys/{issued['id']}",
                                  headers=admin)).status_code == 200

        async def refused_everywhere() -> bool:
            codes = await asyncio.gather(*(client.get("/v1/tickets", headers=key)
                                           for _ in range(10)))
            return all(r.status_code == 401 for r in codes)

        await until(refused_everywhere, timeout=5, what="every process to refuse the key")
