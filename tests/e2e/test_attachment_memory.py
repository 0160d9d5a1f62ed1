"""A 100 MiB upload to a real ``helpdesk serve`` process over a real socket: the
process's resident memory grows by less than 32 MiB while it streams the file into
storage and back out; a ``Range`` download of the middle gives exactly those bytes.
An upload whose client goes away half way leaves nothing stored."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.e2e.conftest import auth
from tests.e2e.ws_support import free_port, serve_process
from tests.support.wait import until

pytestmark = pytest.mark.slow

MIB = 1024 * 1024
SIZE = 100 * MIB
GROWTH_LIMIT = 32 * MIB


def _piece(n: int) -> bytes:
    """Mebibyte ``n`` of the file: not compressible, made again at will (so neither
    side needs to hold the file)."""
    seed = hashlib.sha256(n.to_bytes(8, "big")).digest()
    return (seed * (MIB // len(seed)))[:MIB]


async def _file() -> AsyncIterator[bytes]:
    for n in range(SIZE // MIB):
        yield _piece(n)


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


def _server_pid(port: int) -> int:
    """The process listening on ``port`` (``serve`` with one worker serves itself)."""
    inode = None
    wanted = f":{port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(wanted) and fields[3] == "0A":
            inode = fields[9]
    assert inode is not None, "nothing listens on the port"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if fd.readlink().name == f"socket:[{inode}]":
                    return int(proc.name)
        except OSError:
            continue
    raise AssertionError("no process holds the listening socket")


async def test_a_100_mib_upload_streams_in_bounded_memory_and_downloads_by_range(
        db, tenant) -> None:
    port = free_port()
    async with serve_process(db.runtime_url, port, HTTP_BODY_TIMEOUT="600",
                             DB_COMMAND_TIMEOUT="60"):
        pid = _server_pid(port)
        h = auth(tenant.admin_key)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}",
                                     timeout=600) as http:
            settings = (await http.get("/v1/settings", headers=h)).json()
            put = await http.put("/v1/settings", headers=h, json=settings | {
                "attachments": {"max_file_bytes": 2 * SIZE, "per_message": 20}})
            assert put.status_code == 200, put.text
            # Warm up: the first upload and download load what they need once.
            warm = await http.post("/v1/uploads", params={"name": "warm.bin"},
                                   content=_piece(0) * 3, headers=h)
            assert warm.status_code == 201, warm.text
            assert len((await http.get(f"/v1/attachments/{warm.json()['id']}",
                                       headers=h)).content) == 3 * MIB
            baseline = _rss(pid)
            peak = baseline
            done = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not done.is_set():
                    peak = max(peak, _rss(pid))
                    await asyncio.sleep(0.02)

            sampler = asyncio.create_task(sample())
            try:
                up = await http.post("/v1/uploads", params={"name": "big.bin"},
                                     content=_file(), headers=h)
                assert up.status_code == 201, up.text
                upload = up.json()
                expected = hashlib.sha256()
                for n in range(SIZE // MIB):
                    expected.update(_piece(n))
                assert (upload["size"], upload["sha256"]) == (SIZE, expected.hexdigest())

                start, end = 50 * MIB - 1000, 51 * MIB + 999
                part = await http.get(f"/v1/attachments/{upload['id']}", headers=h | {
                    "Range": f"bytes={start}-{end}"})
                assert part.status_code == 206
                assert part.headers["content-range"] == f"bytes {start}-{end}/{SIZE}"
                want = b"".join(_piece(n) for n in (49, 50, 51))[MIB - 1000:2 * MIB + 1000]
                assert part.content == want

                whole = hashlib.sha256()
                async with http.stream("GET", f"/v1/attachments/{upload['id']}",
                                       headers=h) as r:
                    assert r.status_code == 200
                    async for piece in r.aiter_bytes():
                        whole.update(piece)
                assert whole.hexdigest() == upload["sha256"]
            finally:
                done.set()
                await sampler
        growth = peak - baseline
        print(f"server RSS {baseline / MIB:.1f} MiB, peak {peak / MIB:.1f} MiB")
        assert growth < GROWTH_LIMIT, f"the server grew by {growth / MIB:.1f} MiB"


async def test_an_upload_cut_off_by_its_client_leaves_nothing_stored(db, tenant) -> None:
    """A raw upload whose client goes away half way (over a real socket): no upload,
    no blob, no chunk is left, and the server goes on serving."""
    port = free_port()
    async with serve_process(db.runtime_url, port):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        head = (f"POST /v1/uploads?name=cut.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {tenant.admin_key.secret}\r\n"
                f"Content-Type: application/octet-stream\r\n"
                f"Content-Length: {4 * MIB}\r\n\r\n").encode()
        writer.write(head + _piece(7) * 2)  # half of what it announced
        await writer.drain()
        admin = await asyncpg.connect(db.admin_url)
        try:
            async def chunks_in() -> bool:
                return bool(await admin.fetchval("SELECT count(*) FROM file_chunks"))

            await until(chunks_in, timeout=10, what="the server to store chunks")
            writer.close()
            await writer.wait_closed()

            async def nothing_left() -> bool:
                counts = [await admin.fetchval(f"SELECT count(*) FROM {t}")
                          for t in ("uploads", "file_blobs", "file_chunks")]
                return counts == [0, 0, 0]

            await until(nothing_left, timeout=10, what="the cut upload to be forgotten")
        finally:
            await admin.close()
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            ok = await http.post("/v1/uploads", params={"name": "whole.bin"},
                                 content=b"whole", headers=auth(tenant.admin_key))
            assert ok.status_code == 201, ok.text
