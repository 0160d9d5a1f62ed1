"""Satisfaction in the analytics summary: figures recounted by hand, for every
``group_by``, from the ticket rows and from the summary cells alike, and again after
a rebuild of the projection.

Agents A1 (group G1) and A2 (group G2). Monday 2026-06-01 and Tuesday 2026-06-02.
A dropdown field ``plan``: R1 and R6 pro, R2 and R3 free, R4 and R5 none.

  R1 urgent/email  Mon, A1 in G1; solved; rated bad, then good (the second replaces
                   the first): good.
  R2 normal/email  Mon, A1 in G1; solved; rated bad.
  R6 normal/chat   Mon, unassigned; solved; rated good; closed (closing keeps it).
  R3 normal/portal Tue, A2 in G2; solved; never rated.
  R4 high/chat     Tue, A2 in G2; solved; rated good; then the customer writes and it
                   reopens: not solved now, so neither rateable nor counted.
  R5 low/email     Tue, unassigned; open.

Score = good / rated, response rate = rated / solved. Total: solved 4 (R1 R2 R3 R6),
rated 3 (R1 R2 R6), good 2 (R1 R6): score 0.6667, response rate 0.75.
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
from domain.group import CreateGroup
from domain.ids import AgentId, GroupId
from domain.ticket.commands import Assign, ChangeFields, RateSatisfaction
from domain.values import Priority, Rating, Source, TicketState
from eventstore.types import StoreActor
from handlers import groups
from handlers.ticket_fields import define_field
from projections import analytics_reads as reads
from projections.admin import rebuild
from projections.projector import Projector
from tests.support.desk import CUSTOMER, Desk, agent
from tests.support.http import asgi_client

A1 = uuid.UUID("00000000-0000-0000-0000-0000000000a1")
A2 = uuid.UUID("00000000-0000-0000-0000-0000000000a2")
G1 = uuid.UUID("00000000-0000-0000-0000-0000000000f1")
G2 = uuid.UUID("00000000-0000-0000-0000-0000000000f2")
ACTOR = StoreActor("operator", "test")


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 6, day, hour, minute, tzinfo=UTC)


async def rate(desk: Desk, tid: uuid.UUID, rating: Rating) -> None:
    await desk.run(tid, RateSatisfaction(rating=rating, via="portal", actor=CUSTOMER,
                                         at=desk.clock.now()))


async def assign(desk: Desk, tid: uuid.UUID, to: uuid.UUID, group: uuid.UUID) -> None:
    await desk.run(tid, Assign(agent_id=AgentId(to), group_id=GroupId(group), set_group=True,
                               group_members=frozenset({AgentId(to)}), actor=agent(to),
                               at=desk.clock.now()))


async def plan(desk: Desk, tid: uuid.UUID, value: str) -> None:
    await desk.run(tid, ChangeFields(values={"plan": value}, actor=agent(A1),
                                     at=desk.clock.now()))


async def play(desk: Desk, clock: ManualClock) -> dict[str, uuid.UUID]:
    clock.set(at(1, 9))
    r1 = await desk.open(Priority.URGENT, Source.EMAIL)
    r2 = await desk.open(Priority.NORMAL, Source.EMAIL)
    r6 = await desk.open(Priority.NORMAL, Source.CHAT)
    await assign(desk, r1, A1, G1)
    await assign(desk, r2, A1, G1)
    for t, value in ((r1, "pro"), (r2, "free"), (r6, "pro")):
        await plan(desk, t, value)
    clock.set(at(1, 10))
    for t in (r1, r2, r6):
        await desk.state(t, TicketState.SOLVED, A1)
    clock.set(at(1, 11))
    await rate(desk, r1, Rating.BAD)
    await rate(desk, r2, Rating.BAD)
    await rate(desk, r6, Rating.GOOD)
    clock.set(at(1, 12))
    await rate(desk, r1, Rating.GOOD)
    await desk.state(r6, TicketState.CLOSED, A1)
    clock.set(at(2, 9))
    r3 = await desk.open(Priority.NORMAL, Source.PORTAL)
    r4 = await desk.open(Priority.HIGH, Source.CHAT)
    await desk.open(Priority.LOW, Source.EMAIL)
    await assign(desk, r3, A2, G2)
    await plan(desk, r3, "free")
    await assign(desk, r4, A2, G2)
    clock.set(at(2, 10))
    await desk.state(r3, TicketState.SOLVED, A2)
    await desk.state(r4, TicketState.SOLVED, A2)
    clock.set(at(2, 11))
    await rate(desk, r4, Rating.GOOD)
    clock.set(at(2, 12))
    await desk.customer(r4)
    return {"r1": r1, "r2": r2, "r3": r3, "r4": r4, "r6": r6}


# (rated, good, score, response rate)
TOTAL = (3, 2, 0.6667, 0.75)
WANT: dict[str, dict[str, tuple[int, int, float | None, float | None]]] = {
    "priority": {"urgent": (1, 1, 1.0, 1.0), "normal": (2, 1, 0.5, 0.6667),
                 "high": (0, 0, None, None), "low": (0, 0, None, None)},
    "source": {"email": (2, 1, 0.5, 1.0), "portal": (0, 0, None, 0.0),
               "chat": (1, 1, 1.0, 1.0)},
    "assignee": {str(A1): (2, 1, 0.5, 1.0), str(A2): (0, 0, None, 0.0),
                 "none": (1, 1, 1.0, 1.0)},
    "group": {str(G1): (2, 1, 0.5, 1.0), str(G2): (0, 0, None, 0.0),
              "none": (1, 1, 1.0, 1.0)},
    "day": {"2026-06-01": (3, 2, 0.6667, 1.0), "2026-06-02": (0, 0, None, 0.0)},
    "organization": {"none": TOTAL},
    "field.plan": {"pro": (2, 2, 1.0, 1.0), "free": (1, 0, 0.0, 0.5),
                   "none": (0, 0, None, None)},
}


def figures(stats: dict[str, Any]) -> tuple[Any, ...]:
    s = stats["satisfaction"]
    return (s["rated"], s["good"], s["score"], s["response_rate"])


async def summaries(client: Any, auth: dict[str, str], monkeypatch: pytest.MonkeyPatch
                    ) -> dict[tuple[str, int], Any]:
    """Every group_by, from the ticket rows and then from the cells."""
    out: dict[tuple[str, int], Any] = {}
    for exact_up_to in (10**9, 0):
        monkeypatch.setattr(reads, "EXACT_UP_TO", exact_up_to)
        for group_by in WANT:
            response = await client.get("/v1/analytics/summary", headers=auth, params={
                "from": "2026-06-01", "to": "2026-06-02", "group_by": group_by})
            assert response.status_code == 200, response.text
            body = response.json()
            assert body["percentiles"]["exact"] is (
                exact_up_to > 0 or group_by in ("group", "organization")), group_by
            out[(group_by, exact_up_to)] = (
                figures(body["total"]), {g["key"]: figures(g) for g in body["groups"]})
    return out


async def test_satisfaction_score_and_response_rate_match_the_hand_recount(
        pool: Any, store: Any, make_tenant: Any, db: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    tenant = await make_tenant("Ratings")
    clock = ManualClock(at(1, 8))
    desk = Desk(store, tenant.tenant_id, clock)
    await desk.hire(A1, A2)
    async with store.unit_of_work(tenant.tenant_id, ACTOR) as s:
        for gid, member in ((G1, A1), (G2, A2)):
            await groups.create_group(s, CreateGroup(
                group_id=GroupId(gid), name=f"Group {member}", members=(AgentId(member),),
                at=clock.now()))
        await define_field(s, DefineField(
            key="plan", title="Plan", type=FieldType.DROPDOWN, at=clock.now(),
            options=(FieldOption(value="free", title="Free"),
                     FieldOption(value="pro", title="Pro"))))
    t = await play(desk, clock)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()

    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('app.tenant_id', $1, true)",
                           str(tenant.tenant_id))
        rows = {r["ticket_id"]: r["rating"]
                for r in await conn.fetch("SELECT ticket_id, rating FROM analytics_tickets")}
    assert {name: rows[tid] for name, tid in t.items()} == {
        "r1": "good", "r2": "bad", "r3": None, "r4": "good", "r6": "good"}

    app = create_app(ProcessSettings(database_url=db.runtime_url), clock=clock)
    auth = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    async with asgi_client(app) as client:
        before = await summaries(client, auth, monkeypatch)
        for (group_by, exact_up_to), (total, groups_got) in before.items():
            assert total == TOTAL, (group_by, exact_up_to)
            assert groups_got == WANT[group_by], (group_by, exact_up_to)

        await rebuild(projector, "analytics", tenant.tenant_id)
        assert await summaries(client, auth, monkeypatch) == before
