"""A real PgBouncer in transaction pooling mode, started and stopped by a test."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from tests.support.wait import WaitTimeout, until_sync


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or (
        "/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None)


@contextmanager
def pgbouncer(server_url: str, *, pool_size: int) -> Iterator[str]:
    """Run PgBouncer in front of ``server_url``'s server; yield the same URL through it."""
    binary = pgbouncer_binary()
    if binary is None:
        raise RuntimeError("pgbouncer is not installed (apt-get install pgbouncer)")
    parts = urlsplit(server_url)
    host = parts.hostname or parse_qs(parts.query).get("host", ["/tmp"])[0]
    port = parts.port or 5432
    port_out = free_port()
    with tempfile.TemporaryDirectory(prefix="helpdesk-pgbouncer-") as tmp:
        d = Path(tmp)
        (d / "users.txt").write_text(f'"{parts.username}" ""\n')
        (d / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={host} port={port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port_out}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {d / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {pool_size}\nmin_pool_size = 0\nreserve_pool_size = 0\n"
            "max_client_conn = 200\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {d / 'pgbouncer.log'}\npidfile = {d / 'pgbouncer.pid'}\n"
        )
        args = [binary, str(d / "pgbouncer.ini")]
        if os.geteuid() == 0:
            # PgBouncer refuses to run as root; drop to an unprivileged user: the
            # embedded server's own user when there is one (it can reach that
            # server's private socket directory), else nobody.
            try:
                user = pwd.getpwnam("embedded_postgres").pw_name
            except KeyError:
                user = "nobody"
            os.chmod(tmp, 0o777)
            for f in d.iterdir():
                os.chmod(f, 0o666)
            args[1:1] = ["-u", user]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:

            def failed() -> RuntimeError:
                log = (d / "pgbouncer.log")
                return RuntimeError("pgbouncer did not start: " + (
                    log.read_text() if log.exists() else "") + (
                    proc.stderr.read().decode() if proc.stderr else ""))

            def accepting() -> bool:
                if proc.poll() is not None:
                    raise failed()
                try:
                    socket.create_connection(("127.0.0.1", port_out), timeout=0.2).close()
                except OSError:
                    return False
                return True

            try:
                until_sync(accepting, timeout=10, interval=0.05, what="pgbouncer to accept")
            except WaitTimeout:
                raise failed() from None
            netloc = f"{parts.username}:{parts.password or ''}@127.0.0.1:{port_out}"
            yield urlunsplit(("postgresql", netloc, parts.path, "", ""))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            if proc.stderr is not None:
                proc.stderr.close()
