"""SLA warnings at the tenant's share of a target: once per clock cycle, through the
write path; rules act on them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.clock import ManualClock
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.values import Priority, SlaMetric
from handlers.sla_warnings import warn_tenant
from handlers.tenant_settings import ReplaceSettings, replace_settings
from handlers.ticket_state import load_ticket
from tests.support.desk import ACTOR, Desk
from tests.support.rules import by_rule, engine, make_rule

START = datetime(2026, 6, 1, 9, tzinfo=UTC)
AGENT = UUID(int=3)


async def test_a_warning_at_75_percent_once_and_a_rule_that_escalates_on_it(
    pool, store, make_tenant
):
    tenant = (await make_tenant("Warned")).tenant_id
    clock = ManualClock(START)
    desk = Desk(store, tenant, clock)
    await desk.hire(AGENT)
    assert await warn_tenant(store, tenant, START) == 0  # no share set: no warnings
    async with store.unit_of_work(tenant, ACTOR) as s:
        await replace_settings(s, ReplaceSettings(settings=dataclasses.replace(
            DEFAULT_SETTINGS, sla_warning_percent=75), at=START))
    eng = engine(pool, store)
    await eng.ensure_checkpoints()
    rule = await make_rule(store, tenant, START,
                           [{"field": "event", "op": "is", "value": "SlaWarning"},
                            {"field": "priority", "op": "is", "value": "urgent"}],
                           [{"type": "add_tags", "value": ["at-risk"]}])
    urgent = await desk.open(Priority.URGENT)  # first response due in 1 hour
    low = await desk.open(Priority.LOW)

    assert await warn_tenant(store, tenant, START + timedelta(minutes=44)) == 0
    at = START + timedelta(minutes=45, seconds=1)
    assert await warn_tenant(store, tenant, at) == 1
    assert await warn_tenant(store, tenant, at + timedelta(minutes=5)) == 0  # latched
    async with store.unit_of_work(tenant, readonly=True) as s:
        ticket = await load_ticket(s.conn, s.tenant_id, urgent)
        [row] = await s.conn.fetch("SELECT stream_id, data, actor_kind FROM events "
                                   "WHERE tenant_id = $1 AND type = 'SlaWarning'", tenant)
    assert ticket is not None
    assert ticket.clocks[SlaMetric.FIRST_RESPONSE].warned_at == at
    assert ticket.clocks[SlaMetric.RESOLUTION].warned_at is None
    assert row["stream_id"] == urgent and row["actor_kind"] == "system"
    assert row["data"]["metric"] == "first_response" and row["data"]["share"] == 75

    await eng.drain()
    assert [(e["stream_id"], e["type"]) for e in await by_rule(store, tenant, rule)] == [
        (urgent, "TagsChanged")]
    # By 18 hours: the urgent ticket's resolution (8 hours) and the low ticket's first
    # response (24 hours) pass 75%. The rule does not act on the low one: not urgent;
    # on the urgent one it changes nothing (the tag is there).
    assert await warn_tenant(store, tenant, START + timedelta(hours=18, minutes=1)) == 2
    await eng.drain()
    assert len(await by_rule(store, tenant, rule)) == 1
    async with store.unit_of_work(tenant, readonly=True) as s:
        low_ticket = await load_ticket(s.conn, s.tenant_id, low)
    assert low_ticket is not None and low_ticket.tags == ()
