"""A connection's bounded send queue: control messages, event messages, gaps on overflow
(in place of the dropped room's first unsent message), and what a stall takes out.

No socket and no hub: the outbox is driven with plain strings, as the hub offers them.
"""

from __future__ import annotations

import asyncio
import uuid

import orjson

from api.feed.messages import Room
from api.feed.outbox import Outbox, Subscription
from domain.ids import TenantId

TENANT = TenantId(uuid.UUID("00000000-0000-4000-8000-0000000000aa"))
TICKET = uuid.UUID("00000000-0000-4000-8000-000000000001")


def outbox(bound: int = 3) -> tuple[Outbox, list[Subscription]]:
    """An outbox whose drops are recorded in the returned list."""
    dropped: list[Subscription] = []
    return Outbox(TENANT, bound, on_drop=dropped.append), dropped


def subscribe(box: Outbox, room: str = "tenant") -> Subscription:
    sub = Subscription(box, Room.parse(room))
    box.subscriptions[sub.room.name] = sub
    return sub


async def drain(box: Outbox) -> list[str]:
    """Everything queued, in order (``next`` returns at once while anything is queued)."""
    return [(await box.next()).text for _ in range(len(box))]


async def test_event_messages_are_queued_in_order_up_to_the_bound() -> None:
    box, dropped = outbox(bound=3)
    sub = subscribe(box)
    for i in range(3):
        assert box.room_free() == 3 - i
        box.offer(sub, f"e{i}", head_seq=i)
    assert len(box) == 3 and box.room_free() == 0 and box.high_water == 3
    assert sub.live and dropped == [] and box.gaps_sent == 0
    assert await drain(box) == ["e0", "e1", "e2"]


async def test_an_offer_to_a_full_outbox_drops_the_subscription_with_a_gap() -> None:
    box, dropped = outbox(bound=2)
    sub = subscribe(box)
    box.offer(sub, "e1", head_seq=11)
    box.offer(sub, "e2", head_seq=12)
    box.offer(sub, "e3", head_seq=13)  # no room: the subscriber is too slow
    assert not sub.live
    assert dropped == [sub] and box.gaps_sent == 1
    assert "tenant" not in box.subscriptions
    # The gap takes the place of the unsent backlog, which is discarded with the event
    # that did not fit: the client learns where to resume before anything else.
    assert len(box) == 1 and box.high_water == 2 and box.room_free() == 2
    texts = await drain(box)
    assert [orjson.loads(t) for t in texts] == [
        {"type": "gap", "room": "tenant", "head_seq": 13}]


async def test_a_dropped_subscription_gets_nothing_more_and_only_one_gap() -> None:
    box, dropped = outbox(bound=1)
    sub = subscribe(box)
    box.offer(sub, "e1", head_seq=1)
    box.offer(sub, "e2", head_seq=2)
    await drain(box)
    box.offer(sub, "e3", head_seq=3)  # room again, but the subscription is over
    box.drop(sub, head_seq=3)
    assert len(box) == 0 and dropped == [sub] and box.gaps_sent == 1


async def test_overflow_drops_whichever_subscription_finds_the_outbox_full() -> None:
    box, dropped = outbox(bound=2)
    tenant = subscribe(box, "tenant")
    ticket = subscribe(box, f"ticket:{TICKET}")
    box.offer(tenant, "t1", head_seq=5)
    box.offer(ticket, "k1", head_seq=5)
    box.offer(ticket, "k2", head_seq=6)
    assert dropped == [ticket] and tenant.live and not ticket.live
    assert list(box.subscriptions) == ["tenant"]
    texts = await drain(box)
    assert texts[0] == "t1"  # the other room's backlog stays, in order
    assert [orjson.loads(t) for t in texts[1:]] == [
        {"type": "gap", "room": f"ticket:{TICKET}", "head_seq": 6}]


async def test_the_gap_goes_where_the_rooms_first_unsent_message_was() -> None:
    box, dropped = outbox(bound=4)
    tenant = subscribe(box, "tenant")
    ticket = subscribe(box, f"ticket:{TICKET}")
    box.put_control("pong")
    box.offer(tenant, "t1", head_seq=1)
    box.offer(ticket, "k1", head_seq=1)
    box.offer(tenant, "t2", head_seq=2)
    box.put_control("heartbeat")
    box.offer(tenant, "t3", head_seq=3)
    box.offer(tenant, "t4", head_seq=4)  # over the bound: the tenant room ends here
    gap = orjson.dumps({"type": "gap", "room": "tenant", "head_seq": 4}).decode()
    assert await drain(box) == ["pong", gap, "k1", "heartbeat"]
    assert dropped == [tenant]


async def test_a_stall_takes_the_gaps_out_and_sheds_every_backlog() -> None:
    box, _ = outbox(bound=2)
    tenant = subscribe(box, "tenant")
    ticket = subscribe(box, f"ticket:{TICKET}")
    box.offer(tenant, "t1", head_seq=1)
    box.offer(ticket, "k1", head_seq=1)
    box.offer(tenant, "t2", head_seq=2)  # the bound ends the tenant room: a queued gap
    box.put_control("pong")
    ended = box.end(ticket, head_seq=2)  # as the hub does for every live one on a stall
    gaps = [*box.shed(), ended]
    assert [orjson.loads(g)["room"] for g in gaps] == ["tenant", f"ticket:{TICKET}"]
    assert await drain(box) == ["pong"]  # owed replies stay, backlogs are gone
    assert box.room_free() == 2


def test_a_replaced_subscription_leaves_its_successor_registered() -> None:
    box, dropped = outbox()
    old = subscribe(box)
    new = subscribe(box)  # the client resubscribed to the same room
    box.drop(old, head_seq=9)
    assert box.subscriptions == {"tenant": new} and new.live
    assert dropped == [old] and box.gaps_sent == 1


async def test_control_messages_bypass_the_bound() -> None:
    box, dropped = outbox(bound=1)
    sub = subscribe(box)
    box.offer(sub, "e1", head_seq=1)
    for i in range(3):
        box.put_control(f"c{i}")
    assert len(box) == 4 and box.room_free() == 0 and box.high_water == 4
    assert sub.live and dropped == []
    assert await drain(box) == ["e1", "c0", "c1", "c2"]


def test_a_closed_outbox_discards_what_it_held_and_takes_nothing_more() -> None:
    box, dropped = outbox()
    sub = subscribe(box)
    box.offer(sub, "e1", head_seq=1)
    box.close()
    box.offer(sub, "e2", head_seq=2)
    box.put_control("c")
    assert box.closed and len(box) == 0 and dropped == []


async def test_next_waits_for_a_message_then_hands_them_out_in_order() -> None:
    box, _ = outbox()
    waiting = asyncio.create_task(box.next())
    await asyncio.sleep(0)  # let it reach the wait
    assert not waiting.done()
    box.put_control("first")
    box.put_control("second")
    assert (await asyncio.wait_for(waiting, 5)).text == "first"
    assert (await asyncio.wait_for(box.next(), 5)).text == "second"
    assert len(box) == 0
