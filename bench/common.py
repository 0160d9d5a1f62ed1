"""Shared bench plumbing: a fresh migrated database and a tiny results printer.

Uses BENCH_DATABASE_URL, else TEST_DATABASE_URL (superuser URLs), else an embedded
Postgres. Every figure is printed beside a baseline measured in the same run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from migrations.runner import migrate
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, server_url, with_database


@dataclass(frozen=True)
class BenchDb:
    admin_url: str
    runtime_url: str


@contextlib.contextmanager
def bench_server() -> Iterator[str]:
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        yield url
        return
    with server_url() as url:
        yield url


@contextlib.asynccontextmanager
async def fresh_database(server: str, prefix: str = "hd_bench") -> AsyncIterator[BenchDb]:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    try:
        url = with_database(server, name)
        await migrate(url, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
        yield BenchDb(url, with_database(server, name, user=RUNTIME_USER,
                                         password=RUNTIME_PASSWORD))
    finally:
        admin = await asyncpg.connect(server)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def report(name: str, rows: list[dict[str, object]]) -> None:
    """Print a table and append machine-readable rows to bench/results.jsonl."""
    width = max([44, *(len(str(r["figure"])) for r in rows)])
    print(f"\n{name}")
    print(f"{'figure':<{width}} {'value':>14} {'baseline':>14} {'ratio':>8}  target")
    for r in rows:
        print(f"{r['figure']!s:<{width}} {r['value']!s:>14} {r['baseline']!s:>14} "
              f"{r['ratio']!s:>8}  {r.get('target', '')}")
    out = Path(os.environ.get("BENCH_RESULTS", Path(__file__).with_name("results.jsonl")))
    with out.open("a") as f:
        for r in rows:
            f.write(json.dumps({"bench": name, **r}) + "\n")


def seeded_desk(tree: Path, server_url: str, tickets: int, smalls: int, *,
                timeout: float) -> Any:
    """A helpdesk database on ``server_url``, migrated and seeded by ``tree`` itself
    (bench/writes_seed.py run with the tree's interpreter, so its migrations and its
    write path make the data): a main tenant of 200 tickets, ``smalls`` tenants of
    1,000 and a large one of ``tickets``. Returns what the script prints: the URLs,
    each tenant's id and admin key, the main tenant's tickets."""
    root = Path(__file__).resolve().parent.parent
    python = sys.executable if tree == root else str(tree / ".venv/bin/python")
    source = Path(__file__).with_name("writes_seed.py").read_text()
    done = subprocess.run([python, "-c", source, server_url, str(tickets), str(smalls)],
                          cwd=tree, env=os.environ | {"PYTHONPATH": str(tree)},
                          check=True, capture_output=True, text=True, timeout=timeout)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _server_bindir() -> Path:
    """The machine's PostgreSQL server binaries (the newest installed)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise SystemExit("no PostgreSQL server binaries (initdb) here: install the Debian "
                     "package postgresql, or set BENCH_DATABASE_URL")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def private_server(**config: str) -> Iterator[str]:
    """A Postgres of the bench's own, started with ``config`` (postgresql.conf settings
    the shared server does not have, such as ``track_commit_timestamp``); yields a
    superuser URL and stops it afterwards. Runs as the ``postgres`` OS user when the
    bench runs as root, since the server refuses root."""
    bindir = _server_bindir()
    port = free_port()
    top = Path(tempfile.mkdtemp(prefix="hd-bench-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        as_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(top, "postgres", "postgres")
    data = top / "data"
    settings = {"listen_addresses": "127.0.0.1", "port": str(port),
                "unix_socket_directories": str(top), **config}
    options = " ".join(f"-c {k}={v}" for k, v in settings.items())
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", "postgres",
                        "--auth=trust", "-E", "UTF8"], check=True, capture_output=True)
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-o", options,
                        "-l", str(top / "server.log"), "-w", "start"],
                       check=True, capture_output=True)
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast",
                            "-w", "stop"], check=False, capture_output=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
