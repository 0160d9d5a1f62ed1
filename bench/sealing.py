"""Ticket opening and stream reads with personal data sealed, against the same
without sealing; ticket opening through HTTP; and a projection rebuild.

The product's write path (``handlers.tickets.execute`` in a unit of work, requester
resolved to a contact) through two stores on one pool: one with a keyring, as the
product runs, and one without (personal data in the clear, as before sealing). The
opening case takes its requesters from 50 contacts, so most openings find the
contact's key made; the read case reads a ticket's stream (an opening and two
replies) as history does. Cases take turns (``--rounds``) so load from elsewhere on a
shared machine falls on both alike. This part measures what sealing adds to the store.

``--http``: ``POST /v1/tickets`` loaded by wrk (bench/http.py's script and
connections) against ``helpdesk serve --workers 1``, and against the same server
with no keyring (bench/without_sealing.py: the product writes in the clear), each
on a tenant of its own; once with one known requester (its key is made once, then
held FOR SHARE by every opening) and once with a new e-mail per request (a contact
and a key made per opening). The four servers take turns, ``--rounds`` times; the
figures are medians. Target: sealed >= 0.9 of the plain rate. Beside the rates, the
server process's CPU time per opening (from /proc), which other load on a shared
machine moves far less than it moves rates (it leaves out the database's side).

``--rebuild``: ``helpdesk projections rebuild analytics`` (projections.admin.rebuild)
over the same generated events (bench/projections.py) loaded once in the clear and
once with their personal fields sealed, rebuilt in turns; medians. A rebuild reads
no data key: the analytics projection holds no personal data, and the mapper
replays a sealed field as an empty text (domain/mapper.py). What sealing costs it is
the larger payloads. Target: sealed >= 0.75 of the plain rate.

    python -m bench.sealing [--seconds 6] [--writers 4] [--rounds 3] [--http] [--rebuild]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from api.cli.projections import REBUILD_BATCH
from bench.common import bench_server, fresh_database, report
from bench.http import CONNECTIONS, NEW_EMAIL, TICKET_BODY, Load, Wrk, lua, serving
from bench.projections import generate, load
from domain.ids import MessageId, TenantId, TicketId
from domain.personal import paths_in
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester, Visibility
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.sealing import Place, seal
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers.tenants import create_tenant_as_operator
from handlers.tickets import PostMessage, execute, post_message
from projections import admin
from projections.projector import Projector

ACTOR = StoreActor("api_key", "bench")
AGENT = Actor(kind=ActorKind.AGENT, id="bench-agent")
REQUESTERS = [f"customer{i}@example.com" for i in range(50)]


async def open_run(store: EventStore, tenant: TenantId, writers: int,
                   seconds: float) -> tuple[int, float, list[TicketId]]:
    """Tickets opened (each its own unit of work) per writer until the deadline."""
    opened: list[TicketId] = []
    deadline = time.perf_counter() + seconds

    async def writer(i: int) -> None:
        n = 0
        while time.perf_counter() < deadline:
            ticket = TicketId(uuid.uuid4())
            command = OpenTicket(
                ticket_id=ticket, subject="Printer on fire", body="It is really on fire.",
                requester=Requester(email=REQUESTERS[(i * 7 + n) % len(REQUESTERS)],
                                    name="Customer"),
                actor=AGENT, at=datetime.now(UTC))
            async with store.unit_of_work(tenant, ACTOR) as s:
                await execute(s, ticket, command)
            opened.append(ticket)
            n += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    return len(opened), time.perf_counter() - started, opened


async def read_run(store: EventStore, tenant: TenantId, tickets: list[TicketId],
                   writers: int, seconds: float) -> tuple[int, float]:
    """Streams read (each in its own read-only unit of work) until the deadline."""
    count = 0
    deadline = time.perf_counter() + seconds

    async def reader(i: int) -> None:
        nonlocal count
        n = i
        while time.perf_counter() < deadline:
            async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
                events = await s.read_stream(tickets[n % len(tickets)])
            assert isinstance(events[0].data["subject"], str)
            n += writers
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(reader(i) for i in range(writers)))
    return count, time.perf_counter() - started


async def replies(store: EventStore, tenant: TenantId, tickets: list[TicketId]) -> None:
    for ticket in tickets:
        for body in ("First answer", "Second answer"):
            async with store.unit_of_work(tenant, ACTOR) as s:
                await post_message(s, PostMessage(
                    ticket_id=ticket, message_id=MessageId(uuid.uuid4()), body=body,
                    visibility=Visibility.PUBLIC, at=datetime.now(UTC), author=AGENT))


async def http_run(runtime_url: str, admin_url: str, seconds: float,
                   rounds: int) -> list[dict[str, object]]:
    """Openings per second through HTTP (wrk), sealed against in the clear."""
    keys = {case: (await create_tenant_as_operator(admin_url, case)).admin_key.secret
            for case in ("sealed", "plain")}
    # Rounds reuse each tenant's key within the rate limit's window: lift the limit, or
    # fast 429 answers would count as openings.
    env = {"DATABASE_URL": runtime_url, "LOG_LEVEL": "warning", "RUN_SCHEDULER": "false",
           "DB_POOL_MAX": str(CONNECTIONS + 4), "RATE_LIMIT_PER_KEY": "1000000"}
    module = {"sealed": "api.cli.main", "plain": "bench.without_sealing"}
    scripts = {"known e-mail": lambda key: lua([("POST", "/v1/tickets", TICKET_BODY)], [key]),
               "new e-mail": lambda key: NEW_EMAIL.replace("KEY", key)}
    load_ = Wrk()
    runs: dict[tuple[str, str], list[Load]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}  # the server's CPU ms per request
    cases = [(script, case) for script in scripts for case in module]
    for round_ in range(rounds):
        # Each round starts with another case, so no case always runs first.
        shift = round_ % len(cases)
        for script, case in cases[shift:] + cases[:shift]:
            with serving(["-m", module[case], "serve", "--workers", "1"], env) as server:
                await server.ready()
                text = scripts[script](keys[case])
                load_.run(server.url, 1, text)  # warm
                began = cpu_seconds(server.proc.pid)
                run = load_.run(server.url, seconds, text)
                spent = cpu_seconds(server.proc.pid) - began
                runs.setdefault((script, case), []).append(run)
                cpu.setdefault((script, case), []).append(1000 * spent / max(run.requests, 1))
    rows: list[dict[str, object]] = []
    for script in scripts:
        rps = {case: statistics.median(r.rps for r in runs[(script, case)]) for case in module}
        bad = sum(r.bad for case in module for r in runs[(script, case)])
        print(f"http {script}: sealed {[round(r.rps) for r in runs[(script, 'sealed')]]} "
              f"plain {[round(r.rps) for r in runs[(script, 'plain')]]} req/s; bad {bad}")
        rows.append({"figure": f"HTTP opening, {script}, sealed (baseline: clear)",
                     "value": round(rps["sealed"]), "baseline": round(rps["plain"]),
                     "ratio": round(rps["sealed"] / rps["plain"], 3), "target": ">= 0.9"})
        ms = {case: statistics.median(cpu[(script, case)]) for case in module}
        print(f"http {script}: server CPU ms per opening, sealed "
              f"{[round(v, 2) for v in cpu[(script, 'sealed')]]} plain "
              f"{[round(v, 2) for v in cpu[(script, 'plain')]]}")
        rows.append({"figure": f"server CPU ms/opening, {script} (baseline: clear)",
                     "value": round(ms["sealed"], 2), "baseline": round(ms["plain"], 2),
                     "ratio": round(ms["sealed"] / ms["plain"], 3), "target": "<= 1.11"})
    return rows


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) a process has used, from /proc: unlike a rate, barely
    moved by other work on the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sealed_rows(rows: list[tuple[uuid.UUID, int, str, int, dict[str, object]]],
                tenant: TenantId) -> list[tuple[uuid.UUID, int, str, int, dict[str, object]]]:
    """The generated events with their personal fields sealed, one subject (and key)
    per ticket, bound to ``tenant`` and their place as the store binds them."""
    keys: dict[uuid.UUID, bytes] = {}
    out = []
    for stream, version, type_, schema, data in rows:
        key = keys.setdefault(stream, os.urandom(32))
        subject = uuid.uuid5(stream, "requester")
        out.append((stream, version, type_, schema,
                    seal(data, paths_in(type_, data), Place(tenant, stream, version), subject,
                         key)))
    return out


async def rebuild_run(runtime_url: str, admin_url: str, events: int,
                      rounds: int) -> list[dict[str, object]]:
    """Analytics rebuild events/s over sealed events, against the same in the clear."""
    tenants = {case: (await create_tenant_as_operator(admin_url, case)).tenant_id
               for case in ("sealed", "plain")}
    plain = generate(events, 1)
    pool = await create_pool(runtime_url, min_size=2, max_size=4)
    rates: dict[str, list[float]] = {"sealed": [], "plain": []}
    try:
        for case, rows in (("plain", plain), ("sealed", sealed_rows(plain, tenants["sealed"]))):
            for i in range(0, len(rows), 5000):
                await load(pool, tenants[case], rows[i:i + 5000])
        projector = Projector(pool, batch_size=REBUILD_BATCH)
        for round_ in range(rounds):
            for case in (("sealed", "plain") if round_ % 2 else ("plain", "sealed")):
                began = time.perf_counter()
                reached = await admin.rebuild(projector, "analytics", tenants[case])
                rates[case].append(reached / (time.perf_counter() - began))
    finally:
        await pool.close()
    print(f"rebuild events/s: sealed {[round(r) for r in rates['sealed']]} "
          f"plain {[round(r) for r in rates['plain']]}")
    value, base = statistics.median(rates["sealed"]), statistics.median(rates["plain"])
    return [{"figure": f"rebuild ({len(plain)} events), sealed (baseline: clear)",
             "value": round(value), "baseline": round(base), "ratio": round(value / base, 3),
             "target": ">= 0.75"}]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--http", action="store_true", help="only the HTTP openings")
    parser.add_argument("--rebuild", action="store_true", help="only the rebuild")
    parser.add_argument("--events", type=int, default=20_000, help="events to rebuild")
    args = parser.parse_args()
    if args.http or args.rebuild:
        with bench_server() as server:
            async with fresh_database(server) as db:
                figures: list[dict[str, object]] = []
                if args.http:
                    figures += await http_run(db.runtime_url, db.admin_url, args.seconds,
                                              args.rounds)
                if args.rebuild:
                    figures += await rebuild_run(db.runtime_url, db.admin_url, args.events,
                                                 args.rounds)
        report(f"personal data sealed vs in the clear ({args.rounds} rounds, medians)",
               figures)
        return
    with bench_server() as server:
        async with fresh_database(server) as db:
            tenants = {case: (await create_tenant_as_operator(db.admin_url, case)).tenant_id
                       for case in ("sealed", "plain")}
            pool = await create_pool(db.runtime_url, min_size=args.writers,
                                     max_size=args.writers)
            stores = {"sealed": EventStore(pool, keyring=Keyring(os.urandom(32))),
                      "plain": EventStore(pool)}
            samples: dict[str, list[TicketId]] = {}
            for case, store in stores.items():  # warm-up, and the tickets to read
                _, _, opened = await open_run(store, tenants[case], args.writers, 1.0)
                samples[case] = opened[:50]
                await replies(store, tenants[case], samples[case])
            totals = {f"{op} {case}": (0, 0.0) for op in ("open", "read") for case in stores}
            per = args.seconds / args.rounds
            for _ in range(args.rounds):
                for case, store in stores.items():
                    count, elapsed, _ = await open_run(store, tenants[case], args.writers, per)
                    c, e = totals[f"open {case}"]
                    totals[f"open {case}"] = (c + count, e + elapsed)
                for case, store in stores.items():
                    count, elapsed = await read_run(store, tenants[case], samples[case],
                                                    args.writers, per)
                    c, e = totals[f"read {case}"]
                    totals[f"read {case}"] = (c + count, e + elapsed)
            for case, store in stores.items():
                async with store.unit_of_work(tenants[case], ACTOR, readonly=True) as s:
                    if not (await s.verify_chain()).ok:
                        raise SystemExit(f"{case}: chain broken")
            await pool.close()
    rate = {name: count / elapsed for name, (count, elapsed) in totals.items()}
    rows: list[dict[str, object]] = []
    for op, figure, target in (("open", "ticket opening, sealed", ">= 0.9"),
                               ("read", "stream read (3 events), sealed", "-")):
        value, base = rate[f"{op} sealed"], rate[f"{op} plain"]
        rows.append({"figure": f"{figure} (baseline: in the clear)", "value": round(value),
                     "baseline": round(base), "ratio": round(value / base, 2),
                     "target": target})
    report(f"personal data sealed vs in the clear (per second, {args.writers} writers)", rows)


if __name__ == "__main__":
    asyncio.run(main())
