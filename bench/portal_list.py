"""The portal's ticket list with customer CCs: the list a contact reads (their own
tickets and those they are copied on, handlers/portal.sql ``own_tickets``) under the
contact policies of migration 0900 (``ticket_contacts``), against the list before CCs
were read (the requester's tickets only, under 0460's policy), and against the design
0900 replaced (the CCs found by jsonb containment on the ticket's CC list), in one run.

    python -m bench.portal_list [--tickets 2000] [--contacts 100] [--runs 30]

A fresh migrated database on the bench server (bench/common.py) and one tenant whose
``--tickets`` tickets are opened through the write path (``handlers.tickets``) for
``--contacts`` requesters in turn; one ticket in a hundred copies the first contact, who is
the one measured. Each figure is the median server execution time of ``--runs``
``EXPLAIN ANALYZE`` of the first page (25), as the runtime role under row-level
security, acting as that contact, and the plan's nodes. The earlier policies are put
back for their figures inside a transaction that is rolled back. Target: the list
stays an index query (index probes of the contact's rows, no walk of the tenant's
tickets); it reads the CC's tickets beside the requester's, so it does more than the
requester-only list, but nothing that grows with the tenant.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg

from bench.common import bench_server, fresh_database, report
from domain.ids import TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore, arm
from handlers.portal import Q as PORTAL
from handlers.portal import customer_actor
from handlers.tenants import create_tenant_as_operator
from handlers.ticket_links import change_ccs
from handlers.tickets import run_command
from tests.support.desk import ACTOR
from tests.support.pg import RUNTIME_USER

AGENT = Actor(kind=ActorKind.AGENT, id="bench")
PAGE = 25

# The list before CCs were read: the requester's tickets, and 0460's policy.
REQUESTER_ONLY = """
SELECT id, subject, state, created_at, updated_at
  FROM tickets
 WHERE tenant_id = $1 AND contact_id = $2
   AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
 ORDER BY created_at DESC, id DESC
 LIMIT $5"""
REQUESTER_POLICY = """
DROP POLICY contact_scope ON tickets;
CREATE POLICY contact_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR contact_id = acting_contact())"""

# The design 0900 replaced: the CCs asked of the ticket's own CC list.
CONTAINMENT = """
SELECT id, subject, state, created_at, updated_at
  FROM tickets
 WHERE tenant_id = $1
   AND (contact_id = $2
        OR state_json -> 'ccs' @> jsonb_build_array(jsonb_build_object('contact_id', $2::text)))
   AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
 ORDER BY created_at DESC, id DESC
 LIMIT $5"""
CONTAINMENT_POLICY = """
DROP POLICY contact_scope ON tickets;
CREATE POLICY contact_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR contact_id = acting_contact()
           OR state_json -> 'ccs' @> jsonb_build_array(
                  jsonb_build_object('contact_id', acting_contact()::text)))"""


async def _seed(store: EventStore, tenant: Any, tickets: int, contacts: int) -> uuid.UUID:
    """The tickets, through the write path; the measured contact's id."""
    at = datetime(2026, 6, 1, tzinfo=UTC)
    first: uuid.UUID | None = None
    for i in range(tickets):
        tid = TicketId(uuid.uuid4())
        async with store.unit_of_work(tenant, ACTOR) as s:
            opened = await run_command(s, tid, OpenTicket(
                ticket_id=tid, subject=f"Ticket {i}", body="It broke",
                requester=Requester(email=f"c{i % contacts}@example.com"), actor=AGENT,
                at=at + timedelta(minutes=i)))
            if i == 0:
                first = opened.ticket.requester.contact_id
            elif i % 100 == 50 and first is not None:
                await change_ccs(s, tid, [first], [], AGENT, at + timedelta(minutes=i))
    assert first is not None
    return first


