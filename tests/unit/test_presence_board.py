"""The presence board on a clock the test moves: what a ticket room is told as
notifications from other processes arrive and as entries lapse, without sleeping."""

from __future__ import annotations

import uuid
from typing import Any, cast

import orjson

from api.feed.presence import PresenceBoard
from domain.ids import TenantId
from eventstore.store import EventStore

TENANT = TenantId(uuid.uuid4())
TICKET = uuid.uuid4()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def board() -> tuple[PresenceBoard, Clock, list[tuple[str, str, str]]]:
    """A board with a test clock; what it tells rooms is (agent told of, state, not-to)."""
    told: list[tuple[str, str, str]] = []
    clock = Clock()

    def cast_(tenant: TenantId, ticket: uuid.UUID, text: str, agent_id: str) -> None:
        frame = orjson.loads(text)
        assert (tenant, frame["room"], frame["ticket_id"]) == (
            TENANT, f"ticket:{ticket}", str(ticket))
        told.append((frame["agent"]["id"], frame["state"], agent_id))

    # The store is only used to send; these tests feed the board what others sent.
    return (PresenceBoard(cast(EventStore, None), cast_, viewing_seconds=30,
                          typing_seconds=6, clock=clock), clock, told)


def note(state: str, who: str = "ann", connection: str = "c1", ttl: float = 30,
         **over: Any) -> str:
    body = {"tenant": str(TENANT), "ticket": str(TICKET), "connection": connection,
            "agent": {"id": who, "name": who.title()}, "state": state,
            "origin": "another process", "expires_in": ttl} | over
    return orjson.dumps(body).decode()


def test_a_change_is_told_once_and_lapses_by_the_clock() -> None:
    b, clock, told = board()
    b.notified(note("viewing"))
    b.notified(note("viewing"))  # a refresh: nothing new to tell
    assert told == [("ann", "viewing", "ann")]
    b.notified(note("typing", ttl=6))
    assert told[-1] == ("ann", "typing", "ann")
    assert [p["state"] for p in b.present(TENANT, TICKET)] == ["typing"]
    clock.now += 5.9
    assert b.sweep() is not None and told[-1][1] == "typing"
    clock.now += 0.2  # typing lapsed: viewing again
    b.sweep()
    assert told[-1] == ("ann", "viewing", "ann")
    clock.now += 30  # viewing lapsed too (typing refreshed it, 30 s from then)
    assert b.sweep() is None
    assert told[-1] == ("ann", "gone", "ann") and len(told) == 4
    assert b.present(TENANT, TICKET) == [] and b.stats() == {"tickets": 0, "entries": 0}


def test_one_agent_on_two_connections_is_one_presence() -> None:
    b, _, told = board()
    b.notified(note("viewing", connection="tab-1"))
    b.notified(note("typing", connection="tab-2", ttl=6))
    b.notified(note("viewing", who="bob", connection="tab-3"))
    assert [(p["agent"]["id"], p["state"]) for p in b.present(TENANT, TICKET)] == [
        ("ann", "typing"), ("bob", "viewing")]
    assert [p["agent"]["id"] for p in b.present(TENANT, TICKET, but="bob")] == ["ann"]
    b.notified(note("gone", connection="tab-2", ttl=0))  # the typing tab left
    assert told[-1] == ("ann", "viewing", "ann")
    b.notified(note("gone", connection="tab-1", ttl=0))
    assert told[-1] == ("ann", "gone", "ann")
    assert b.stats() == {"tickets": 1, "entries": 1}


def test_a_time_to_live_is_capped_and_own_or_malformed_notes_are_ignored() -> None:
    b, clock, told = board()
    b.notified(note("viewing", ttl=10_000))
    clock.now += 30
    b.sweep()
    assert told[-1][1] == "gone"
    for bad in ("", "[]", "{}", note("dancing"), note("viewing", tenant="acme"),
                note("viewing", agent="ann"), note("viewing", expires_in="soon"),
                note("viewing", origin=b.origin)):
        b.notified(bad)
    assert b.stats() == {"tickets": 0, "entries": 0} and len(told) == 2
