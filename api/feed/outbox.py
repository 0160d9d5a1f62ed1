"""A WebSocket connection's bounded send queue and its room subscriptions.

The hub never awaits a socket: it offers messages to the outbox, and one writer task
per connection drains it. Every queued event message belongs to a subscription (its
backlog). When a connection's queued event messages reach the bound, the subscription
being offered more is dropped: its unsent backlog is discarded and a ``gap`` takes the
place of its first unsent message, so the client learns where to resume before anything
else of that room. A slow reader thus costs at most ``bound`` queued event messages.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from api.feed import messages as msg
from api.feed.messages import Room
from api.http.principal import Principal
from domain.ids import TenantId


@dataclass(eq=False)
class Subscription:
    """One room of one connection, registered with the tenant's feed while live."""

    outbox: Outbox
    room: Room
    live: bool = True
    principal: Principal | None = None
    """Whose notifications the room carries (the notifications room only)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A queued message; ``sub`` is the subscription whose backlog it is, if any."""

    text: str
    sub: Subscription | None = None
    gap: bool = False


@dataclass(eq=False)
class Outbox:
    """The send side of one connection."""

    tenant_id: TenantId
    bound: int
    types: frozenset[str] | None = None  # the event types the role reads; None: all
    agent_id: str | None = None  # the agent the connection acts as: not sent its own presence
    on_drop: Callable[[Subscription], None] = field(default=lambda sub: None)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    high_water: int = 0
    gaps_sent: int = 0
    waits: int = 0  # times the writer found the socket full and waited for it
    closed: bool = False
    _queue: deque[Outgoing] = field(default_factory=deque)
    _backlog: int = 0  # queued messages that belong to a subscription
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    def reads(self, event_type: str) -> bool:
        """Whether this connection's role is sent events of ``event_type``."""
        return self.types is None or event_type in self.types

    def __len__(self) -> int:
        return len(self._queue)

    def room_free(self) -> int:
        """How many event messages still fit before the bound."""
        return max(self.bound - self._backlog, 0)

    def put_control(self, text: str) -> None:
        """Queue a control message (reply, error, heartbeat, gap): these bypass the bound.

        Control messages answer the client's own requests or end a subscription, so
        there are at most a few per request; they cannot grow without bound.
        """
        if self.closed:
            return
        self._queue.append(Outgoing(text))
        self._mark()

    def put_gap(self, text: str) -> None:
        """Queue a ``gap`` (a control message that a stalled socket gets ahead of all)."""
        if self.closed:
            return
        self._queue.append(Outgoing(text, gap=True))
        self._mark()

    def put(self, sub: Subscription, text: str) -> None:
        """Queue a message of ``sub``'s backlog (replayed events, its marker) as is:
        the caller checked ``room_free``."""
        if self.closed:
            return
        self._queue.append(Outgoing(text, sub))
        self._backlog += 1
        self._mark()

    def offer(self, sub: Subscription, text: str, head_seq: int) -> None:
        """Queue an event message for ``sub``, or drop ``sub`` with a gap if full."""
        if self.closed or not sub.live:
            return
        if self._backlog >= self.bound:
            self.drop(sub, head_seq)
            return
        self.put(sub, text)

    def drop(self, sub: Subscription, head_seq: int) -> None:
        """End ``sub`` with a gap queued ahead of its unsent backlog, which is discarded."""
        if not sub.live:
            return
        gap = self.end(sub, head_seq)
        kept: deque[Outgoing] = deque()
        for item in self._queue:
            if item.sub is sub:
                if gap:
                    kept.append(Outgoing(gap, gap=True))
                    gap = ""
                self._backlog -= 1
            else:
                kept.append(item)
        if gap:
            kept.append(Outgoing(gap, gap=True))
        self._queue = kept
        self._mark()

    def end(self, sub: Subscription, head_seq: int) -> str:
        """End ``sub``: the client refetches and resubscribes from ``head_seq``.

        Returns the ``gap`` message for the caller to send; nothing more of ``sub`` is
        queued from now on, and what is queued of it is left to the caller.
        """
        sub.live = False
        if self.subscriptions.get(sub.room.name) is sub:
            del self.subscriptions[sub.room.name]
        self.on_drop(sub)
        self.gaps_sent += 1
        return msg.gap(sub.room.name, head_seq)

    def shed(self) -> list[str]:
        """Discard every queued message of a subscription that is no longer live, and
        take out the queued gaps; returns the gaps, oldest first, for the caller to send."""
        gaps = [item.text for item in self._queue if item.gap]
        kept = deque(item for item in self._queue
                     if not item.gap and (item.sub is None or item.sub.live))
        self._backlog = sum(1 for item in kept if item.sub is not None)
        self._queue = kept
        return gaps

    def push_front(self, item: Outgoing) -> None:
        """Put back a message taken by ``next`` but not sent."""
        if self.closed:
            return
        self._queue.appendleft(item)
        if item.sub is not None:
            self._backlog += 1
        self._ready.set()

    def _mark(self) -> None:
        n = len(self._queue)
        if n > self.high_water:
            self.high_water = n
        self._ready.set()

    async def next(self) -> Outgoing:
        """Wait for the next message to send."""
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        item = self._queue.popleft()
        if item.sub is not None:
            self._backlog -= 1
        return item

    def close(self) -> None:
        self.closed = True
        self._queue.clear()
        self._backlog = 0
        self._ready.set()
