"""Background tasks of the store's long-lived helpers (the LISTEN connection, the
replica probe): stopping one means cancelling it and waiting until it has stopped."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


async def cancel_and_wait(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (if any) and wait for it to finish; its cancellation is the
    expected end, not an error."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
