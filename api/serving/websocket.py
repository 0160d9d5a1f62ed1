"""The WebSocket protocol ``helpdesk serve`` runs: uvicorn's, able to shed a stalled client.

uvicorn's sans-I/O WebSocket protocol makes every send, a close included, wait while
the client leaves its socket full; its keepalive closes a client that does not answer
pings with 1011 (which our protocol reserves for server failures); and a close that is
not answered is followed by a graceful transport close, which waits for the full
buffer to drain: a client that never reads again keeps its connection for good.

This subclass adds:

- the feed's ``SocketFlow`` (``api.feed.flow``) as a scope extension: wait for the
  socket to drain with a deadline, write a ``gap`` at once even while it is full, close
  at once;
- a close, by the app or for a ping left unanswered (4408), is written at once, and
  the connection is aborted if the client has not answered it within the close
  timeout (10 s), so a client that reads nothing cannot hold it;
- the per-process connection cap (``MAX_CONNECTIONS``) for upgrades too: uvicorn
  applies ``limit_concurrency`` to HTTP requests only.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.http11 import Request
from websockets.protocol import State

from api.feed.flow import CLOSE_TOO_SLOW, FLOW_EXTENSION


class FeedWebSocketProtocol(WebSocketsSansIOProtocol):
    """uvicorn's sans-I/O WebSocket protocol with the feed's flow control."""

    def handle_connect(self, event: Request) -> None:
        limit = self.config.limit_concurrency
        if limit is not None and (len(self.connections) >= limit or len(self.tasks) >= limit):
            self.logger.warning("Exceeded concurrency limit.")
            self.handshake_initiated = self.handshake_complete = self.close_sent = True
            self.conn.send_response(self.conn.reject(503, "Service Unavailable\n"))
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.transport.close()
            return
        super().handle_connect(event)
        if not self.close_sent:  # accepted: the app is about to run with this scope
            extensions: dict[str, Any] = self.scope["extensions"]
            extensions[FLOW_EXTENSION] = self

    # --- SocketFlow -------------------------------------------------------------------

    def paused(self) -> bool:
        return not self.writable.is_set()

    async def drained(self, timeout: float) -> bool:
        if self.writable.is_set():
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.writable.wait()
        except TimeoutError:
            return False
        return True

    def write_now(self, text: str) -> None:
        if self.disconnected or self.close_sent or self.transport.is_closing():
            raise ConnectionError("the WebSocket is closing")
        try:
            self.conn.send_text(text.encode())
        except InvalidState as exc:
            raise ConnectionError("the WebSocket is closing") from exc
        self.transport.write(b"".join(self.conn.data_to_send()))

    def close_now(self, code: int, reason: str) -> None:
        if (self.close_sent or self.disconnected or self.transport.is_closing()
                or self.conn.state is not State.OPEN):
            return
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        self.conn.send_close(code, reason)
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        self.stop_keepalive()
        if self.read_paused:  # the client's answer to the close must be read
            self.read_paused = False
            self.transport.resume_reading()
        self.close_timer = self.loop.call_later(self.close_timeout, self.transport.abort)

    # --- uvicorn's paths, made not to wait on a full socket ------------------------------

    async def send(self, message: ASGISendEvent) -> None:
        if (message["type"] == "websocket.close" and self.handshake_complete
                and self.initial_response is None and not self.close_sent
                and not self.disconnected):
            self.close_now(message.get("code", 1000), message.get("reason") or "")
            return
        await super().send(message)

    def keepalive_timeout(self) -> None:
        self.pong_timer = None
        self.pending_ping_payload = None
        self.close_now(CLOSE_TOO_SLOW, "too slow: no answer to ping")

    def shutdown(self) -> None:
        super().shutdown()
        # uvicorn closes gracefully, which waits for a full buffer to drain; a client
        # that reads nothing would hold the server's exit.
        self.loop.call_later(self.close_timeout, self.transport.abort)
