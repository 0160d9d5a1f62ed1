"""The feed's send queue: the bound, and where a dropped subscription's gap goes."""

from __future__ import annotations

import uuid

import orjson

from api.feed.messages import Room
from api.feed.outbox import Outbox, Subscription
from domain.ids import TenantId

TENANT = TenantId(uuid.UUID(int=1))
TICKET = uuid.UUID(int=2)


async def _drain(outbox: Outbox) -> list[str]:
    return [(await outbox.next()).text for _ in range(len(outbox))]


def _subscribed(outbox: Outbox, room: Room) -> Subscription:
    sub = Subscription(outbox, room)
    outbox.subscriptions[room.name] = sub
    return sub


async def test_a_full_queue_drops_the_offered_subscription_with_its_gap_ahead_of_its_backlog():
    outbox = Outbox(TENANT, bound=4)
    ended: list[Subscription] = []
    outbox.on_drop = ended.append
    tenant = _subscribed(outbox, Room("tenant", None))
    ticket = _subscribed(outbox, Room(f"ticket:{TICKET}", TICKET))
    outbox.put_control("pong")
    outbox.offer(tenant, "t1", 1)
    outbox.offer(ticket, "k1", 1)
    outbox.offer(tenant, "t2", 2)
    outbox.put_control("heartbeat")
    outbox.offer(tenant, "t3", 3)
    assert outbox.room_free() == 0
    outbox.offer(tenant, "t4", 4)  # over the bound: the tenant room ends here
    gap = orjson.dumps({"type": "gap", "room": "tenant", "head_seq": 4}).decode()
    assert await _drain(outbox) == ["pong", gap, "k1", "heartbeat"]
    assert ended == [tenant] and not tenant.live and "tenant" not in outbox.subscriptions
    outbox.offer(tenant, "t5", 5)  # nothing more of an ended subscription
    assert len(outbox) == 0 and outbox.room_free() == 4


async def test_a_stall_takes_the_gaps_out_and_sheds_every_backlog():
    outbox = Outbox(TENANT, bound=2)
    tenant = _subscribed(outbox, Room("tenant", None))
    ticket = _subscribed(outbox, Room(f"ticket:{TICKET}", TICKET))
    outbox.offer(tenant, "t1", 1)
    outbox.offer(ticket, "k1", 1)
    outbox.offer(tenant, "t2", 2)  # the bound ends the tenant room: a queued gap
    outbox.put_control("pong")
    ended = outbox.end(ticket, 2)  # as the hub does for every live one on a stall
    gaps = [*outbox.shed(), ended]
    assert [orjson.loads(g)["room"] for g in gaps] == ["tenant", f"ticket:{TICKET}"]
    assert await _drain(outbox) == ["pong"]  # owed replies stay, backlogs are gone
    assert outbox.room_free() == 2
