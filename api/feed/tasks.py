"""The jobs of one feed connection run side by side until the first of them ends.

A staff connection reads, writes and re-checks its key; a customer's sends, drains and
re-checks its session. Whichever ends first (the client left, a key was revoked, a
client too slow, a bug) ends the connection: the others are cancelled and awaited, so
nothing of the connection outlives it, and the caller learns why from the failures.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


async def until_first_ends(*jobs: Coroutine[Any, Any, None]) -> list[BaseException]:
    """Run ``jobs`` as tasks until one ends; cancel and await the rest. Answers the
    exceptions the ended tasks raised (empty: the first one returned)."""
    tasks = [asyncio.create_task(job) for job in jobs]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [exc for t in done if not t.cancelled() and (exc := t.exception())]
