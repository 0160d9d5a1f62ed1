"""``helpdesk worker`` as its own OS process, for tests that run (and kill) real workers."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.wait import until

ROOT = Path(__file__).parents[2]
WAIT = 60.0
POLL = 0.2


@dataclass
class Worker:
    proc: asyncio.subprocess.Process
    log: Any

    def output(self) -> str:
        self.log.seek(0)
        return str(self.log.read().decode(errors="replace"))

    async def stop(self) -> int:
        """SIGTERM, wait for the graceful exit, kill if it does not come."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
            raise AssertionError(f"worker ignored SIGTERM: {self.output()}") from None

    async def kill(self) -> int:
        """SIGKILL: the process ends where it is, its transactions rolled back."""
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGKILL)
        return await asyncio.wait_for(self.proc.wait(), 20)


@asynccontextmanager
async def worker_process(database_url: str, **env: str) -> AsyncIterator[Worker]:
    """``helpdesk worker`` on ``database_url`` with ``env`` added to its environment,
    started (it logged so); it never outlives the block."""
    # Info level: "worker started" marks it up, and a failure shows how far it got.
    environ = {**os.environ, "DATABASE_URL": database_url, **env, "LOG_LEVEL": "info"}
    with tempfile.TemporaryFile() as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "api.cli.main", "worker", cwd=ROOT, env=environ,
            stdout=subprocess.DEVNULL, stderr=log)
        worker = Worker(proc, log)
        try:

            async def started() -> bool:
                assert proc.returncode is None, worker.output()
                return "worker started as" in worker.output()

            await until(started, timeout=WAIT, interval=POLL, what="the worker to start")
            yield worker
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(proc.wait(), 10)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
