"""Where mail ingestion's time goes: round trips a mail, their waits by statement, and
the CPU of this process and of Postgres a mail, against parsing alone in the same run.

    python -m bench.mail_breakdown [--mails 500] [--apart]

The ingestion of bench/mail.py (its mails, its Dovecot, ``poll_mailbox`` until the
folder is drained) with a query logger on every pooled connection: each statement,
BEGIN and COMMIT (with what went in its message) is one round trip, timed at the
client. CPU: this process's (the parse in its thread included), and that of the
database's server processes serving the pool, read from /proc before and after (the
server on this machine, so not through PgBouncer or a remote host). Parsing alone
(``domain.mail.parse`` over the same bytes) gives the baseline's CPU a mail.

``--apart`` sends each deferred write and append in a round trip of its own instead of
in the COMMIT's message, to see what each costs the server (slower as a whole: it is
a breakdown, not the path users take).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import time
from pathlib import Path
from typing import Any

import asyncpg

from api.config import ProcessSettings
from api.root import ProcessRole, file_storages, running
from bench import mail as mail_bench
from bench.common import bench_server, fresh_database, report
from domain.mail import parse
from eventstore.pool import StoreConnection
from handlers import mail_poll
from handlers.tenants import create_tenant_as_operator
from tests.support.dovecot import DovecotServer


class _Log:
    """Statements seen by the pool's connections while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.seen: list[Any] = []

    def __call__(self, record: Any) -> None:
        if self.on:
            self.seen.append(record)


def _logged(log: _Log, apart: bool) -> None:
    init = StoreConnection.__init__

    def logging_init(self: StoreConnection, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.add_query_logger(log)

    StoreConnection.__init__ = logging_init  # type: ignore[method-assign]
    if apart:
        # Without them the store sends deferred writes and appends one at a time.
        del StoreConnection.commit_with
        del StoreConnection.run_batch


def _label(query: str) -> str:
    q = query.strip()
    if q.startswith("BEGIN"):
        return "BEGIN (tenant armed)"
    if q.endswith("COMMIT;"):
        return f"COMMIT with deferred writes and appends ({q.count('EXECUTE ')} statements)"
    if "EXECUTE " in q:
        return f"deferred writes sent before a read ({q.count('EXECUTE ')} statements)"
    lines = [ln for ln in q.splitlines() if not ln.startswith("--")]
    return " ".join(" ".join(lines).split())[:80]


async def _server_cpu(conn: asyncpg.Connection) -> float:
    """CPU seconds of the server processes on this database (but ``conn``'s own)."""
    pids = [r["pid"] for r in await conn.fetch(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()")]
    return _cpu_of(pids)


def _cpu_of(pids: list[int]) -> float:
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / tick


async def main(mails: int, apart: bool) -> None:
    log = _Log()
    _logged(log, apart)
    with bench_server() as server:
        async with fresh_database(server, "hd_bench_mail_breakdown") as db:
            tenant = (await create_tenant_as_operator(db.admin_url, "Bench")).tenant_id
            dovecot = DovecotServer().start()
            try:
                dovecot.add_user(mail_bench.USER, mail_bench.PASSWORD)
                raws = mail_bench._mails(mails)
                client = dovecot.client(mail_bench.USER, mail_bench.PASSWORD)
                for raw in raws:
                    client.append("INBOX", "", None, raw)
                client.logout()
                cpu = time.process_time()
                for raw in raws:
                    parse(raw)
                parse_cpu = time.process_time() - cpu
                settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=2,
                                           db_pool_max=12)
                async with running(settings, ProcessRole.CLI) as services:
                    box = await mail_bench._mailbox(services, tenant, imap_port=dovecot.port,
                                                    smtp_port=None, address="support@acme.test")
                    storages = file_storages(settings, services.store)
                    admin = await asyncpg.connect(db.admin_url)
                    server_before = await _server_cpu(admin)
                    log.on = True
                    started, cpu = time.perf_counter(), time.process_time()
                    while await mail_poll.poll_mailbox(services.store, storages, tenant, box,
                                                       services.clock.now):
                        pass
                    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                    log.on = False
                    server = await _server_cpu(admin) - server_before
                    await admin.close()
                    await asyncio.sleep(0.1)  # the logger's last calls
            finally:
                dovecot.stop()
    by: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    for r in log.seen:
        entry = by[_label(r.query)]
        entry[0] += 1
        entry[1] += r.elapsed
    trips = sum(int(n) for n, _ in by.values())
    waited = sum(s for _, s in by.values())
    ms = 1000 / mails
    report("mail_breakdown", [
        {"figure": f"round trips a mail ({mails} mails{', apart' if apart else ''})",
         "value": round(trips / mails, 2), "baseline": "", "ratio": "", "target": ""},
        {"figure": "waited on the database, ms a mail", "value": round(waited * ms, 2),
         "baseline": f"wall {wall * ms:.2f}", "ratio": round(waited / wall, 3), "target": ""},
        {"figure": "CPU ms a mail: this process + Postgres",
         "value": f"{cpu * ms:.2f}+{server * ms:.2f}",
         "baseline": f"parse {parse_cpu * ms:.2f}",
         "ratio": round(parse_cpu / (cpu + server), 3), "target": ""},
    ])
    print(f"\n{'a mail':>7} {'ms avg':>8} {'total s':>8}  statement")
    for label, (n, s) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"{n / mails:7.2f} {1000 * s / n:8.2f} {s:8.2f}  {label}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mails", type=int, default=500)
    parser.add_argument("--apart", action="store_true",
                        help="deferred writes and appends each in a round trip of its own")
    args = parser.parse_args()
    asyncio.run(main(args.mails, args.apart))
