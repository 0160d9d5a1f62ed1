"""The embedded Postgres stops when the last helpdesk process using it exits: after
``serve`` stops on SIGTERM, after a ``serve`` and a ``worker`` sharing it have both
stopped (and not before), and also when an earlier user was SIGKILLed and could not
say goodbye. The test harness's own embedded server stops too."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import asyncpg
import httpx
import pytest

from tests.support.pg import server_url
from tests.support.pgserver import free_port
from tests.support.wait import WaitTimeout, until_sync

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
GONE_WITHIN = 20.0


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    """One data directory for the module (initdb once): under /tmp, so the server's
    system user can reach it when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="helpdesk-embedded-"))
    try:
        yield path
    finally:
        pid = _postmaster(path)
        if pid is not None and _alive(pid):  # a failed test: do not leave it behind
            os.kill(pid, signal.SIGQUIT)
        shutil.rmtree(path, ignore_errors=True)


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "MIGRATION_DATABASE_URL", "REDIS_URL")}
    env.update(DATA_DIR=str(data_dir), LOG_LEVEL="info", SCHEDULER_GRACE_SECONDS="1")
    return env


def _start(data_dir: Path, *args: str, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "api.cli.main", *args], cwd=REPO,
                            env=_env(data_dir), stdout=subprocess.DEVNULL, stderr=log)


def _postmaster(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent that does not reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _gone(pid: int, within: float = GONE_WITHIN) -> bool:
    """Whether the process is gone within ``within`` seconds (a deadline the tests
    assert: the server stops when its last user leaves, not eventually)."""
    try:
        until_sync(lambda: not _alive(pid), timeout=within, interval=0.05)
    except WaitTimeout:
        return False
    return True


def _read(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")


def _wait_for(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes],
              log: IO[bytes]) -> None:
    def up() -> bool:
        assert proc.poll() is None, f"{what} exited early:\n{_read(log)}"
        return ready()

    until_sync(up, timeout=90, interval=0.1, what=lambda: f"{what} to come up:\n{_read(log)}")


def _serving(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _serve(data_dir: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    port = free_port()
    proc = _start(data_dir, "serve", "--port", str(port), log=log)
    _wait_for("serve", lambda: _serving(port), proc, log)
    return proc


def _stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> int:
    proc.send_signal(sig)
    return proc.wait(timeout=60)


def test_serve_stops_its_embedded_postgres_on_sigterm(data_dir: Path) -> None:
    with tempfile.TemporaryFile() as log:
        serve = _serve(data_dir, log)
        pid = _postmaster(data_dir)
        assert pid is not None and _alive(pid)
        assert _stop(serve) == 0, _read(log)
        assert _gone(pid), f"postmaster {pid} still running after serve stopped"


def test_a_shared_server_stops_with_the_last_of_serve_and_worker(data_dir: Path) -> None:
    with tempfile.TemporaryFile() as serve_log, tempfile.TemporaryFile() as worker_log:
        serve = _serve(data_dir, serve_log)
        pid = _postmaster(data_dir)
        assert pid is not None
        worker = _start(data_dir, "worker", log=worker_log)
        try:
            _wait_for("worker", lambda: "worker started" in _read(worker_log), worker,
                      worker_log)
            assert _stop(serve) == 0, _read(serve_log)
            assert _alive(pid), "the server stopped under a worker that still uses it"
            assert _postmaster(data_dir) == pid
        finally:
            if worker.poll() is None:
                assert _stop(worker, signal.SIGINT) == 0, _read(worker_log)
        assert _gone(pid), f"postmaster {pid} still running after the last user stopped"


def test_a_killed_user_does_not_keep_the_server_up(data_dir: Path) -> None:
    """A SIGKILLed serve cannot clean up; the next process to leave stops the server."""
    with tempfile.TemporaryFile() as log:
        serve = _serve(data_dir, log)
        pid = _postmaster(data_dir)
        assert pid is not None
        serve.kill()
        serve.wait(timeout=30)
        assert _alive(pid)
        status = subprocess.run(
            [sys.executable, "-m", "api.cli.main", "projections", "status"], cwd=REPO,
            env=_env(data_dir), capture_output=True, text=True, timeout=120, check=False)
        assert status.returncode == 0, status.stderr
        assert _gone(pid), f"postmaster {pid} kept running after its last user exited"


async def test_the_harness_stops_its_embedded_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_DATABASE_URL", raising=False)
    with server_url() as url:
        conn = await asyncpg.connect(url)
        try:
            pgdata = Path(await conn.fetchval("SELECT current_setting('data_directory')"))
        finally:
            await conn.close()
        pid = _postmaster(pgdata.parent)
        assert pid is not None and _alive(pid)
    assert not await asyncio.to_thread(pgdata.exists)
    # Stopped before its directory went: at once, not whenever the orphaned postmaster
    # notices its lock file is gone.
    assert await asyncio.to_thread(_gone, pid, 2.0), f"the harness left postmaster {pid} running"