async def _median(conn: asyncpg.Connection, query: str, args: tuple[Any, ...],
                  runs: int) -> tuple[float, int, str]:
    """Median execution ms, rows on the page, and the plan's node types (outermost
    first), of ``runs`` EXPLAIN ANALYZE."""
    times: list[float] = []
    doc: Any = None
    for _ in range(runs):
        plan = await conn.fetchval(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}", *args)
        doc = plan if isinstance(plan, list) else json.loads(plan)
        times.append(float(doc[0]["Execution Time"]))
    nodes: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        nodes.append(node["Node Type"] + (f" {node['Index Name']}" if "Index Name" in node
                                          else f" {node['Relation Name']}"
                                          if "Relation Name" in node else ""))
        for child in node.get("Plans", ()):
            walk(child)

    walk(doc[0]["Plan"])
    return statistics.median(times), int(doc[0]["Plan"]["Actual Rows"]), " > ".join(nodes)


async def _measured(admin_url: str, tenant: Any, contact: uuid.UUID, query: str,
                    policy: str | None, runs: int) -> tuple[float, int, str]:
    """The list's figures as the runtime role acting as ``contact``, under ``policy``
    put in place for the measurement only (None: the migrated one)."""
    conn = await asyncpg.connect(admin_url)
    try:
        tx = conn.transaction()
        await tx.start()
        try:
            if policy is not None:
                await conn.execute(policy)
            await conn.execute(f"SET LOCAL ROLE {RUNTIME_USER}")
            assert await conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                       "WHERE rolname = current_user") is False
            await arm(conn, tenant, customer_actor(contact))
            return await _median(conn, query, (tenant, contact, None, None, PAGE), runs)
        finally:
            await tx.rollback()
    finally:
        await conn.close()


async def run(tickets: int, contacts: int, runs: int, prefix: str) -> None:
    with bench_server() as server:
        async with fresh_database(server, prefix) as db:
            tenant = (await create_tenant_as_operator(db.admin_url, "Bench")).tenant_id
            pool = await create_pool(db.runtime_url, min_size=1, max_size=2)
            try:
                store = EventStore(pool, keyring=Keyring(b"k" * 32))
                t0 = time.perf_counter()
                contact = await _seed(store, tenant, tickets, contacts)
                print(f"seeded {tickets} tickets in {time.perf_counter() - t0:.0f} s")
            finally:
                await pool.close()
            admin = await asyncpg.connect(db.admin_url)
            await admin.execute("VACUUM ANALYZE")
            await admin.close()
            before = await _measured(db.admin_url, tenant, contact, REQUESTER_ONLY,
                                     REQUESTER_POLICY, runs)
            after = await _measured(db.admin_url, tenant, contact, PORTAL["own_tickets"],
                                    None, runs)
            jsonb = await _measured(db.admin_url, tenant, contact, CONTAINMENT,
                                    CONTAINMENT_POLICY, runs)
    for name, (ms, n, plan) in (("requester only (before)", before),
                                ("ticket_contacts (0900)", after),
                                ("jsonb containment", jsonb)):
        print(f"{name}: {ms:.3f} ms, {n} rows: {plan}")
    report(f"portal ticket list, {tickets} tickets, {contacts} requesters", [
        {"figure": "ticket_contacts list ms (vs requester only)",
         "value": round(after[0], 3), "baseline": round(before[0], 3),
         "ratio": round(after[0] / before[0], 2), "target": "index probes only"},
        {"figure": "jsonb containment list ms (vs requester only)",
         "value": round(jsonb[0], 3), "baseline": round(before[0], 3),
         "ratio": round(jsonb[0] / before[0], 2), "target": "(the design replaced)"},
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tickets", type=int, default=2000)
    parser.add_argument("--contacts", type=int, default=100)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--db-prefix", default="hd_bench",
                        help="the name prefix of the database the run makes (and drops)")
    args = parser.parse_args()
    asyncio.run(run(args.tickets, args.contacts, args.runs, args.db_prefix))


if __name__ == "__main__":
    main()
