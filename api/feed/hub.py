"""The process's WebSocket hub: per-tenant feeds, replay, and live fan-out.

For each tenant with subscribers in this process the hub keeps a feed: the last seq
it has read, a bounded ring of recent events, and the subscriptions. A notification
(or, as a fallback for a lost one, the poll timer) wakes the feed's drain task,
which reads the new events once (under the tenant's own row-level security context)
and offers them to every subscription's outbox.

Replay and live handoff: a subscription is replayed and registered while holding the
feed's lock, the same lock the drain task holds while it reads and publishes. So the
replay covers exactly ``(after_seq, head]`` where ``head`` is the feed's last seq, and
every later event reaches the subscription live: nothing is missed or sent twice.

Erasure: the ring keeps events as they were opened when read. A ``ContactErased``
empties it, so a replay after an erasure reads the earlier events from the store,
where the contact's fields now open as ``{"erased": true}``, as the event feed shows.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from api.feed import messages as msg
from api.feed.messages import Room
from api.feed.notices import notices
from api.feed.outbox import Outbox, Subscription
from api.http.principal import Principal
from domain.events import ContactErased
from domain.ids import TenantId
from eventstore.errors import EventStoreError
from eventstore.listener import Listener
from eventstore.notifier import CHANNEL as EVENTS_CHANNEL
from eventstore.store import EventStore
from eventstore.types import IMPORT_ACTOR_KIND, RecordedEvent

log = logging.getLogger("helpdesk.ws")


@dataclass(frozen=True, slots=True)
class RingEntry:
    seq: int
    stream_id: uuid.UUID
    type: str
    body: dict[str, Any]
    tenant_text: str
    imported: bool = False
    """Appended by an importer (eventstore/types.py ``IMPORT_ACTOR_KIND``): history,
    so no notice of it goes out; the tenant room gets ``withheld`` in its place."""


@dataclass(eq=False)
class TenantFeed:
    """What the hub knows of one tenant it serves."""

    tenant_id: TenantId
    ring: deque[RingEntry]
    last_seq: int | None = None
    known_head: int = 0
    tenant_subs: set[Subscription] = field(default_factory=set)
    notice_subs: set[Subscription] = field(default_factory=set)
    ticket_subs: dict[uuid.UUID, set[Subscription]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dirty: bool = False
    pending: int = 0
    task: asyncio.Task[None] | None = None

    def add(self, sub: Subscription) -> None:
        if sub.room.notices:
            self.notice_subs.add(sub)
        elif sub.room.stream_id is None:
            self.tenant_subs.add(sub)
        else:
            self.ticket_subs.setdefault(sub.room.stream_id, set()).add(sub)

    def remove(self, sub: Subscription) -> None:
        if sub.room.notices:
            self.notice_subs.discard(sub)
            return
        if sub.room.stream_id is None:
            self.tenant_subs.discard(sub)
            return
        subs = self.ticket_subs.get(sub.room.stream_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self.ticket_subs[sub.room.stream_id]

    def idle(self) -> bool:
        return (not self.tenant_subs and not self.ticket_subs and not self.notice_subs
                and self.pending == 0)


class Hub:
    """Serves the feed for every connection of this process."""

    def __init__(
        self,
        store: EventStore,
        *,
        replay_window: int = 1000,
        ring_size: int | None = None,
        batch: int = 500,
        poll_seconds: float = 1.0,
    ) -> None:
        self.store = store
        self.replay_window = replay_window
        self.ring_size = max(ring_size if ring_size is not None else replay_window, 1)
        self.batch = batch
        self.feeds: dict[TenantId, TenantFeed] = {}
        self.outboxes: set[Outbox] = set()
        self.listener: Listener | None = None
        self.poll_seconds = poll_seconds
        self._poller: asyncio.Task[None] | None = None
        self.watchers: dict[TenantId, set[asyncio.Event]] = {}
        """Wake-ups of the customer feed (api/feed/customer.py), which reads for itself
        under the customer's row-level security rather than from the ring."""

    # --- lifecycle -----------------------------------------------------------------

    async def start(self, listen_dsn: str) -> None:
        """Start listening for commits; returns at once (the listener connects by itself)."""
        self.listener = Listener(listen_dsn, EVENTS_CHANNEL, self.notify, self.reconnected)
        self.listener.start()
        self._poller = asyncio.create_task(self._poll(), name="helpdesk-ws-poll")

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
        if self.listener is not None:
            await self.listener.stop()
        for feed in list(self.feeds.values()):
            if feed.task is not None:
                feed.task.cancel()
        self.feeds.clear()

    # --- notifications --------------------------------------------------------------

    def notify(self, payload: str) -> None:
        """Handle ``'<tenant_id>'`` (events committed): wake the tenant's feed if we
        serve it; it reads on from the last seq it published."""
        try:
            tenant_id = TenantId(uuid.UUID(payload.partition(":")[0]))
        except ValueError:
            log.warning("ignoring malformed notification %r", payload)
            return
        feed = self.feeds.get(tenant_id)
        if feed is not None:
            self._poke(feed)
        for wake in self.watchers.get(tenant_id, ()):
            wake.set()

    def reconnected(self) -> None:
        """The listener (re)connected: catch up every tenant we serve."""
        for feed in self.feeds.values():
            self._poke(feed)
        self._wake_all()

    def watch(self, tenant_id: TenantId) -> asyncio.Event:
        """An event set whenever the tenant may have new events (a notification, the
        listener's reconnection, the poll timer); the watcher clears it and reads."""
        wake = asyncio.Event()
        self.watchers.setdefault(tenant_id, set()).add(wake)
        return wake

    def unwatch(self, tenant_id: TenantId, wake: asyncio.Event) -> None:
        found = self.watchers.get(tenant_id)
        if found is not None:
            found.discard(wake)
            if not found:
                del self.watchers[tenant_id]

    def _wake_all(self) -> None:
        for wakes in self.watchers.values():
            for wake in wakes:
                wake.set()

    async def _poll(self) -> None:
        # Notifications are hints sent after commit by the appending process; one can be
        # lost (that process died in between, or our listen connection was down), so
        # every served tenant is also re-read now and then. An idle read is one index
        # probe that returns no rows.
        while True:
            await asyncio.sleep(self.poll_seconds)
            for feed in list(self.feeds.values()):
                if feed.last_seq is not None:
                    self._poke(feed)
            self._wake_all()

    def _poke(self, feed: TenantFeed) -> None:
        feed.dirty = True
        if feed.task is None or feed.task.done():
            feed.task = asyncio.create_task(self._drain(feed))

    async def _drain(self, feed: TenantFeed) -> None:
        failures = 0
        while feed.dirty and self.feeds.get(feed.tenant_id) is feed:
            feed.dirty = False
            try:
                async with feed.lock:
                    if feed.last_seq is not None:
                        await self._fetch_locked(feed)
                failures = 0
            except EventStoreError as exc:
                # The next notification or listener reconnect retries too; a few quick
                # retries cover a blip without waiting for either.
                failures += 1
                log.warning("reading events of tenant %s failed: %s", feed.tenant_id, exc)
                if failures > 5:
                    return
                feed.dirty = True
                await asyncio.sleep(min(0.05 * 2**failures, 2.0))

    async def _fetch_locked(self, feed: TenantFeed) -> None:
        """Read and publish every event after the feed's last seq (lock held)."""
        assert feed.last_seq is not None
        while True:
            async with self.store.unit_of_work(feed.tenant_id, readonly=True) as uow:
                rows = await uow.read_tenant(feed.last_seq, self.batch)
                if len(rows) == self.batch:
                    head, _ = await uow.head()
                    if head - feed.last_seq > self.replay_window + self.batch:
                        self._skip_to(feed, head)
                        return
            for event in rows:
                self._publish(feed, event)
            if feed.notice_subs:
                await self._notify_followers(feed, rows)
            if len(rows) < self.batch:
                return

    async def _notify_followers(self, feed: TenantFeed, rows: list[RecordedEvent]) -> None:
        """Notices of the events just published to the agents following their tickets
        (api/feed/notices.py). A failed read loses those notices, never an event."""
        try:
            found = await notices(self.store, feed.tenant_id, list(feed.notice_subs), rows)
        except EventStoreError as exc:
            log.warning("reading followers of tenant %s failed: %s", feed.tenant_id, exc)
            return
        for sub, text in found:
            sub.outbox.offer(sub, text, feed.known_head)

    def _skip_to(self, feed: TenantFeed, head: int) -> None:
        # Far behind (the listener was down a long time): pushing every missed event
        # would flood every client; each gets a gap and refetches instead.
        log.warning("tenant %s feed is %d events behind; sending gaps",
                    feed.tenant_id, head - (feed.last_seq or 0))
        for sub in [*feed.tenant_subs, *feed.notice_subs,
                    *(s for subs in feed.ticket_subs.values() for s in subs)]:
            sub.outbox.drop(sub, head)
        feed.ring.clear()
        feed.last_seq = head
        feed.known_head = max(feed.known_head, head)

    def _publish(self, feed: TenantFeed, event: RecordedEvent) -> None:
        if event.type == ContactErased.TYPE:
            # The ring holds earlier events as they were opened, while the contact's key
            # existed: forgotten, replays read them from the store again, where they
            # now open erased, as every other reader sees them.
            feed.ring.clear()
        body = msg.event_body(event)
        tenant_text = msg.event_message(msg.TENANT_ROOM, event.seq, body)
        imported = event.actor_kind == IMPORT_ACTOR_KIND
        feed.ring.append(RingEntry(event.seq, event.stream_id, event.type, body, tenant_text,
                                   imported))
        feed.last_seq = event.seq
        head = feed.known_head = max(feed.known_head, event.seq)
        withheld: str | None = None
        for sub in list(feed.tenant_subs):
            if not imported and sub.outbox.reads(event.type):
                sub.outbox.offer(sub, tenant_text, head)
            else:
                withheld = withheld or msg.withheld(msg.TENANT_ROOM, event.seq)
                sub.outbox.offer(sub, withheld, head)
        stream_subs = None if imported else feed.ticket_subs.get(event.stream_id)
        if stream_subs:
            # Encoded once per room (a stream is one kind's, so nearly always one room).
            texts: dict[str, str] = {}
            for sub in list(stream_subs):
                if not sub.outbox.reads(event.type):
                    continue
                text = texts.get(sub.room.name)
                if text is None:
                    text = texts[sub.room.name] = msg.event_message(sub.room.name, event.seq,
                                                                    body)
                sub.outbox.offer(sub, text, head)

    # --- subscriptions --------------------------------------------------------------

    def attach(self, outbox: Outbox) -> None:
        outbox.on_drop = self._forget
        self.outboxes.add(outbox)

    def detach(self, outbox: Outbox) -> None:
        """The connection is gone: forget all its subscriptions."""
        for sub in list(outbox.subscriptions.values()):
            sub.live = False
            self._forget(sub)
        outbox.subscriptions.clear()
        outbox.close()
        self.outboxes.discard(outbox)

    def _forget(self, sub: Subscription) -> None:
        feed = self.feeds.get(sub.outbox.tenant_id)
        if feed is None:
            return
        feed.remove(sub)
        self._maybe_retire(feed)

    def _maybe_retire(self, feed: TenantFeed) -> None:
        if feed.idle() and self.feeds.get(feed.tenant_id) is feed:
            del self.feeds[feed.tenant_id]
            if feed.task is not None and not feed.task.done():
                feed.task.cancel()

    def unsubscribe(self, outbox: Outbox, room_name: str) -> bool:
        sub = outbox.subscriptions.pop(room_name, None)
        if sub is None:
            return False
        sub.live = False
        self._forget(sub)
        return True

    async def subscribe(self, outbox: Outbox, room: Room, after_seq: int | None,
                        principal: Principal | None = None) -> None:
        """Replay ``(after_seq, head]`` of ``room`` into the outbox, then go live
        (``principal``: whose notifications the notifications room carries).

        Queues the replayed events and a ``subscribed`` marker, or a ``gap`` when the
        replay is beyond the window or would not fit the outbox. Raises
        ``EventStoreError`` when the database cannot be read.
        """
        tenant_id = outbox.tenant_id
        feed = self.feeds.get(tenant_id)
        if feed is None:
            feed = self.feeds[tenant_id] = TenantFeed(tenant_id, deque(maxlen=self.ring_size))
        feed.pending += 1
        try:
            async with feed.lock:
                if feed.last_seq is None:
                    async with self.store.unit_of_work(tenant_id, readonly=True) as uow:
                        feed.last_seq, _ = await uow.head()
                    feed.known_head = max(feed.known_head, feed.last_seq)
                if after_seq is not None and after_seq > feed.last_seq:
                    await self._fetch_locked(feed)
                head = feed.last_seq
                texts: list[str] | None = []
                if after_seq is not None:
                    if after_seq > head or head - after_seq > self.replay_window:
                        texts = None
                    elif room.notices:
                        texts = await self._replay_notices(feed, room, after_seq, head,
                                                           outbox, principal)
                    else:
                        texts = await self._replay(feed, room, after_seq, head, outbox)
                if texts is None or len(texts) > outbox.room_free():
                    outbox.put_gap(msg.gap(room.name, head))
                    return
                # The replay and the marker are the subscription's backlog: should it be
                # dropped before they are sent, its gap takes their place.
                sub = Subscription(outbox, room, principal=principal)
                for text in texts:
                    outbox.put(sub, text)
                outbox.subscriptions[room.name] = sub
                feed.add(sub)
                outbox.put(sub, msg.control("subscribed", room=room.name, head_seq=head,
                                            replayed=len(texts)))
        finally:
            feed.pending -= 1
            self._maybe_retire(feed)

    def cast(self, tenant_id: TenantId, ticket_id: uuid.UUID, text: str, agent_id: str
             ) -> None:
        """Send a presence message (api/feed/presence.py) to the subscribers of a
        ticket's room in this process, but to the agent's own connections. It is a
        control message: no seq, nothing to replay, outside the backlog's bound (the
        presence a client sends is rate-limited)."""
        feed = self.feeds.get(tenant_id)
        if feed is None:
            return
        for sub in feed.ticket_subs.get(ticket_id, ()):
            if sub.room.name.startswith(msg.TICKET_PREFIX) and sub.outbox.agent_id != agent_id:
                sub.outbox.put_control(text)

    def stall(self, outbox: Outbox) -> list[str]:
        """The connection's socket has stopped draining: end every subscription of it.

        Returns the gaps to send ahead of everything else (those already queued, then
        one per subscription ended now); the unsent backlog is discarded. ``head_seq``
        is the last seq the feed has published, so it covers every event the
        subscriptions were offered: resubscribing from it misses nothing.
        """
        feed = self.feeds.get(outbox.tenant_id)
        head = feed.last_seq if feed is not None and feed.last_seq is not None else 0
        ended = [outbox.end(sub, head) for sub in list(outbox.subscriptions.values())]
        return outbox.shed() + ended

    async def _replay(
        self, feed: TenantFeed, room: Room, after_seq: int, head: int, outbox: Outbox
    ) -> list[str] | None:
        """The room's messages for ``(after_seq, head]`` as ``outbox``'s role is sent
        them: an event it may not read is ``withheld`` in the tenant room and left out
        of a stream's room. None if not all readable."""
        texts: list[str] = []
        expected = after_seq + 1
        ring_first = feed.ring[0].seq if feed.ring else head + 1
        if expected < ring_first:
            upto = min(ring_first - 1, head)
            async with self.store.unit_of_work(feed.tenant_id, readonly=True) as uow:
                while expected <= upto:
                    rows = await uow.read_tenant(expected - 1, min(self.batch,
                                                                   upto - expected + 1))
                    if not rows:
                        break
                    for event in rows:
                        if event.seq != expected:
                            return None
                        expected += 1
                        if not room.wants(event.stream_id):
                            continue
                        if (event.actor_kind != IMPORT_ACTOR_KIND
                                and outbox.reads(event.type)):
                            texts.append(msg.event_message(room.name, event.seq,
                                                           msg.event_body(event)))
                        elif room.stream_id is None:
                            texts.append(msg.withheld(room.name, event.seq))
        for entry in feed.ring:
            if entry.seq < expected:
                continue
            if entry.seq > head:
                break
            if entry.seq != expected:
                return None
            expected += 1
            if not room.wants(entry.stream_id):
                continue
            if entry.imported or not outbox.reads(entry.type):
                if room.stream_id is None:
                    texts.append(msg.withheld(room.name, entry.seq))
            elif room.stream_id is None:
                texts.append(entry.tenant_text)
            else:
                texts.append(msg.event_message(room.name, entry.seq, entry.body))
        # Never claim a replay we could not read in full.
        return texts if expected == head + 1 else None

    async def _replay_notices(self, feed: TenantFeed, room: Room, after_seq: int, head: int,
                              outbox: Outbox, principal: Principal | None) -> list[str]:
        """The notifications ``principal`` would have been sent for ``(after_seq, head]``,
        read from the store (the ring keeps no actors) and told as they go out live:
        followers as the tickets have them now, the agent's own actions left out, each
        checked against its group scope (api/feed/notices.py)."""
        sub = Subscription(outbox, room, principal=principal)
        texts: list[str] = []
        position = after_seq
        while position < head:
            async with self.store.unit_of_work(feed.tenant_id, readonly=True) as uow:
                rows = await uow.read_tenant(position, min(self.batch, head - position))
            if not rows:
                break
            position = rows[-1].seq
            texts.extend(text for _, text in await notices(self.store, feed.tenant_id,
                                                           [sub], rows))
        return texts

    def stats(self) -> dict[str, Any]:
        """Sizes that must stay bounded, for tests and diagnostics."""
        return {
            "tenants": len(self.feeds),
            "connections": len(self.outboxes),
            "ring_events": sum(len(f.ring) for f in self.feeds.values()),
            "queued": sum(len(o) for o in self.outboxes),
            "max_queued": max((len(o) for o in self.outboxes), default=0),
            "high_water": max((o.high_water for o in self.outboxes), default=0),
            "socket_waits": sum(o.waits for o in self.outboxes),
            "listener_connects": self.listener.connects if self.listener else 0,
        }
