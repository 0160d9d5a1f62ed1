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
from pathlib import Path

from api.config import ProcessSettings
from api.root import ProcessRole, Registrar, configure_logging, running

log = logging.getLogger("helpdesk.worker")


async def run(settings: ProcessSettings, extra: list[Registrar] | None = None) -> None:
    """Run the scheduler and projectors until SIGTERM or SIGINT, then stop them
    gracefully (the composition root stops each within bounds, in reverse order)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with running(settings, ProcessRole.WORKER, extra_jobs=extra) as services:
        assert services.scheduler is not None
        scheduler, task = services.scheduler.scheduler, services.scheduler.task
        log.info("worker started as %s", scheduler.worker_id)
        beat = asyncio.create_task(_heartbeat_file(settings, scheduler.status))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        log.info("worker stopping")
        stopping.cancel()
        beat.cancel()
    log.info("worker stopped")


HEARTBEAT_EVERY = 5.0


async def _heartbeat_file(settings: ProcessSettings, status: object) -> None:
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


def check_heartbeat(settings: ProcessSettings, now: float | None = None) -> tuple[bool, str]:
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


def run_worker(settings: ProcessSettings, extra: list[Registrar] | None = None) -> int:
    """Entry point of ``helpdesk worker``; returns the exit status."""
    configure_logging(settings)
    asyncio.run(run(settings, extra))
    return 0
