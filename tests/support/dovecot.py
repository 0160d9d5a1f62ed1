"""A real IMAP server for the tests: Debian's Dovecot, as an unprivileged instance.

The session fixture ``dovecot_server`` (tests/conftest.py) writes a configuration of
its own into a temporary directory (a plain-text IMAP listener on a free port of
127.0.0.1, users in a passwd-file, maildirs under the directory) and runs
``dovecot -F`` on it; as root, the instance runs as the package's ``dovecot`` user.
Tests add users with ``add_user`` and put mail in with IMAP APPEND.
"""

from __future__ import annotations

import grp
import imaplib
import math
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BINARY = shutil.which("dovecot") or "/usr/sbin/dovecot"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DovecotServer:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="helpdesk-dovecot-"))
        self.port = _free_port()
        # As root, the package's own unprivileged user; else whoever runs the tests.
        account = pwd.getpwnam("dovecot") if os.getuid() == 0 else pwd.getpwuid(os.getuid())
        self.uid, self.gid = account.pw_uid, account.pw_gid
        self.user, self.group = account.pw_name, grp.getgrgid(account.pw_gid).gr_name
        self.users = self.dir / "users"
        self.process: subprocess.Popen[bytes] | None = None

    def _config(self) -> str:
        d = self.dir
        return f"""
protocols = imap
listen = 127.0.0.1
base_dir = {d}/run
state_dir = {d}/state
log_path = {d}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = {self.user}
default_internal_group = {self.group}
default_login_user = {self.user}
first_valid_uid = {self.uid}
last_valid_uid = {self.uid}
mail_location = maildir:{d}/mail/%u
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {self.users}
}}
userdb {{
  driver = static
  args = uid={self.uid} gid={self.gid} home={d}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service pop3-login {{
  chroot =
}}
service auth {{
  user = {self.user}
}}
service auth-worker {{
  user = {self.user}
}}
service anvil {{
  chroot =
}}
"""

    def start(self) -> DovecotServer:
        for sub in ("run", "state", "mail", "home"):
            (self.dir / sub).mkdir()
        self.users.write_text("")
        conf = self.dir / "dovecot.conf"
        conf.write_text(self._config())
        for path in (self.dir, *self.dir.rglob("*")):
            os.chown(path, self.uid, self.gid)
        command = [BINARY, "-F", "-c", str(conf)]
        if os.getuid() == 0:
            command = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}",
                       "--clear-groups", *command]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                said = self.process.stderr.read() if self.process.stderr else b""
                raise RuntimeError(f"dovecot exited: {said!r} {self.log()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"dovecot did not listen: {self.log()[-2000:]}")

    def log(self) -> str:
        path = self.dir / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def add_user(self, name: str, password: str) -> None:
        before = int(self.users.stat().st_mtime)
        with self.users.open("a") as f:
            f.write(f"{name}:{{PLAIN}}{password}::::::\n")
        # Dovecot looks at the file at most once a second (its loop's clock) and reads it
        # again only when its mtime, in whole seconds, moved: a user added within the
        # second of a login would fail to log in until the next one.
        now = time.time()
        stamp = max(now, before + 1)
        os.utime(self.users, (stamp, stamp))
        time.sleep(math.floor(now) + 1.01 - now)

    def client(self, name: str, password: str) -> imaplib.IMAP4:
        client = imaplib.IMAP4("127.0.0.1", self.port, timeout=5)
        client.login(name, password)
        return client

    def append(self, name: str, password: str, raw: bytes, folder: str = "INBOX") -> None:
        client = self.client(name, password)
        try:
            typ, data = client.append(folder, "", imaplib.Time2Internaldate(time.time()), raw)
            assert typ == "OK", data
        finally:
            client.logout()

    def seen(self, name: str, password: str, folder: str = "INBOX") -> list[int]:
        """UIDs flagged \\Seen."""
        client = self.client(name, password)
        try:
            client.select(folder, readonly=True)
            _, data = client.uid("SEARCH", "SEEN")
            return [int(x) for x in (data[0] or b"").split()]
        finally:
            client.logout()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)
