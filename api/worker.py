"""``helpdesk worker``: the background loops of one process, without the HTTP API.

SIGTERM (or SIGINT) stops claiming, lets running jobs finish within
``SCHEDULER_GRACE_SECONDS``, releases the rest and exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal

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
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
        log.info("worker stopping")
        stopping.cancel()
        await scheduler.stop()
        await task
    finally:
        await stop_projector()
        await services.close()


def run_worker(settings: Settings, extra: list[scheduling.Registrar] | None = None) -> int:
    """Entry point of ``helpdesk worker``; returns the exit status."""
    logging.basicConfig(level=settings.log_level.upper())
    asyncio.run(run(settings, extra))
    return 0
