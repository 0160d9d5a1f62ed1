"""What a reply that is mailed costs: ``POST /v1/tickets/{id}/messages`` on mail tickets
(a ``mail.send`` job behind each public reply) against replies on tickets of a tenant
without a mailbox, under wrk.

    python -m bench.mail_replies [--seconds 8] [--rounds 3] [--tickets 200]

One run starts a Postgres of its own (bench/common.py ``private_server``), an aiosmtpd
server in this process (tests/support/smtp.py, what the tests deliver to), and serves
``helpdesk serve --workers 1`` without the scheduler (``RUN_SCHEDULER=false``) as
docker-compose.yml deploys it. Two tenants: "mail" with one mailbox (SMTP to that
server, no DKIM) and ``--tickets`` tickets taken in by ``POST /v1/inbound/mail/{id}``
(each a mail thread, so each public reply queues its mail), and "plain" with as many
tickets opened by ``POST /v1/tickets`` and no mailbox. wrk (pinned as bench/http.py
pins it, 16 connections) posts public replies over each tenant's tickets in
alternating rounds; the ratio is the medians'. Beside req/s, each case's CPU per reply
of the API process and of the Postgres server (bench/cpu_per_request.py), which a
loaded machine disturbs far less; the CPU ratios are none's over mail's.

Two phases, each with its own baseline:

- **Request only.** No worker runs: the ``mail.send`` jobs wait, so the figure is what
  queueing a mail adds to the reply's own request and transaction.
- **With delivery.** A ``helpdesk worker`` runs the scheduler (``mail.send`` among its
  jobs) beside the API, as deployed: the mail of the replies of the first phase and of
  this one is built, signed if the mailbox signs, and handed to the SMTP server while
  wrk loads the API. On a small machine that work shares the cores with the API (and
  the backlog of the first phase is delivered during both cases alike); the mail
  delivered per second while loaded is shown, with the jobs left at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
import uuid
from typing import Any

import asyncpg
import httpx

from bench.common import private_server, report
from bench.cpu_per_request import postmaster, tree_cpu
from bench.http import CONNECTIONS, Wrk, lua, serving
from bench.rules import working
from tests.support.smtp import SmtpServer

REPLY = '{"body": "Thanks, we are on it.", "visibility": "public"}'


def _mail(i: int) -> bytes:
    return (f"From: Customer {i} <c{i}@example.com>\r\nTo: support@acme.test\r\n"
            f"Subject: Printer {i} on fire\r\n"
            f"Message-ID: <bench-{i}-{uuid.uuid4().hex}@example.com>\r\n"
            "Date: Wed, 02 Dec 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n\r\n"
            "It is really on fire.\r\n").encode()


async def _tenants(url: str, admin_url: str, smtp_port: int, tickets: int
                   ) -> tuple[list[str], str, list[str], str]:
    """The mail tenant's tickets and key, the plain tenant's tickets and key."""
    from handlers.tenants import create_tenant_as_operator

    mail = await create_tenant_as_operator(admin_url, "mail")
    plain = await create_tenant_as_operator(admin_url, "plain")
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        key = {"Authorization": f"Bearer {mail.admin_key.secret}"}
        made = await http.post("/v1/mailboxes", headers=key, json={
            "address": "support@acme.test",
            "smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none"}})
        made.raise_for_status()
        box, secret = made.json()["id"], made.json()["inbound_secret"]
        mail_tickets = []
        for i in range(tickets):
            taken = await http.post(f"/v1/inbound/mail/{box}", content=_mail(i), headers={
                "Authorization": f"Bearer {secret}", "Content-Type": "message/rfc822"})
            taken.raise_for_status()
            if taken.json()["outcome"] != "ticket":
                raise SystemExit(f"a bench mail was not taken in: {taken.text}")
            mail_tickets.append(taken.json()["ticket_id"])
        key = {"Authorization": f"Bearer {plain.admin_key.secret}"}
        plain_tickets = []
        for i in range(tickets):
            opened = await http.post("/v1/tickets", headers=key, json={
                "subject": f"Printer {i} on fire", "body": "It is really on fire.",
                "requester": {"email": f"c{i}@example.com"}})
            opened.raise_for_status()
            plain_tickets.append(opened.json()["id"])
    return mail_tickets, mail.admin_key.secret, plain_tickets, plain.admin_key.secret


def _replies(tickets: list[str]) -> list[tuple[str, str, str | None]]:
    return [("POST", f"/v1/tickets/{t}/messages", REPLY) for t in tickets]


CASES = ("mail.send behind", "no mailbox")


def _phase(name: str, url: str, scripts: dict[str, str], seconds: float, rounds: int,
           pids: tuple[int, int]) -> list[dict[str, object]]:
    """Alternating wrk rounds of each case: req/s, and the CPU ms per request of the
    API process and of the Postgres server (its backends and background processes),
    medians of the rounds. CPU per request holds up on a loaded machine where req/s
    does not."""
    wrk = Wrk()
    rates: dict[str, list[float]] = {c: [] for c in CASES}
    api_ms: dict[str, list[float]] = {c: [] for c in CASES}
    db_ms: dict[str, list[float]] = {c: [] for c in CASES}
    bad = 0
    for round_ in range(rounds):
        for case in CASES if round_ % 2 == 0 else tuple(reversed(CASES)):
            api, db = tree_cpu(pids[0]), tree_cpu(pids[1])
            load = wrk.run(url + "/", seconds, scripts[case], CONNECTIONS)
            done = max(load.requests - load.bad, 1)
            api_ms[case].append((tree_cpu(pids[0]) - api) * 1000 / done)
            db_ms[case].append((tree_cpu(pids[1]) - db) * 1000 / done)
            rates[case].append(load.rps * done / max(load.requests, 1))
            bad += load.bad
            print(f"{name} round {round_ + 1} {case}: {rates[case][-1]:.0f} req/s, "
                  f"p99 {load.p99_ms:.1f} ms, API {api_ms[case][-1]:.2f} ms CPU/req, "
                  f"Postgres {db_ms[case][-1]:.2f} ms CPU/req, bad {load.bad}", flush=True)
    with open("/proc/loadavg") as f:
        loadavg = " ".join(f.read().split()[:3])
    print(f"{name}: load average {loadavg}", flush=True)
    med = {k: {c: statistics.median(v[c]) for c in CASES}
           for k, v in (("rate", rates), ("api", api_ms), ("db", db_ms))}
    mailed, plain = CASES
    return [{"figure": f"{name}: replies/s, mail.send behind vs no mailbox",
             "value": round(med["rate"][mailed]), "baseline": round(med["rate"][plain]),
             "ratio": round(med["rate"][mailed] / med["rate"][plain], 2),
             "target": ">= 0.7", "load": loadavg, "bad": bad},
            {"figure": f"{name}: API CPU ms/reply, mail.send behind vs none",
             "value": round(med["api"][mailed], 2), "baseline": round(med["api"][plain], 2),
             "ratio": round(med["api"][plain] / med["api"][mailed], 2), "target": ""},
            {"figure": f"{name}: Postgres CPU ms/reply, mail.send behind vs none",
             "value": round(med["db"][mailed], 2), "baseline": round(med["db"][plain], 2),
             "ratio": round(med["db"][plain] / med["db"][mailed], 2), "target": ""}]


async def _counts(admin_url: str) -> tuple[int, int]:
    conn = await asyncpg.connect(admin_url)
    try:
        row = await conn.fetchrow(
            "SELECT count(*) FILTER (WHERE status IN ('ready', 'running')) AS waiting, "
            "       count(*) FILTER (WHERE status = 'done') AS done "
            "  FROM jobs WHERE kind = 'mail.send'")
        assert row is not None
        return int(row["waiting"]), int(row["done"])
    finally:
        await conn.close()


async def run(seconds: float, rounds: int, tickets: int) -> None:
    from tests.support.pg import Databases

    smtp = SmtpServer().start()
    try:
        with private_server(max_connections="300", shared_buffers="256MB") as server:
            dbs = Databases(server)
            await dbs.create_template()
            db = await dbs.clone()
            try:
                env = {"DATABASE_URL": db.runtime_url, "RUN_SCHEDULER": "false",
                       "PROJECTOR_POLL_INTERVAL": "1", "LOG_LEVEL": "warning",
                       "DB_POOL_MAX": "24"}
                with serving(["-m", "api.cli.main", "serve", "--workers", "1"], env) as served:
                    await served.ready()
                    mail_t, mail_key, plain_t, plain_key = await _tenants(
                        served.url, db.admin_url, smtp.port, tickets)
                    scripts = {"mail.send behind": lua(_replies(mail_t), [mail_key]),
                               "no mailbox": lua(_replies(plain_t), [plain_key])}
                    pids = (served.proc.pid, postmaster(int(server.rsplit(":", 1)[1]
                                                            .split("/")[0])))
                    rows = _phase("request only", served.url, scripts, seconds, rounds, pids)
                    waiting, _ = await _counts(db.admin_url)
                    print(f"mail.send jobs waiting: {waiting}", flush=True)
                    with working(env):
                        began = time.perf_counter()
                        rows += _phase("with delivery", served.url, scripts, seconds, rounds,
                                       pids)
                        waiting, done = await _counts(db.admin_url)
                        spent = time.perf_counter() - began
                    rows.append({"figure": "mails delivered/s while loaded (jobs left)",
                                 "value": round(len(smtp.delivered) / spent, 1),
                                 "baseline": waiting, "ratio": "", "target": "",
                                 "done": done})
            finally:
                await dbs.drop(db.name)
                await dbs.drop(dbs.template)
    finally:
        smtp.stop()
    report("mail: replies with mail.send behind", rows)


def _arguments() -> Any:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tickets", type=int, default=200)
    return parser.parse_args()


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.mail_replies")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    args = _arguments()
    asyncio.run(run(args.seconds, args.rounds, args.tickets))
