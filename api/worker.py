"""``helpdesk worker``: the background loops of one process, without the HTTP API."""

from __future__ import annotations

import asyncio
import logging
import signal

from api.bootstrap import build_services
from api.settings import Settings
from projections.projector import start_projector

log = logging.getLogger("helpdesk.worker")


async def _run(settings: Settings) -> None:
    services = await build_services(settings)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    stop_projector = await start_projector(services)
    try:
        log.info("worker started")
        await stop.wait()
        log.info("worker stopping")
    finally:
        await stop_projector()
        await services.close()


def run_worker(settings: Settings) -> int:
    logging.basicConfig(level=settings.log_level.upper())
    asyncio.run(_run(settings))
    return 0
