"""A primary and a streaming replica of the test's own, on ports of their own.

The primary is an ``initdb`` of the machine's PostgreSQL (tests/support/pgserver.py)
with ``wal_level = replica``, WAL senders and a replication line in ``pg_hba.conf``;
the replica is ``pg_basebackup -R`` of it (a base backup that writes
``standby.signal`` and ``primary_conninfo``), started on another port, so it streams
from the primary from then on. Both run as the ``postgres`` system user under root.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.pgserver import PG_BIN, PostgresServer

REPLICATION = ("-c wal_level=replica -c max_wal_senders=4 -c wal_keep_size=64MB "
               "-c full_page_writes=on")


def primary_server() -> PostgresServer:
    """A primary that accepts one streaming replica (not started yet)."""
    server = PostgresServer(options=REPLICATION)
    hba = server.pgdata / "pg_hba.conf"
    with hba.open("a") as f:
        f.write("host replication postgres 127.0.0.1/32 trust\n")
    return server


def replica_of(primary: PostgresServer) -> PostgresServer:
    """A streaming replica of the running ``primary`` (not started yet)."""
    replica = PostgresServer(options="-c hot_standby=on -c wal_receiver_status_interval=1",
                             initdb=False)
    subprocess.run(
        [str(PG_BIN / "pg_basebackup"), "-h", "127.0.0.1", "-p", str(primary.port),
         "-U", "postgres", "-D", str(replica.pgdata), "-R", "-X", "stream",
         "--checkpoint=fast", "--no-sync"],
        check=True, timeout=120, user=replica.user, cwd=replica.root,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return replica


def standby_signal(server: PostgresServer) -> Path:
    return server.pgdata / "standby.signal"
