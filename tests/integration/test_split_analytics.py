"""Analytics of a ticket split off another: it is a ticket created at the split, its
first reply is the first agent reply after the split, counted in business time on the
calendar of the policy its clocks started on, even when the projector saw the split in
an earlier batch than the reply (``first_reply_bases`` reads the split as an opening).

Business hours Mon-Fri 09:00-17:00 UTC; Monday is 2026-06-01. The source opens Monday
09:00; the customer writes at 15:00; at 16:00 an agent splits that message off; the
agent answers the new ticket Tuesday 10:00: 18 hours of calendar time, 2 of business
time (16-17 Monday, 9-10 Tuesday)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.ids import TicketId
from domain.sla_calendar import CreateCalendar
from domain.target_policy import CreatePolicy
from domain.ticket.commands import SplitTicket
from domain.workflow_events import PolicyTargets
from eventstore.types import StoreActor
from handlers import sla_policies as calendars
from handlers.ticket_links import split_ticket
from projections.projector import Projector
from tests.support.desk import Desk, agent

HOUR = 3_600_000
HOURS = {"weekly": {str(d): [["09:00", "17:00"]] for d in range(5)}, "timezone": "UTC"}
A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
ACTOR = StoreActor("operator", "test")


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 6, day, hour, tzinfo=UTC)


async def _rows(pool: Any, tenant_id: Any) -> dict[Any, Any]:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(tenant_id))
        return {r["ticket_id"]: r for r in await conn.fetch("SELECT * FROM analytics_tickets")}


async def test_a_split_off_ticket_is_measured_from_the_split(pool, store, make_tenant):
    tenant = await make_tenant("Splits")
    clock = ManualClock(at(1, 8))
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        office = await calendars.create_calendar(s, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Office", hours=Calendar.model_validate(HOURS),
            at=clock.now()))
        await calendars.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, calendar_id=office.id,
            targets=PolicyTargets(first_reply_ms=8 * HOUR), at=clock.now()))
    desk = Desk(store, tenant.tenant_id, clock)
    await desk.hire(A1)
    clock.set(at(1, 9))
    source = await desk.open()
    clock.set(at(1, 15))
    await desk.customer(source)
    clock.set(at(1, 16))
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        rows = await s.conn.fetch("SELECT id FROM messages WHERE ticket_id = $1 "
                                  "ORDER BY created_at", source)
        new_id = TicketId(uuid.uuid4())
        done = await split_ticket(s, source, SplitTicket(
            ticket_id=new_id, message_ids=(rows[-1]["id"],), actor=agent(A1),
            at=clock.now()))
    assert done.other.ticket.id == new_id
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()  # the split in a batch of its own, before the reply
    clock.set(at(2, 10))
    await desk.reply(new_id, A1)
    await projector.drain()

    row = (await _rows(pool, tenant.tenant_id))[new_id]
    assert row["created_at"] == at(1, 16)
    assert row["first_reply_at"] == at(2, 10)
    assert row["first_reply_ms"] == 18 * HOUR
    assert row["first_reply_business_ms"] == 2 * HOUR
    assert row["priority"] == "normal" and row["source"] == "email"
