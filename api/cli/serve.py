"""``helpdesk serve``: the HTTP API, under uvicorn, in one process or several.

The process's parts are built by the composition root *before* uvicorn starts, and
handed to the app (``create_app(services=...)``), rather than in the app's lifespan
inside uvicorn: a refusal at start (an unsafe role, a database that cannot be
reached) is then an exception of our own that the command line turns into one line
on stderr, instead of uvicorn's "Application startup failed" and a traceback.

Signals: while it serves, uvicorn handles SIGTERM and SIGINT (stop accepting, finish
open requests), then the parts are torn down in reverse order and the command
returns 0, like ``helpdesk worker``. uvicorn re-raises the signals it caught once it
is done, for whoever embeds it; that would kill the process (SIGTERM's default
action) before the teardown, so the handlers it restores and re-raises into are
no-ops, and ours are put back afterwards.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from api.config import ProcessSettings
from api.root import ProcessRole, configure_logging, running

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def serve(settings: ProcessSettings) -> None:
    """Build the parts, serve until SIGTERM or SIGINT, tear the parts down."""
    import uvicorn

    from api.app import create_app
    from api.serving.server import server_options

    async with running(settings, ProcessRole.SERVE) as services:
        app = create_app(settings, services=services)
        config = uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None,
                                log_level=settings.log_level.lower(), access_log=False,
                                lifespan="on", **server_options(settings))
        with _signals_replayed_as_no_ops():
            await uvicorn.Server(config).serve()


@contextmanager
def _signals_replayed_as_no_ops() -> Iterator[None]:
    before = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    for sig in _SIGNALS:
        signal.signal(sig, lambda _signum, _frame: None)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop when installed (it is, with uvicorn[standard]), as ``uvicorn.run`` does."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] brings it
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_server(settings: ProcessSettings, *, workers: int = 1) -> int:
    """Entry point of ``helpdesk serve`` once the database is known; the exit status.

    One process serves with the parts built here. Several (``--workers``) are
    uvicorn's: each builds its own parts in its app's lifespan (``api.app.serve_app``,
    from the environment), so the parts are first built once here and torn down, which
    turns a refusal into the same one line before any process is started.
    """
    configure_logging(settings)
    if workers == 1:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            runner.run(serve(settings))
        return 0
    import uvicorn

    from api.serving.server import server_options

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        runner.run(_check(settings))
    os.environ.update(settings.environment("database_url", "migration_database_url",
                                           "run_scheduler"))
    with _signals_replayed_as_no_ops():
        uvicorn.run("api.app:serve_app", factory=True, workers=workers, host=settings.host,
                    port=settings.port, log_config=None, log_level=settings.log_level.lower(),
                    access_log=False, **server_options(settings))
    return 0


async def _check(settings: ProcessSettings) -> None:
    async with running(settings, ProcessRole.CLI):
        pass
