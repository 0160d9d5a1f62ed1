"""A WebSocket connection's bounded send queue and its room subscriptions.

The hub never awaits a socket: it offers messages to the outbox, and one writer task
per connection drains it. When a subscriber cannot keep up, the queue reaches its
bound, the subscription is dropped and a ``gap`` tells the client where to resume,
so a slow reader costs at most ``bound`` queued messages, never more.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from api.feed import messages as msg
from api.feed.messages import Room
from domain.ids import TenantId


@dataclass(eq=False)
class Subscription:
    """One room of one connection, registered with the tenant's feed while live."""

    outbox: Outbox
    room: Room
    live: bool = True


@dataclass(eq=False)
class Outbox:
    """The send side of one connection."""

    tenant_id: TenantId
    bound: int
    on_drop: Callable[[Subscription], None] = field(default=lambda sub: None)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    high_water: int = 0
    gaps_sent: int = 0
    closed: bool = False
    _queue: deque[str] = field(default_factory=deque)
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    def __len__(self) -> int:
        return len(self._queue)

    def room_free(self) -> int:
        """How many event messages still fit before the bound."""
        return max(self.bound - len(self._queue), 0)

    def put_control(self, text: str) -> None:
        """Queue a control message (reply, marker, gap): these bypass the bound.

        Control messages answer the client's own requests or end a subscription, so
        there are at most a few per request; they cannot grow without bound.
        """
        if self.closed:
            return
        self._queue.append(text)
        self._mark()

    def offer(self, sub: Subscription, text: str, head_seq: int) -> None:
        """Queue an event message for ``sub``, or drop ``sub`` with a gap if full."""
        if self.closed or not sub.live:
            return
        if len(self._queue) >= self.bound:
            self.drop(sub, head_seq)
            return
        self._queue.append(text)
        self._mark()

    def drop(self, sub: Subscription, head_seq: int) -> None:
        """End ``sub`` with a gap: the client refetches and resubscribes from head_seq."""
        if not sub.live:
            return
        sub.live = False
        if self.subscriptions.get(sub.room.name) is sub:
            del self.subscriptions[sub.room.name]
        self.on_drop(sub)
        self.gaps_sent += 1
        self.put_control(msg.gap(sub.room.name, head_seq))

    def _mark(self) -> None:
        n = len(self._queue)
        if n > self.high_water:
            self.high_water = n
        self._ready.set()

    async def next(self) -> str:
        """Wait for the next message to send."""
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        return self._queue.popleft()

    def close(self) -> None:
        self.closed = True
        self._queue.clear()
        self._ready.set()
