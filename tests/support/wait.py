"""Bounded waits on a condition: how a test waits for something to happen.

A test that needs a job to have run, a projector to have caught up or a server to
accept connections checks for exactly that, every ``interval`` seconds, and fails
after ``timeout``; it never sleeps a fixed time, which is too short on a loaded
machine and too long everywhere else. The timeout only matters when the test fails,
so it is generous; where a test asserts a deadline, it says so at the call.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

What = str | Callable[[], object]


class WaitTimeout(AssertionError):
    """The condition did not hold within the timeout."""


def _message(what: What, timeout: float) -> str:
    text = what() if callable(what) else what
    return f"timed out after {timeout:g} s waiting for {text}"


async def until(
    predicate: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: What = "the condition",
) -> T:
    """Poll ``predicate`` (plain or async) until it returns something truthy; return that.

    Raises ``WaitTimeout`` (an ``AssertionError``) naming ``what`` after ``timeout``
    seconds; ``what`` may be a callable, evaluated then, to report the last state seen.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout))
        await asyncio.sleep(interval)


def until_sync(
    predicate: Callable[[], T],
    *,
    timeout: float = 30.0,
    interval: float = 0.02,
    what: What = "the condition",
) -> T:
    """``until`` for code that has no event loop (server start-up in fixtures)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise WaitTimeout(_message(what, timeout))
        time.sleep(interval)
