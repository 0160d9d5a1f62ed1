"""The summary from the summary cells agrees with the exact summary over the ticket rows:
the same groups and counts, and every median and p90 within the stated relative error.
The cells do not depend on how the events were batched, and ``helpdesk migrate`` fills
them for analytics that predate them."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, date, datetime
from typing import Any

import asyncpg
import pytest

from domain.clock import ManualClock
from domain.errors import DomainError
from domain.field_definitions import DefineField
from domain.fields import FieldOption, FieldType
from domain.ids import TicketId
from domain.ticket.commands import ChangeFields, OpenTicket
from domain.values import Priority, Requester, Source, TicketState, Visibility
from eventstore.types import StoreActor
from handlers.ticket_fields import define_field
from handlers.upgrades import upgrade
from projections import analytics_cells as cells
from projections import analytics_reads as reads
from projections.projector import Projector
from tests.support.desk import Desk, agent
from tests.support.readmodels import dump, refold_alone

ACTOR = StoreActor("operator", "test")
AGENTS = tuple(uuid.UUID(int=i) for i in range(1, 4))
START = datetime(2026, 3, 1, 8, tzinfo=UTC)
PLANS = ("free", "pro", "team")
AREAS = ("billing", "login", "api")


def _options(values: tuple[str, ...]) -> tuple[FieldOption, ...]:
    return tuple(FieldOption(value=v, title=v.title()) for v in values)


FIELDS = (
    DefineField(key="plan", title="Plan", type=FieldType.DROPDOWN, options=_options(PLANS),
                at=datetime(2026, 1, 1, tzinfo=UTC)),
    DefineField(key="areas", title="Areas", type=FieldType.MULTISELECT,
                options=_options(AREAS), at=datetime(2026, 1, 1, tzinfo=UTC)),
    DefineField(key="vip", title="VIP", type=FieldType.CHECKBOX,
                at=datetime(2026, 1, 1, tzinfo=UTC)),
)


def _fields(rng: random.Random) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if rng.random() < 0.8:
        values["plan"] = rng.choice(PLANS)
    if rng.random() < 0.6:
        values["areas"] = rng.sample(AREAS, rng.randint(1, 3))
    if rng.random() < 0.5:
        values["vip"] = rng.random() < 0.3
    return values


async def _traffic(desk: Desk, rng: random.Random, commands: int) -> None:
    """Tickets over some ten weeks with fields, replies, solves, reopens, priority and
    field changes; durations from minutes to weeks."""
    await desk.hire(*AGENTS)
    tickets: list[uuid.UUID] = []
    for _ in range(commands):
        desk.clock.advance(minutes=rng.randint(1, 600))
        roll = rng.random()
        if not tickets or roll < 0.3:
            new = TicketId(uuid.uuid4())
            await desk.run(new, OpenTicket(
                ticket_id=new, subject="Help", body="It broke",
                requester=Requester(email="c@example.com"),
                priority=rng.choice(list(Priority)), source=rng.choice(list(Source)),
                actor=agent(AGENTS[0]), at=desk.clock.now(), fields=_fields(rng)))
            tickets.append(new)
            continue
        tid = rng.choice(tickets)
        who = rng.choice(AGENTS)
        try:
            if roll < 0.5:
                await desk.reply(tid, who, rng.choice(list(Visibility)))
            elif roll < 0.6:
                await desk.assign(tid, rng.choice(AGENTS), who)
            elif roll < 0.68:
                await desk.priority(tid, rng.choice(list(Priority)), who)
            elif roll < 0.76:
                changed = _fields(rng)
                for key in ("plan", "areas", "vip"):
                    if key not in changed and rng.random() < 0.2:
                        changed[key] = None
                await desk.run(tid, ChangeFields(values=changed, actor=agent(who),
                                                 at=desk.clock.now()))
            else:
                await desk.state(tid, rng.choice(
                    [TicketState.SOLVED, TicketState.SOLVED, TicketState.OPEN,
                     TicketState.PENDING]), who)
        except DomainError:
            pass


@pytest.fixture
async def desk(pool: Any, store: Any, make_tenant: Any) -> Desk:
    tenant = await make_tenant("Cells")
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        for command in FIELDS:
            await define_field(s, command)
    desk = Desk(store, tenant.tenant_id, ManualClock(START))
    await _traffic(desk, random.Random(19), 700)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    return desk


GROUPINGS = (None, "priority", "source", "assignee", "day", "field.plan", "field.areas",
             "field.vip")
DURATIONS = ("first_reply_ms", "first_reply_business_ms", "resolution_ms",
             "resolution_open_ms")


def _close(cell: dict[str, Any], exact: dict[str, Any]) -> None:
    for name in DURATIONS:
        for p in ("median", "p90"):
            got, want = cell[name][p], exact[name][p]
            assert (got is None) == (want is None), (name, p, got, want)
            if want is not None:
                assert abs(got - want) <= cells.RELATIVE_ERROR * want, (name, p, got, want)
    assert {k: v for k, v in cell.items() if k not in DURATIONS} == {
        k: v for k, v in exact.items() if k not in DURATIONS}


async def test_the_summary_from_cells_agrees_with_the_exact_one_within_the_bound(
        desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    ranges = ((date(2026, 3, 1), date(2026, 6, 30)), (date(2026, 3, 7), date(2026, 4, 20)),
              (date(2026, 4, 2), date(2026, 4, 2)))
    some_estimate_differs = False
    for first, last in ranges:
        for group_by in GROUPINGS:
            monkeypatch.setattr(reads, "EXACT_UP_TO", 10**9)
            exact = await reads.summary(desk.store, desk.tenant_id, first, last, group_by)
            monkeypatch.setattr(reads, "EXACT_UP_TO", 0)
            estimated = await reads.summary(desk.store, desk.tenant_id, first, last, group_by)
            assert exact["percentiles"] == {"exact": True, "relative_error": 0.0}
            if exact["total"]["tickets"] == 0:
                continue
            assert estimated["percentiles"] == {"exact": False,
                                                "relative_error": cells.RELATIVE_ERROR}
            _close(estimated["total"], exact["total"])
            assert [g["key"] for g in estimated["groups"]] == [g["key"] for g in exact["groups"]]
            for e, x in zip(estimated["groups"], exact["groups"], strict=True):
                _close(e, x)
            some_estimate_differs |= estimated["total"] != exact["total"]
    assert some_estimate_differs, "the fixture's durations are not all exact buckets"
    total = (await reads.summary(desk.store, desk.tenant_id, date(2026, 3, 1),
                                 date(2026, 6, 30), None))["total"]
    assert total["tickets"] > 150 and total["resolution_ms"]["median"] is not None


async def test_cells_do_not_depend_on_batches_and_migrate_fills_missing_ones(
        desk: Desk, pool: Any, db: Any) -> None:
    folded = await dump(db.admin_url)
    assert folded["analytics_summary_cells"]
    await refold_alone(pool, [desk.tenant_id], batch_size=1)
    assert await dump(db.admin_url) == folded

    admin = await asyncpg.connect(db.admin_url)
    try:
        # As if the analytics had been built before the cells existed.
        await admin.execute("DELETE FROM analytics_summary_cells")
    finally:
        await admin.close()
    step = "analytics summary cells filled from ticket rows"
    tickets = len(folded["analytics_tickets"])
    assert (await upgrade(db.admin_url))[step] == tickets
    assert await dump(db.admin_url) == folded
    assert (await upgrade(db.admin_url))[step] == 0

    # As if the rows had been projected before staff notes were counted (migration
    # 0651): migrate counts them from the events and the cells' deflections anew.
    # staff_notes, before 0750's six, 0820's rating and 0941's three
    assert any(r[-11] for r in folded["analytics_tickets"])
    # deflected, before 0750's five, 0820's two and 0941's three
    assert any(r[-11] for r in folded["analytics_summary_cells"])
    admin = await asyncpg.connect(db.admin_url)
    try:
        await admin.execute("UPDATE analytics_tickets SET staff_notes = NULL")
        await admin.execute("UPDATE analytics_summary_cells SET deflected = 0")
    finally:
        await admin.close()
    notes = "analytics staff notes counted from ticket events"
    changed = await upgrade(db.admin_url)
    assert (changed[notes], changed[step]) == (tickets, tickets)
    assert await dump(db.admin_url) == folded
    assert (await upgrade(db.admin_url))[notes] == 0
