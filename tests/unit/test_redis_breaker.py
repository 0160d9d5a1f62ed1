"""The Redis circuit breaker on an injected clock."""

from __future__ import annotations

from api.ops.redis_guard import CLOSED, HALF_OPEN, OPEN, Breaker


class Now:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_opens_after_consecutive_failures_and_skips_until_the_cooldown() -> None:
    now = Now()
    b = Breaker(3, 5.0, now=now)
    for _ in range(2):
        assert b.allow()
        b.failure()
    assert b.state == CLOSED
    assert b.allow()
    b.success()  # a success resets the count
    for _ in range(3):
        assert b.allow()
        b.failure()
    assert b.state == OPEN and b.is_open()
    now.t = 4.9
    assert not b.allow()


def test_half_open_lets_one_probe_through_which_closes_or_reopens() -> None:
    now = Now()
    changes: list[str] = []
    b = Breaker(1, 5.0, now=now, on_change=changes.append)
    assert b.allow()
    b.failure()
    now.t = 5.0
    assert b.allow() and b.state == HALF_OPEN
    assert not b.allow()  # only one probe at a time
    b.failure()
    assert b.state == OPEN
    now.t = 9.9
    assert not b.allow()
    now.t = 10.0
    assert b.allow()
    b.success()
    assert b.state == CLOSED and b.allow() and b.allow()
    assert changes == [OPEN, HALF_OPEN, OPEN, HALF_OPEN, CLOSED]
