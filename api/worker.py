"""``helpdesk worker``: the background loops of one process, without the HTTP API.

SIGTERM (or SIGINT) stops claiming, lets running jobs finish within
``SCHEDULER_GRACE_SECONDS``, releases the rest and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable
from pathlib import Path

from api import scheduling
from api.bootstrap import build_services
from api.settings import Settings
from projections.projector import start_projector

log = logging.getLogger("helpdesk.worker")


async def run(settings: Settings, extra: list[scheduling.Registrar] | None = None) -> None:
    """Run the scheduler until SIGTERM or SIGINT, then stop it gracefully."""
    services = await build_services(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stop_projector = await start_projector(services)
    try:
        scheduler, task = scheduling.start(services, extra)
        log.info("worker started as %s", scheduler.worker_id)
        beat = asyncio.create_task(_heartbeat_file(settings, scheduler.status))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        log.info("worker stopping")
        stopping.cancel()
        beat.cancel()
        await scheduler.stop()
        await task
        log.info("scheduler stopped")
    finally:
        # Each step is bounded: a stuck step is logged and skipped, never a process
        # that ignores SIGTERM until it is killed.
        await _bounded("projector stop", stop_projector(), settings.scheduler_grace_seconds + 5)
        await services.close()
        log.info("worker stopped")


async def _bounded(step: str, work: Awaitable[None], timeout: float) -> None:
    try:
        await asyncio.wait_for(work, timeout)
    except TimeoutError:
        log.warning("%s did not finish within %.0f s; going on", step, timeout)


HEARTBEAT_EVERY = 5.0


async def _heartbeat_file(settings: Settings, status: object) -> None:
    """Touch WORKER_HEARTBEAT_FILE while the scheduler loop is healthy.

    A container health check (``helpdesk worker --check``) cannot see inside this
    process; a file that stops being refreshed when the loop stalls is what it can see.
    """
    path = settings.worker_heartbeat_file
    if path is None:
        return
    while True:
        if callable(status) and status() == "ok":
            with contextlib.suppress(OSError):
                path.write_text(f"{time.time():.3f}\n")
        await asyncio.sleep(HEARTBEAT_EVERY)


def check_heartbeat(settings: Settings, now: float | None = None) -> tuple[bool, str]:
    """Whether the worker's heartbeat file is fresh: (healthy, explanation)."""
    path: Path | None = settings.worker_heartbeat_file
    if path is None:
        return False, "WORKER_HEARTBEAT_FILE is not set"
    try:
        beat = float(path.read_text().strip())
    except (OSError, ValueError):
        return False, f"no heartbeat in {path}"
    age = (now if now is not None else time.time()) - beat
    limit = 3 * HEARTBEAT_EVERY + settings.scheduler_poll_interval
    if age > limit:
        return False, f"the last heartbeat is {age:.0f} s old (limit {limit:.0f} s)"
    return True, f"heartbeat {age:.1f} s old"


def run_worker(settings: Settings, extra: list[scheduling.Registrar] | None = None) -> int:
    """Entry point of ``helpdesk worker``; returns the exit status."""
    logging.basicConfig(level=settings.log_level.upper())
    asyncio.run(run(settings, extra))
    return 0
