"""The tests' bounded wait: returns the first truthy value, or fails naming what it awaited."""

from __future__ import annotations

import pytest

from tests.support.wait import WaitTimeout, until, until_sync


async def test_until_returns_the_first_truthy_value_of_a_plain_or_async_predicate() -> None:
    calls: list[int] = []

    def plain() -> int:
        calls.append(1)
        return len(calls) if len(calls) >= 3 else 0

    async def awaited() -> str | None:
        return "ready" if len(calls) >= 4 else calls.append(1)

    assert await until(plain, interval=0) == 3
    assert await until(awaited, interval=0) == "ready"
    assert len(calls) == 4


async def test_until_fails_after_the_timeout_naming_what_it_waited_for() -> None:
    seen = {"last": 0}

    def never() -> bool:
        seen["last"] += 1
        return False

    with pytest.raises(WaitTimeout, match=r"after 0\.05 s waiting for the thing \(tried \d+\)"):
        await until(never, timeout=0.05, interval=0.01,
                    what=lambda: f"the thing (tried {seen['last']})")
    assert seen["last"] >= 2  # it polled, then gave up
    assert issubclass(WaitTimeout, AssertionError)


def test_until_sync_polls_until_true_and_fails_after_the_timeout() -> None:
    left = [False, False, True]
    assert until_sync(lambda: left.pop(0), interval=0) is True
    with pytest.raises(WaitTimeout, match="waiting for nothing"):
        until_sync(lambda: None, timeout=0.02, interval=0.005, what="nothing")
