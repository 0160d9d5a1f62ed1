"""A message's database work does not grow with its thread, and the search vectors a
message appends to are those a recomputation from the rows gives; against real
Postgres, as the runtime role.

The rows a command reads are counted by Postgres itself: ``pg_stat_xact_user_tables``
holds the current transaction's tuple reads per table, nested statements (functions,
triggers) included.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from domain.ids import MessageId, TicketId
from domain.ticket.commands import AddMessage, OpenTicket
from domain.values import Actor, ActorKind, Requester, Visibility
from eventstore.types import StoreActor
from handlers.tickets import execute
from projections.search import index_tickets

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")
CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="ann@example.com")
KEY = StoreActor("api_key", "test")

READS = """SELECT relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS n
             FROM pg_stat_xact_user_tables"""


async def _open(store, tenant, tid, at=T0):  # type: ignore[no-untyped-def]
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, OpenTicket(
            ticket_id=TicketId(tid), subject="Printer on fire", body="It smokes",
            requester=Requester(email="ann@example.com", name="Ann"), actor=CUSTOMER,
            at=at))


def _message(n: int, at: datetime, visibility: Visibility = Visibility.PUBLIC,
             body: str | None = None) -> AddMessage:
    return AddMessage(message_id=MessageId(uuid.uuid4()),
                      body=body or f"reply number {n} about the toner",
                      visibility=visibility, actor=AGENT, at=at)


async def _vectors_and_recomputed(store, tenant, tid):  # type: ignore[no-untyped-def]
    """A ticket's search vectors as its commands left them, then as a recomputation
    from its rows (``index_tickets``) makes them."""
    query = ("SELECT document, staff_document FROM search_documents "
             "WHERE tenant_id = $1 AND id = $2")
    async with store.unit_of_work(tenant) as s:
        written = await s.conn.fetchrow(query, tenant, tid)
        await index_tickets(s.conn, tenant, [tid])
        recomputed = await s.conn.fetchrow(query, tenant, tid)
    return written, recomputed


async def _reads_of_one_message(store, tenant, tid, at):  # type: ignore[no-untyped-def]
    """Rows read per table by one message command, its appends included (run at once,
    not deferred, so they can be counted before the commit)."""
    async with store.unit_of_work(tenant, KEY) as s:
        before = {r["relname"]: r["n"] for r in await s.conn.fetch(READS)}
        await execute(s, tid, _message(0, at))
        await s.flush()
        after = {r["relname"]: r["n"] for r in await s.conn.fetch(READS)}
    return {name: n - before.get(name, 0) for name, n in after.items()
            if n - before.get(name, 0)}


async def test_a_message_reads_as_many_rows_on_a_long_thread_as_on_a_short_one(store,
                                                                                make_tenant):
    tenant = (await make_tenant()).tenant_id
    short, long_ = uuid.uuid4(), uuid.uuid4()
    await _open(store, tenant, short)
    await _open(store, tenant, long_)
    at = T0 + timedelta(minutes=1)
    async with store.unit_of_work(tenant, KEY) as s:
        # Both past their first reply, so the message moves the same SLA timers.
        await execute(s, short, _message(0, at))
        for n in range(300):
            await execute(s, long_, _message(n, at))
    await store.notifier.flush()
    later = at + timedelta(minutes=1)
    on_short = await _reads_of_one_message(store, tenant, short, later)
    on_long = await _reads_of_one_message(store, tenant, long_, later)
    # Every table, the messages and search rows above all, is read alike: none of the
    # 300 earlier messages is read again (the recomputation read them all).
    assert on_long == on_short
    assert on_short.get("messages", 0) <= 1


async def test_vectors_appended_message_by_message_equal_a_recomputation(store, make_tenant):
    tenant = (await make_tenant()).tenant_id
    async with store.unit_of_work(tenant) as s:
        await s.conn.execute("SELECT 1")  # the tenant exists
    tid = uuid.uuid4()
    await _open(store, tenant, tid)
    at = T0 + timedelta(minutes=1)
    bodies = [("The toner is empty", Visibility.PUBLIC),
              ("Customer sounds upset; escalate", Visibility.INTERNAL),
              ("We shipped a new toner", Visibility.PUBLIC),
              ("", Visibility.PUBLIC), ("!!! ... ???", Visibility.INTERNAL),
              ("toner toner toner", Visibility.PUBLIC)]
    for n, (body, visibility) in enumerate(bodies):
        async with store.unit_of_work(tenant, KEY) as s:
            await execute(s, tid, _message(n, at + timedelta(seconds=n), visibility, body))
    appended, recomputed = await _vectors_and_recomputed(store, tenant, tid)
    async with store.unit_of_work(tenant) as s:
        # The words of a note are found by staff only.
        public_escalate = await s.conn.fetchval(
            "SELECT document @@ 'escalate'::tsquery FROM search_documents WHERE id = $1", tid)
        staff_escalate = await s.conn.fetchval(
            "SELECT staff_document @@ 'escalate'::tsquery FROM search_documents WHERE id = $1",
            tid)
    assert appended["document"] == recomputed["document"]
    assert appended["staff_document"] == recomputed["staff_document"]
    assert "toner" in appended["document"] and "escalate" not in appended["document"]
    assert (public_escalate, staff_escalate) == (False, True)


async def test_a_new_ticket_indexed_from_its_values_equals_a_recomputation(store, make_tenant):
    tenant = (await make_tenant()).tenant_id
    tid = uuid.uuid4()
    async with store.unit_of_work(tenant, KEY) as s:
        await execute(s, tid, OpenTicket(
            ticket_id=TicketId(tid), subject="The printers are on fire",
            body="Smoke comes out of the trays, and the toner smells", tags=("hardware", "urgent"),
            requester=Requester(email="Ann.Lee@Example.com", name="Ann Lee"), actor=CUSTOMER,
            at=T0))
    indexed, recomputed = await _vectors_and_recomputed(store, tenant, tid)
    assert indexed["document"] == recomputed["document"]
    assert indexed["staff_document"] == recomputed["staff_document"]
    assert "toner" in indexed["document"] and "hardware" in indexed["document"]
