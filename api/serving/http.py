"""HTTP/1.1 with deadlines for reading a request: one for the head, one for the body.

uvicorn's keep-alive timeout only runs between a response and the next request, so a
client that sends half a request head, or trickles a body, holds its connection (and a
file descriptor, and a place under the connection cap) for as long as it likes. The
timers must sit in the protocol: an ASGI app is called only once the head is complete,
and the protocol sees body bytes arrive whether or not the app is reading.

The head deadline runs from the moment the server could read a request (the connection
is accepted, or the first byte after a keep-alive response arrives) to the end of its
headers; when it passes, the connection is closed (there is no request to answer yet).
The body deadline runs from the end of the head to the end of the body; when it passes,
the client gets ``408`` problem+json and ``Connection: close``, unless an answer has
already started, in which case the connection is just closed. Bytes that arrive earn
time (``HTTP_BODY_MIN_RATE``): the deadline is the head's end plus ``HTTP_BODY_TIMEOUT``
plus the bytes received so far divided by the rate. A large upload that keeps the rate
is never cut off; a trickle earns next to nothing and meets the plain deadline, so a
slow client still cannot hold a connection for long at little cost to itself. (A
deadline between reads, as nginx's ``client_body_timeout``, would let one byte every
few seconds hold the connection for ever.)

This subclasses uvicorn's httptools protocol (the one it picks by itself when
httptools is installed, as ``uvicorn[standard]`` does) and relies on its parser
callbacks; uvicorn is pinned, and tests/e2e/test_http_deadlines.py runs the deadlines
against a real ``helpdesk serve``.
"""

from __future__ import annotations

import asyncio

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

REQUEST_TIMEOUT_BODY = orjson.dumps({
    "type": "https://helpdesk.dev/problems/request_timeout",
    "title": "Request Timeout",
    "status": 408,
    "code": "request_timeout",
    "detail": "the request body did not arrive in time",
})
# After a 408, how long the rest of the body is read and discarded before the close:
# closing a socket with unread data makes the kernel send a reset, which can destroy
# the answer before the client has read it.
LINGER_SECONDS = 2.0


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a head and a body deadline per request.

    The deadlines are the app's settings (``HTTP_HEAD_TIMEOUT``, ``HTTP_BODY_TIMEOUT``),
    read from the lifespan state uvicorn hands every connection, so the class itself is
    a plain module-level one: ``serve --workers`` sends its name to each process.
    """

    head_timeout: float = 10.0
    body_timeout: float = 30.0
    body_min_rate: int = 65_536
    _body_started: float = 0.0
    _body_bytes: int = 0
    _head_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _lingering: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        services = self.app_state.get("services")
        if services is not None:
            self.head_timeout = services.settings.http_head_timeout
            self.body_timeout = services.settings.http_body_timeout
            self.body_min_rate = services.settings.http_body_min_rate
        super().connection_made(transport)
        # A connection that never sends a byte is held to the head deadline too.
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_expired)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # the rest of a body already answered with 408
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.head_timeout, self._head_expired)

    def on_headers_complete(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().on_headers_complete()
        if not (self.parser.should_upgrade() and self._should_upgrade()):
            self._body_started, self._body_bytes = self.loop.time(), 0
            self._body_timer = self.loop.call_later(self.body_timeout, self._body_expired)

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def _body_deadline(self) -> float:
        """When the body must be in, given the bytes received so far."""
        earned = self._body_bytes / self.body_min_rate if self.body_min_rate else 0.0
        return self._body_started + self.body_timeout + earned

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None
        super().on_message_complete()

    def handle_websocket_upgrade(self) -> None:
        self._cancel_timers()  # the WebSocket protocol owns the connection from here
        super().handle_websocket_upgrade()

    def _cancel_timers(self) -> None:
        for timer in (self._head_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = None

    def _head_expired(self) -> None:
        self._head_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # The next request's head is late while this one is still being answered
            # (pipelining): finish the answer, then close instead of keeping alive.
            self.cycle.keep_alive = False
            return
        self.transport.close()

    def _body_expired(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        deadline = self._body_deadline()
        if self.loop.time() < deadline:  # the bytes that came meanwhile earned more time
            self._body_timer = self.loop.call_at(deadline, self._body_expired)
            return
        cycle = self.cycle
        if cycle is not None and not cycle.response_started:
            # Answer for the app, which is waiting for a body that will not come: the
            # cycle counts as disconnected, so the app's receive() ends and anything it
            # still sends is dropped.
            cycle.response_started = cycle.response_complete = True
            cycle.disconnected = True
            cycle.message_event.set()
            self.transport.write(b"".join([
                b"HTTP/1.1 408 Request Timeout\r\n",
                *(name + b": " + value + b"\r\n"
                  for name, value in self.server_state.default_headers),
                b"content-type: application/problem+json\r\n",
                b"content-length: %d\r\n" % len(REQUEST_TIMEOUT_BODY),
                b"connection: close\r\n\r\n",
                REQUEST_TIMEOUT_BODY,
            ]))
            if self.transport.can_write_eof():
                self._lingering = True
                self.flow.resume_reading()
                self.transport.write_eof()
                self.loop.call_later(LINGER_SECONDS, self.transport.close)
                return
        self.transport.close()
