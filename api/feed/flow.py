"""What the feed needs from its socket beyond ASGI: to see that it has stopped draining,
and to put a ``gap`` or a close ahead of everything it has not yet sent.

ASGI gives a sender no way to learn that the client has stopped reading: a send just
waits, for as long as the client likes. ``helpdesk serve`` runs the feed on a WebSocket
protocol (``api.serving.websocket``) that offers this interface as a scope extension;
under another server the feed falls back to plain sends and sheds slow clients by its
queue bound alone.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

from starlette.websockets import WebSocket

FLOW_EXTENSION = "helpdesk.socket_flow"
# The client did not read what it was sent in time (docs/websocket.md).
CLOSE_TOO_SLOW = 4408


class SocketFlow(Protocol):
    def paused(self) -> bool:
        """Whether the socket is full: a write now would wait for the client to read."""

    async def drained(self, timeout: float) -> bool:
        """Wait until the socket takes writes again; False if it has not within ``timeout``."""

    def write_now(self, text: str) -> None:
        """Write a text frame at once, even while the socket is full (a few bytes, so
        the client finds them right behind what it already has); ``ConnectionError``
        once the socket is closing."""

    def close_now(self, code: int, reason: str) -> None:
        """Write a close frame at once; the socket is dropped if the client does not
        answer it within the server's close timeout."""


def flow_of(websocket: WebSocket) -> SocketFlow | None:
    """The socket's flow control, when the server offers it."""
    extensions: dict[str, Any] = websocket.scope.get("extensions") or {}
    return cast("SocketFlow | None", extensions.get(FLOW_EXTENSION))
