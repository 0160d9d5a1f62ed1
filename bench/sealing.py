"""Ticket opening and stream reads with personal data sealed, against the same
without sealing.

The product's write path (``handlers.tickets.execute`` in a unit of work, requester
resolved to a contact) through two stores on one pool: one with a keyring, as the
product runs, and one without (personal data in the clear, as before sealing). The
opening case takes its requesters from 50 contacts, so most openings find the
contact's key made; the read case reads a ticket's stream (an opening and two
replies) as history does. Cases take turns (``--rounds``) so load from elsewhere on a
shared machine falls on both alike. Not over HTTP: this measures what sealing adds to
the store; bench/http.py measures the HTTP ticket opening as a whole.

    python -m bench.sealing [--seconds 6] [--writers 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from datetime import UTC, datetime

from bench.common import bench_server, fresh_database, report
from domain import Actor, ActorKind, OpenTicket, Requester, Visibility
from domain.ids import MessageId, TenantId, TicketId
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers.tenants import create_tenant_as_operator
from handlers.tickets import PostMessage, execute, post_message

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
            async with store.session(tenant, ACTOR) as s:
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
            async with store.session(tenant, ACTOR, readonly=True) as s:
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
            async with store.session(tenant, ACTOR) as s:
                await post_message(s, PostMessage(
                    ticket_id=ticket, message_id=MessageId(uuid.uuid4()), body=body,
                    visibility=Visibility.PUBLIC, at=datetime.now(UTC), author=AGENT))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
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
                async with store.session(tenants[case], ACTOR, readonly=True) as s:
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
