"""A small client for ``WS /v1/stream`` that survives disconnects.

It remembers the last seq it saw in each room; after a disconnect it reconnects and
resubscribes with ``after_seq`` set to it, so it receives exactly the events it
missed. On a ``gap`` in the tenant room (too far behind for the server's replay, or
too slow), with ``changes_url`` given, it resumes without refetching anything: it
pages ``GET /v1/changes`` from its last seq, hands every event to ``on_event`` as if
the feed had sent it, and resubscribes from the head it reached, so the application
sees every event exactly once. Without ``changes_url`` (or for a ticket room) it
awaits the ``on_gap`` callback, where the application refetches what it shows over
REST, and resubscribes from the gap's ``head_seq``. The socket is read only as fast
as ``on_event`` returns: one that blocks for long makes the server end the
subscriptions with a gap and then close the connection with 4408 (too slow), after
which the client reconnects at once. Usage::

    async def show(room: str, message: dict) -> None: ...
    async def refetch(room: str, head_seq: int) -> None: ...

    client = StreamClient("ws://127.0.0.1:8000/v1/stream", api_key,
                          rooms={"tenant": None}, on_event=show, on_gap=refetch,
                          changes_url="http://127.0.0.1:8000/v1/changes")
    task = asyncio.create_task(client.run())
    ...
    await client.close()

Presence (docs/websocket.md, "Presence"): ``await client.present(ticket_id, "viewing")``
says the key's agent is viewing a ticket (``"typing"``, ``"gone"``); what it last said
is said again after a reconnect, and the caller refreshes it within the server's time
to live. ``on_presence`` gets the ``presence`` and ``presence_list`` messages of the
rooms followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import httpx
import orjson
import websockets
from websockets.exceptions import ConnectionClosed

EventHandler = Callable[[str, dict[str, Any]], Awaitable[None]]
GapHandler = Callable[[str, int], Awaitable[None]]

# Close codes after which reconnecting cannot help.
FATAL_CODES = frozenset({4400, 4401, 4403})
# The server gave up on this client because it stopped reading (see on_event): not a
# failure of the network or the server, so reconnect at once and resume.
TOO_SLOW = 4408


class StreamRefused(Exception):
    """The server refused the connection for good (bad or revoked key, wrong role)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


async def _no_gap(_room: str, _head_seq: int) -> None:
    return None


