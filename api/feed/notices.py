"""Notifications for followers: activity on the tickets an agent follows, on its socket.

An agent subscribes to the ``notifications`` room (docs/websocket.md); when a ticket it
follows gets a message, changes state or is assigned, the hub sends it a
``notification`` naming the ticket, the reason and the event, unless the agent did it
itself (by any of its keys or its sign-in). Followers are read as the ticket has them
when the feed reads the event (one statement per batch of events, and only while some
connection of the tenant holds the room), and each notice is checked against the
agent's group scope (api/feed/scope.py) before it goes out, as a ticket room would be.
Subscribed with ``after_seq``, the room replays the notifications of the events after
it (the hub reads them from the store and asks this module, with the followers the
tickets have now), so a client that reconnects misses none within the replay window.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from api.feed import messages as msg
from api.feed.messages import TICKET_PREFIX, Room
from api.feed.outbox import Subscription
from api.feed.scope import out_of_scope
from domain.ids import TenantId
from domain.ticket.events import MessageAdded, StateChanged, TicketAssigned
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from eventstore.types import IMPORT_ACTOR_KIND, RecordedEvent

Q = load_queries(Path(__file__).with_name("queries.sql"))

REASONS = {MessageAdded.TYPE: "message", StateChanged.TYPE: "state",
           TicketAssigned.TYPE: "assigned"}
"""The events a follower is told of, and the ``reason`` each notice gives."""


def notice(seq: int, ticket_id: uuid.UUID, reason: str, body: dict[str, Any]) -> str:
    return orjson.dumps({"type": "notification", "room": msg.NOTICES_ROOM, "seq": seq,
                         "ticket_id": str(ticket_id), "reason": reason,
                         "event": body}).decode()


def _uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _doer(event: RecordedEvent, key_agents: dict[str, str]) -> str | None:
    """The agent who did it: a message's author, else the agent behind the actor."""
    if event.type == MessageAdded.TYPE:
        author = event.data.get("author") or {}
        if author.get("kind") == "agent":
            return str(author.get("id"))
    if event.actor_kind == "agent":
        return event.actor_id
    if event.actor_kind == "api_key":
        return key_agents.get(event.actor_id)
    return None


async def notices(store: EventStore, tenant_id: TenantId, subs: Iterable[Subscription],
                  events: Sequence[RecordedEvent]) -> list[tuple[Subscription, str]]:
    """What to send each notifications subscription for ``events`` (in seq order)."""
    held = [s for s in subs if s.live and s.principal is not None
            and s.principal.agent_id is not None]
    notable = [e for e in events
               if e.type in REASONS and e.actor_kind != IMPORT_ACTOR_KIND]
    if not held or not notable:
        return []
    keys = {k for e in notable if e.actor_kind == "api_key"
            and (k := _uuid(e.actor_id)) is not None}
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["notice_facts"], tenant_id,
                                      list({e.stream_id for e in notable}), list(keys))
    followers: dict[str, list[str]] = row["followers"]
    key_agents: dict[str, str] = row["key_agents"]
    wanted: dict[Subscription, list[RecordedEvent]] = {}
    for event in notable:
        following = followers.get(str(event.stream_id))
        if not following:
            continue
        doer = _doer(event, key_agents)
        for sub in held:
            assert sub.principal is not None
            agent = str(sub.principal.agent_id)
            if agent in following and agent != doer and sub.outbox.reads(event.type):
                wanted.setdefault(sub, []).append(event)
    out: list[tuple[Subscription, str]] = []
    for sub, found in wanted.items():
        assert sub.principal is not None
        rooms = {e.stream_id: Room(f"{TICKET_PREFIX}{e.stream_id}", e.stream_id)
                 for e in found}
        hidden = {r.stream_id for r in await out_of_scope(store, sub.principal,
                                                          rooms.values())}
        out.extend((sub, notice(e.seq, e.stream_id, REASONS[e.type], msg.event_body(e)))
                   for e in found if e.stream_id not in hidden)
    return out


__all__ = ["REASONS", "notices"]
