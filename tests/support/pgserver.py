"""A Postgres server a test owns: its own data directory and port, started, stopped
and restarted by the test (never the shared server on 5432).

Uses the machine's PostgreSQL 15 binaries (``PG_BIN``, default
/usr/lib/postgresql/15/bin). Postgres refuses to run as root, so under root the
server runs as the ``postgres`` system user.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))
SYSTEM_USER = "postgres"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PostgresServer:
    """``initdb`` into a temporary directory, then ``pg_ctl`` start/stop on a free port.

    Trust authentication on 127.0.0.1 only; fsync off (the data directory is thrown
    away, and a fast shutdown still checkpoints, so nothing acknowledged is lost
    across a stop and start).
    """

    def __init__(self, *, options: str = "", initdb: bool = True) -> None:
        """``options``: more ``-c name=value`` settings for the server; ``initdb``
        False leaves the data directory to be made by the caller (a base backup)."""
        for tool in ("initdb", "pg_ctl", "postgres"):
            if not (PG_BIN / tool).exists():
                raise RuntimeError(f"{PG_BIN / tool} is missing (set PG_BIN)")
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="helpdesk-ownpg-"))
        self.pgdata = self.root / "data"
        self.options = options
        self.user = SYSTEM_USER if os.geteuid() == 0 else None
        if self.user is not None:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        if initdb:
            self._run(PG_BIN / "initdb", "-D", str(self.pgdata), "-U", "postgres",
                      "--auth=trust", "--encoding=utf8", "--no-sync")

    @property
    def url(self) -> str:
        """A superuser URL."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: object, timeout: float = 60) -> None:
        subprocess.run([str(a) for a in argv], check=True, timeout=timeout,
                       user=self.user, cwd=self.root,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def start(self) -> None:
        """Start and wait until it accepts connections."""
        options = (f"-p {self.port} -h 127.0.0.1 -k '' -c fsync=off "
                   f"-c full_page_writes=off -c max_connections=60 {self.options}")
        self._run(PG_BIN / "pg_ctl", "-D", self.pgdata, "-l", self.root / "log",
                  "-o", options, "-w", "-t", "30", "start")

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m <mode>``, waiting until the postmaster is gone."""
        self._run(PG_BIN / "pg_ctl", "-D", self.pgdata, "-m", mode, "-w", "-t", "30", "stop")

    def running(self) -> bool:
        result = subprocess.run([str(PG_BIN / "pg_ctl"), "-D", str(self.pgdata), "status"],
                                user=self.user, cwd=self.root, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, check=False)
        return result.returncode == 0

    def log(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")
        except OSError:
            return ""

    def destroy(self) -> None:
        """Stop (immediately) if running and delete the data directory."""
        if self.pgdata.exists() and self.running():
            self.stop("immediate")
        deadline = time.monotonic() + 10
        while (self.pgdata / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(self.root, ignore_errors=True)