class StreamClient:
    """Follows rooms of the feed, resuming from the last seen seq after disconnects."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        rooms: Mapping[str, int | None] | Iterable[str],
        on_event: EventHandler,
        on_gap: GapHandler = _no_gap,
        header_auth: bool = True,
        min_backoff: float = 0.05,
        max_backoff: float = 5.0,
        changes_url: str | None = None,
        changes_page: int = 1000,
        on_presence: EventHandler | None = None,
    ) -> None:
        self.url = url
        self.token = token
        self.last_seq: dict[str, int | None] = (
            dict(rooms) if isinstance(rooms, Mapping) else dict.fromkeys(rooms)
        )
        self.on_event = on_event
        self.on_gap = on_gap
        self.header_auth = header_auth
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.connects = 0
        self.gaps = 0
        self.too_slow = 0  # connections the server closed with 4408
        self.changes_url = changes_url
        self.changes_page = changes_page
        self.resumed = 0  # gaps closed from /v1/changes, with no refetch
        self.on_presence = on_presence
        self.presence: dict[str, str] = {}  # ticket id -> what we last said there
        self._subscribed: dict[str, asyncio.Event] = {r: asyncio.Event() for r in self.last_seq}
        self._ws: Any = None
        self._said_hello = False  # the current socket has authenticated (ops may go)
        self._closing = False

    async def wait_subscribed(self, room: str, timeout: float = 10.0) -> None:
        """Wait until ``room`` is live (its replay done) on the current connection."""
        await asyncio.wait_for(self._subscribed[room].wait(), timeout)

    async def present(self, ticket_id: str, state: str) -> None:
        """Say ``state`` (``viewing``, ``typing`` or ``gone``) of the key's agent on a
        ticket: now if connected, and again after every reconnect until ``gone``."""
        if state == "gone":
            self.presence.pop(ticket_id, None)
        else:
            self.presence[ticket_id] = state
        if self._ws is not None and self._said_hello:
            with contextlib.suppress(ConnectionClosed):
                await self._send_presence(self._ws, ticket_id, state)

    async def _send_presence(self, ws: Any, ticket_id: str, state: str) -> None:
        await ws.send(orjson.dumps({"op": "presence", "ticket_id": ticket_id,
                                    "state": state}).decode())

    async def close(self) -> None:
        """Stop: ``run`` returns."""
        self._closing = True
        if self._ws is not None:
            await self._ws.close()

    async def drop_connection(self) -> None:
        """Close the socket without stopping (as a network failure would)."""
        if self._ws is not None:
            await self._ws.close()

    async def run(self) -> None:
        """Connect, subscribe and dispatch until ``close``; reconnect on failures.

        Raises ``StreamRefused`` when the server refuses the key or role.
        """
        failures = 0
        while not self._closing:
            try:
                await self._session()
                failures = 0
            except ConnectionClosed as exc:
                code = exc.rcvd.code if exc.rcvd is not None else 1006
                if code in FATAL_CODES:
                    raise StreamRefused(code, exc.rcvd.reason if exc.rcvd else "") from exc
                if code == TOO_SLOW:
                    self.too_slow += 1
            except (OSError, TimeoutError, websockets.InvalidHandshake):
                failures += 1
            if self._closing:
                return
            delay = min(self.max_backoff, self.min_backoff * 2 ** min(failures, 10))
            await asyncio.sleep(delay * random.uniform(0.5, 1.0))

    async def _session(self) -> None:
        headers = {"Authorization": f"Bearer {self.token}"} if self.header_auth else None
        async with websockets.connect(self.url, additional_headers=headers,
                                      open_timeout=5, max_size=2**24) as ws:
            self._ws = ws
            try:
                self.connects += 1
                if not self.header_auth:
                    await ws.send(orjson.dumps({"op": "auth", "token": self.token}).decode())
                for room in self.last_seq:
                    self._subscribed[room].clear()
                    await self._subscribe(ws, room)
                self._said_hello = True
                for ticket_id, state in list(self.presence.items()):
                    await self._send_presence(ws, ticket_id, state)
                async for raw in ws:
                    await self._dispatch(ws, orjson.loads(raw))
            finally:
                self._ws = None
                self._said_hello = False
                for event in self._subscribed.values():
                    event.clear()

    async def _subscribe(self, ws: Any, room: str) -> None:
        op: dict[str, Any] = {"op": "subscribe", "room": room}
        if self.last_seq[room] is not None:
            op["after_seq"] = self.last_seq[room]
        await ws.send(orjson.dumps(op).decode())

    async def _dispatch(self, ws: Any, message: dict[str, Any]) -> None:
        kind = message.get("type")
        room = message.get("room")
        if kind in ("event", "withheld") and room in self.last_seq:
            seq = message["seq"]
            last = self.last_seq[room]
            if last is not None and seq <= last:
                return  # already seen; the server does not resend, but be safe
            if room == "tenant" and last is not None and seq != last + 1:
                # The tenant room is contiguous: a hole means we lost something.
                await self._gap(ws, room, last)
                return
            self.last_seq[room] = seq
            if kind == "event":  # a withheld one only moves the position past it
                await self.on_event(room, message)
        elif kind == "notification" and room in self.last_seq:
            # Sparse (gaps where nothing concerned the agent), so only its order counts.
            last = self.last_seq[room]
            if last is not None and message["seq"] <= last:
                return
            self.last_seq[room] = message["seq"]
            await self.on_event(room, message)
        elif kind == "subscribed" and room in self.last_seq:
            if self.last_seq[room] is None:
                self.last_seq[room] = message["head_seq"]
            self._subscribed[room].set()
        elif kind in ("presence", "presence_list") and room in self.last_seq:
            if self.on_presence is not None:
                await self.on_presence(room, message)
        elif kind == "gap" and room in self.last_seq:
            self._subscribed[room].clear()  # the server has ended the subscription
            await self._gap(ws, room, message["head_seq"])

    async def _gap(self, ws: Any, room: str, head_seq: int) -> None:
        self.gaps += 1
        last = self.last_seq[room]
        if self.changes_url is not None and room == "tenant" and last is not None:
            self.last_seq[room] = await self._catch_up(room, last)
            self.resumed += 1
        else:
            await self.on_gap(room, head_seq)
            self.last_seq[room] = head_seq
        with contextlib.suppress(ConnectionClosed):
            if room in self.last_seq and self._subscribed[room].is_set():
                # A hole seen by the client: the server still thinks we are live.
                await ws.send(orjson.dumps({"op": "unsubscribe", "room": room}).decode())
            self._subscribed[room].clear()
            await self._subscribe(ws, room)

    async def _catch_up(self, room: str, after_seq: int) -> int:
        """Hand ``on_event`` every event after ``after_seq`` from ``GET /v1/changes``,
        in the feed's message shape; returns the seq it reached (the head when read)."""
        assert self.changes_url is not None
        headers = {"Authorization": f"Bearer {self.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            while True:
                r = await http.get(self.changes_url, params={
                    "after_seq": after_seq, "limit": self.changes_page})
                r.raise_for_status()
                page = r.json()
                for change in page["data"]:
                    event = {k: v for k, v in change.items() if k != "seq"}
                    await self.on_event(room, {"type": "event", "room": room,
                                               "seq": change["seq"], "event": event})
                after_seq = page["next_after_seq"]
                if after_seq >= page["head_seq"]:
                    return after_seq
