"""Analytics by ticket field: a scripted two days, and the figures worked out by hand.

Fields: plan (dropdown free/pro), areas (multiselect billing/login), vip (checkbox),
order_no (number: does not group).

  Mon 2026-06-01  09:00 T1 opened, plan free, areas [billing], vip
                  10:00 T2 opened, plan pro, areas [billing, login]
                  11:00 T3 opened, no fields
                  12:00 T1 solved (plan free then)
  Tue 2026-06-02  09:00 T1 plan -> pro
                  10:00 T2 solved (pro)
                  11:00 T3 plan -> free; 12:00 T3 solved (free)
                  13:00 T1 reopened (pro then)

Summary groups by the value each ticket holds now (as by its priority now): plan pro
T1, T2; free T3. Volume splits each day's counts by the value held at the event's time
(as by the priority then).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from api.app import create_app
from api.config import ProcessSettings
from domain.clock import ManualClock
from domain.field_definitions import DefineField
from domain.fields import FieldOption, FieldType
from domain.ids import TicketId
from domain.ticket.commands import ChangeFields, OpenTicket
from domain.values import Requester, Role, TicketState
from eventstore.types import StoreActor
from handlers.api_keys import IssueKey, issue_key
from handlers.ticket_fields import define_field
from projections.projector import Projector
from tests.support.desk import Desk, agent
from tests.support.http import asgi_client

ACTOR = StoreActor("operator", "test")
A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
FIELDS = [
    DefineField(key="plan", title="Plan", type=FieldType.DROPDOWN,
                at=datetime(2026, 5, 1, tzinfo=UTC),
                options=(FieldOption(value="free", title="Free"),
                         FieldOption(value="pro", title="Pro"))),
    DefineField(key="areas", title="Areas", type=FieldType.MULTISELECT,
                at=datetime(2026, 5, 1, tzinfo=UTC),
                options=(FieldOption(value="billing", title="Billing"),
                         FieldOption(value="login", title="Login"))),
    DefineField(key="vip", title="VIP", type=FieldType.CHECKBOX,
                at=datetime(2026, 5, 1, tzinfo=UTC)),
    DefineField(key="order_no", title="Order", type=FieldType.NUMBER,
                at=datetime(2026, 5, 1, tzinfo=UTC)),
]


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 6, day, hour, tzinfo=UTC)


async def open_with(desk: Desk, fields: dict[str, Any]) -> uuid.UUID:
    tid = TicketId(uuid.uuid4())
    await desk.run(tid, OpenTicket(ticket_id=tid, subject="Help", body="It broke",
                                   requester=Requester(email="c@example.com"),
                                   actor=agent(A1), at=desk.clock.now(), fields=fields))
    return tid


async def set_fields(desk: Desk, tid: uuid.UUID, fields: dict[str, Any]) -> None:
    await desk.run(tid, ChangeFields(values=fields, actor=agent(A1), at=desk.clock.now()))


@pytest.fixture
async def scenario(pool: Any, store: Any, make_tenant: Any, db: Any) -> dict[str, Any]:
    tenant = await make_tenant("Fields")
    clock = ManualClock(at(1, 9))
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        for command in FIELDS:
            await define_field(s, command)
        analyst = await issue_key(s, IssueKey(name="analyst", role=Role.ANALYST,
                                              at=clock.now()))
    desk = Desk(store, tenant.tenant_id, clock)
    await desk.hire(A1)
    t1 = await open_with(desk, {"plan": "free", "areas": ["billing"], "vip": True})
    clock.set(at(1, 10))
    t2 = await open_with(desk, {"plan": "pro", "areas": ["billing", "login"]})
    clock.set(at(1, 11))
    t3 = await open_with(desk, {})
    clock.set(at(1, 12))
    await desk.state(t1, TicketState.SOLVED, A1)
    clock.set(at(2, 9))
    await set_fields(desk, t1, {"plan": "pro"})
    clock.set(at(2, 10))
    await desk.state(t2, TicketState.SOLVED, A1)
    clock.set(at(2, 11))
    await set_fields(desk, t3, {"plan": "free"})
    clock.set(at(2, 12))
    await desk.state(t3, TicketState.SOLVED, A1)
    clock.set(at(2, 13))
    await desk.state(t1, TicketState.OPEN, A1)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    return {"analyst": analyst.secret, "clock": clock,
            "settings": ProcessSettings(database_url=db.runtime_url)}


async def get(scenario: dict[str, Any], path: str, **params: str) -> Any:
    app = create_app(scenario["settings"], clock=scenario["clock"])
    async with asgi_client(app) as client:
        return await client.get(path, params={"from": "2026-06-01", "to": "2026-06-02",
                                              **params},
                                headers={"Authorization": f"Bearer {scenario['analyst']}"})


async def test_summary_groups_by_the_value_each_ticket_holds_now(scenario):
    by_plan = (await get(scenario, "/v1/analytics/summary", group_by="field.plan")).json()
    assert by_plan["group_by"] == "field.plan" and by_plan["total"]["tickets"] == 3
    assert {g["key"]: (g["tickets"], g["solved"]) for g in by_plan["groups"]} == {
        "free": (1, 1), "pro": (2, 1)}  # T1 reopened: not solved
    by_areas = (await get(scenario, "/v1/analytics/summary", group_by="field.areas")).json()
    assert {g["key"]: g["tickets"] for g in by_areas["groups"]} == {
        "billing": 2, "login": 1, "none": 1}
    by_vip = (await get(scenario, "/v1/analytics/summary", group_by="field.vip")).json()
    assert {g["key"]: g["tickets"] for g in by_vip["groups"]} == {"true": 1, "none": 2}


def counts(split: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    return {value: (c["created"], c["solved"], c["reopened"], c["breached"])
            for value, c in split.items()}


async def test_volume_splits_by_the_value_held_at_the_events_time(scenario):
    plain = (await get(scenario, "/v1/analytics/volume")).json()
    assert plain["group_by"] is None and all(d["by_field"] is None for d in plain["days"])
    by_plan = (await get(scenario, "/v1/analytics/volume", group_by="field.plan")).json()
    days = {d["day"]: d for d in by_plan["days"]}
    assert counts(days["2026-06-01"]["by_field"]) == {"free": (1, 1, 0, 0),
                                                      "pro": (1, 0, 0, 0)}
    assert counts(days["2026-06-02"]["by_field"]) == {"free": (0, 1, 0, 0),
                                                      "pro": (0, 1, 1, 0)}
    assert (days["2026-06-01"]["created"], days["2026-06-02"]["solved"]) == (3, 2)
    by_areas = (await get(scenario, "/v1/analytics/volume", group_by="field.areas")).json()
    days = {d["day"]: d for d in by_areas["days"]}
    assert counts(days["2026-06-01"]["by_field"]) == {"billing": (2, 1, 0, 0),
                                                      "login": (1, 0, 0, 0)}
    assert counts(days["2026-06-02"]["by_field"]) == {"billing": (0, 1, 1, 0),
                                                      "login": (0, 1, 0, 0)}


@pytest.mark.parametrize(("path", "group_by"), [
    ("/v1/analytics/summary", "field.order_no"), ("/v1/analytics/summary", "field.nope"),
    ("/v1/analytics/summary", "field.Plan"), ("/v1/analytics/volume", "priority"),
    ("/v1/analytics/volume", "field.order_no"), ("/v1/analytics/volume", "field."),
])
async def test_a_field_that_does_not_group_is_a_400(scenario, path, group_by):
    r = await get(scenario, path, group_by=group_by)
    assert r.status_code == 400, r.text
    assert "group_by" in r.text
