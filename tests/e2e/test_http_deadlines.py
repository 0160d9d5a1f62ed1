"""Requests that never finish are closed; the connection cap answers 503.

Against a real ``helpdesk serve`` process on a real socket, with short deadlines set
through the environment, as an operator would set them.
"""

from __future__ import annotations

import asyncio

import httpx
import orjson
import pytest
import websockets

from tests.e2e.ws_support import free_port, serve_process

pytestmark = pytest.mark.slow

HEAD = 1.5  # HTTP_HEAD_TIMEOUT in these tests
BODY = 2.0  # HTTP_BODY_TIMEOUT
RATE = 4096  # HTTP_BODY_MIN_RATE, bytes a second
CAP = 230  # MAX_CONNECTIONS
STALLED = 200
# How late after its deadline a close may come on a busy 2-core machine.
SLACK = 1.5


async def _closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection."""
    try:
        return await reader.read()
    except ConnectionResetError:
        return b""


async def _stall_head(port: int) -> tuple[float, asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    # Taken before connecting: the server's deadline runs from its accept, which cannot
    # come earlier, while this loop may resume late after the connect on a busy machine.
    opened = loop.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half-Of-A")
    await writer.drain()
    return opened, reader, writer


async def test_stalled_heads_are_closed_at_the_head_deadline_while_others_are_served(
        db) -> None:
    port = free_port()
    loop = asyncio.get_running_loop()
    async with serve_process(db.runtime_url, port, HTTP_HEAD_TIMEOUT=str(HEAD),
                             HTTP_BODY_TIMEOUT=str(BODY), MAX_CONNECTIONS=str(CAP)):
        base = f"http://127.0.0.1:{port}"
        stalled = [await _stall_head(port) for _ in range(STALLED)]

        async def close_delay(opened: float, reader: asyncio.StreamReader) -> float:
            assert await _closed_by_server(reader) == b""  # closed, not answered
            return loop.time() - opened

        waits = [asyncio.create_task(close_delay(opened, reader))
                 for opened, reader, _ in stalled]
        # Meanwhile a normal client is served.
        async with httpx.AsyncClient(base_url=base) as http:
            for _ in range(20):
                assert (await http.get("/health/live")).status_code == 200
        delays = await asyncio.wait_for(asyncio.gather(*waits), HEAD + SLACK + 5)
        for _, _, writer in stalled:
            writer.close()
        print(f"\n{STALLED} stalled heads closed after {min(delays):.2f}-{max(delays):.2f} s "
              f"(HTTP_HEAD_TIMEOUT={HEAD})")
        assert min(delays) >= HEAD - 0.1, delays
        assert max(delays) <= HEAD + SLACK, delays

        # A connection that never sends a byte is held to the same deadline.
        opened = loop.time()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(_closed_by_server(reader), HEAD + SLACK + 5) == b""
        assert HEAD - 0.1 <= loop.time() - opened <= HEAD + SLACK
        writer.close()


async def test_a_trickled_body_gets_408_at_the_body_deadline(db, make_tenant) -> None:
    """A trickle meets the deadline; a large body that keeps HTTP_BODY_MIN_RATE earns
    the time it needs and is served, however long past HTTP_BODY_TIMEOUT it runs."""
    t = await make_tenant("Acme")
    port = free_port()
    loop = asyncio.get_running_loop()
    async with serve_process(db.runtime_url, port, HTTP_HEAD_TIMEOUT=str(HEAD),
                             HTTP_BODY_TIMEOUT=str(BODY), HTTP_BODY_MIN_RATE=str(RATE)):
        body = orjson.dumps({"subject": "Printer on fire", "body": "x" * 1900,
                             "requester": {"email": "ann@example.com"}})
        head = (f"POST /v1/tickets HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                f"Authorization: Bearer {t.admin_key.secret}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")

        # One byte per 100 ms: 2000 bytes would take over three minutes.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head.encode())
        started = loop.time()

        async def trickle() -> None:
            for i in range(len(body)):
                writer.write(body[i:i + 1])
                await writer.drain()
                await asyncio.sleep(0.1)

        trickling = asyncio.create_task(trickle())
        answer = await asyncio.wait_for(_closed_by_server(reader), BODY + SLACK + 5)
        took = loop.time() - started
        trickling.cancel()
        writer.close()
        print(f"\ntrickled body answered after {took:.2f} s (HTTP_BODY_TIMEOUT={BODY})")
        status_line, _, rest = answer.partition(b"\r\n")
        assert status_line == b"HTTP/1.1 408 Request Timeout", answer
        headers, _, payload = rest.partition(b"\r\n\r\n")
        assert b"connection: close" in headers.lower()
        assert orjson.loads(payload)["code"] == "request_timeout"
        assert BODY - 0.1 <= took <= BODY + SLACK

        # A body that is slow but arrives within the deadline is served as usual.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head.encode())
        for i in range(0, len(body), len(body) // 10 + 1):
            writer.write(body[i:i + len(body) // 10 + 1])
            await asyncio.sleep(0.1)
        status = await asyncio.wait_for(reader.readline(), 10)
        assert status.startswith(b"HTTP/1.1 201"), status
        writer.close()

        # 16 KiB of a file at about 5 KiB/s, above the rate: some 3.2 s, past the
        # plain deadline (which cut it off at 2 s before the rate existed).
        upload = b"log line\n" * 1820
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write((f"POST /v1/uploads?name=app.log HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      f"Authorization: Bearer {t.admin_key.secret}\r\n"
                      f"Content-Type: text/plain\r\nContent-Length: {len(upload)}\r\n\r\n"
                      ).encode())
        started = loop.time()
        for i in range(0, len(upload), 1024):
            writer.write(upload[i:i + 1024])
            await writer.drain()
            await asyncio.sleep(0.2)
        status = await asyncio.wait_for(reader.readline(), 10)
        took = loop.time() - started
        writer.close()
        print(f"16 KiB at ~5 KiB/s served after {took:.2f} s (HTTP_BODY_MIN_RATE={RATE})")
        assert status.startswith(b"HTTP/1.1 201"), status
        assert took > BODY + 0.5


async def test_the_connection_cap_answers_503_and_lifts_as_connections_close(db) -> None:
    port = free_port()
    async with serve_process(db.runtime_url, port, HTTP_HEAD_TIMEOUT=str(HEAD),
                             MAX_CONNECTIONS="20"):
        base = f"http://127.0.0.1:{port}"
        # Idle connections up to the cap (uvicorn counts the one asking too).
        idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(19)]
        await asyncio.sleep(0.2)  # let the server accept them all
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.get("/health/live")
            assert r.status_code == 503, r.text
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(base.replace("http", "ws") + "/v1/stream", open_timeout=5)
        assert refused.value.response.status_code == 503
        # The idle ones are closed at the head deadline; the cap lifts by itself.
        for reader, _ in idle:
            assert await asyncio.wait_for(_closed_by_server(reader), HEAD + SLACK + 5) == b""
        for _, writer in idle:
            writer.close()
        async with httpx.AsyncClient(base_url=base) as http:
            assert (await http.get("/health/live")).status_code == 200
