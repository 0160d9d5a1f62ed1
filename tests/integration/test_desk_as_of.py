"""The whole desk as of any seq: ``GET /v1/tickets?as_of_seq=N`` equals a replay of
the tenant's events up to N, ticket by ticket, for random seqs over a generated desk
(``TICKETS``), under the list's filters and across its pages; the backlog as of a seq
counts what the replay has open; the kept versions are isolated per tenant and
hidden from customers, as the runtime role.

The desk is generated fast but through the write path's own parts: commands decided
by the domain, applied by the inline projection (which keeps each version) and
appended, 400 commands per unit of work, so the trigger on ``events`` stamps the
versions' seqs as it does for the API's commands.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from api.app import create_app
from domain.errors import DomainError
from domain.ids import AgentId, MessageId, TicketId
from domain.mapper import from_stored, to_stored
from domain.tenant_settings import TenantSettings
from domain.ticket import Ticket, evolve
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangePriority,
    ChangeState,
    ChangeTags,
    OpenTicket,
)
from domain.ticket.decide import decide
from domain.values import Actor, ActorKind, Priority, Requester, Source, TicketState, Visibility
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from projections.inline import PendingEvent, apply_inline
from projections.reads import TicketFilters
from projections.ticket_versions import list_as_of
from projections.views import ticket_json
from tests.e2e.conftest import app_settings, asgi_client, auth
from tests.support.desk import ACTOR

TICKETS, COMMANDS = 2000, 500
"""The generated desk: 2,000 tickets and 500 more commands (6.6 s for the test on the
shared 2-core machine at a load average of 0.8; it took 84 s at a load of 12)."""
AGENTS = tuple(uuid.UUID(int=i) for i in range(1, 5))
TAGS = ("billing", "bug", "vip", "later")
CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="c@example.com")


def _command(rng: random.Random, state: Ticket | None, tid: TicketId, at: datetime) -> Any:
    if state is None:
        return OpenTicket(ticket_id=tid, subject=f"s{rng.randrange(10**6)}", body="b",
                          requester=Requester(email=f"c{rng.randrange(50)}@example.com"),
                          priority=rng.choice(list(Priority)), source=rng.choice(list(Source)),
                          tags=tuple(rng.sample(TAGS, rng.randrange(3))), actor=CUSTOMER, at=at)
    who = Actor(kind=ActorKind.AGENT, id=str(rng.choice(AGENTS)))
    roll = rng.random()
    if roll < 0.3:
        return AddMessage(message_id=MessageId(uuid.uuid4()), body="m", at=at,
                          visibility=rng.choice(list(Visibility)),
                          actor=rng.choice([who, CUSTOMER]))
    if roll < 0.5:
        return Assign(agent_id=AgentId(rng.choice(AGENTS)), actor=who, at=at)
    if roll < 0.6:
        return ChangePriority(priority=rng.choice(list(Priority)), actor=who, at=at)
    if roll < 0.85:
        return ChangeState(to=rng.choice(list(TicketState)), actor=who, at=at)
    return ChangeTags(add=(rng.choice(TAGS),), remove=(rng.choice(TAGS),), actor=who, at=at)


async def generate(store: EventStore, tenant_id: Any, rng: random.Random, tickets: int,
                   commands: int, batch: int = 400) -> None:
    """``tickets`` opened and ``commands`` more on them (refused ones skipped), in
    units of work of ``batch`` commands, each as a command's own writes and appends."""
    policy = TenantSettings().policy
    states: dict[uuid.UUID, Ticket] = {}
    opened: list[TicketId] = []
    at = datetime(2026, 1, 1, tzinfo=UTC)
    rest = ["open"] * (tickets - 1) + ["more"] * commands
    rng.shuffle(rest)
    plan = ["open", *rest]
    for start in range(0, len(plan), batch):
        before = dict(states)
        streams: dict[uuid.UUID, list[PendingEvent]] = {}
        for kind in plan[start:start + batch]:
            at += timedelta(seconds=rng.randint(1, 600))
            tid = TicketId(uuid.uuid4()) if kind == "open" else rng.choice(opened)
            state = states.get(tid)
            try:
                events = decide(_command(rng, state, tid, at), state, policy)
            except DomainError:
                continue
            if not events:
                continue
            mine = streams.setdefault(tid, [])
            for event in events:
                version = (0 if state is None else state.version) + 1
                type_, schema, data = to_stored(event)
                mine.append(PendingEvent(tid, version, type_, schema, data))
                state = evolve(state, event)
            assert state is not None
            if tid not in states:
                opened.append(tid)
            states[tid] = state
        async with store.unit_of_work(tenant_id, ACTOR) as s:
            s.deferring = True
            pending = [e for events in streams.values() for e in events]
            await apply_inline(s.conn, tenant_id, pending, write=s.write,
                               known={t: before[t] for t in streams if t in before})
            for tid, events in streams.items():
                await s.append(tid, events[0].version - 1,
                               [NewEvent(e.type, e.data, e.schema_version) for e in events])


async def replay(store: EventStore, tenant_id: Any, seqs: set[int]
                 ) -> tuple[dict[int, dict[str, dict[str, Any]]], int]:
    """Each ticket's document after folding the events up to each of ``seqs``, and
    the head."""
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        rows = await s.conn.fetch("SELECT seq, stream_id, type, schema_version, data "
                                  "FROM events ORDER BY seq")
    states: dict[uuid.UUID, Ticket] = {}
    at: dict[int, dict[str, dict[str, Any]]] = {}

    def snap() -> dict[str, dict[str, Any]]:
        return {str(k): orjson.loads(ticket_json(t)) for k, t in states.items()}

    if 0 in seqs:
        at[0] = {}
    for r in rows:
        if r["type"] in ("TicketOpened",) or r["stream_id"] in states:
            states[r["stream_id"]] = evolve(states.get(r["stream_id"]), from_stored(
                r["type"], r["schema_version"], r["data"]))
        if r["seq"] in seqs:
            at[r["seq"]] = snap()
    return at, rows[-1]["seq"] if rows else 0


async def as_of_list(http: Any, key: str, seq: int, limit: int = 100,
                     **filters: Any) -> list[dict[str, Any]]:
    """Every page of the list as of ``seq``."""
    out: list[dict[str, Any]] = []
    cursor = None
    while True:
        params = {"as_of_seq": seq, "limit": limit, **filters,
                  **({"cursor": cursor} if cursor else {})}
        r = await http.get("/v1/tickets", params=params, headers=auth(key))
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["as_of_seq"] == seq
        out += body["data"]
        cursor = body["next_cursor"]
        if cursor is None:
            return out


def newest_first(docs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(docs.values(), key=lambda d: (d["created_at"], d["id"]), reverse=True)


async def test_as_of_lists_equal_a_replay_of_the_events_up_to_each_seq(db, make_tenant, store):
    t = await make_tenant("Desk")
    rng = random.Random(34)
    await generate(store, t.tenant_id, rng, tickets=TICKETS, commands=COMMANDS)
    async with store.unit_of_work(t.tenant_id, readonly=True) as s:
        head = await s.conn.fetchval("SELECT max(seq) FROM events")
    seqs = sorted({0, head, *rng.sample(range(1, head), 5)})
    expected, _ = await replay(store, t.tenant_id, set(seqs))
    middle = seqs[3]
    # Every seq in one page each, as the runtime role through the list's own read.
    async with store.unit_of_work(t.tenant_id, readonly=True) as s:
        for seq in seqs:
            got = [orjson.loads(v.view) for v in await list_as_of(
                s.conn, t.tenant_id, seq, TicketFilters(), None, 5000)]
            want = newest_first(expected[seq])
            assert [d["id"] for d in got] == [d["id"] for d in want], seq
            for g, w in zip(got, want, strict=True):
                assert g == w, (seq, g["id"])
        for filters, match in FILTERS:
            got = [orjson.loads(v.view) for v in await list_as_of(
                s.conn, t.tenant_id, middle, filters, None, 5000)]
            assert got == [d for d in newest_first(expected[middle]) if match(d)], filters
    async with asgi_client(create_app(app_settings(db))) as http:
        key = t.admin_key.secret
        # Page by page over HTTP, the cursor holding the moment.
        paged = await as_of_list(http, key, middle)
        assert paged == newest_first(expected[middle])
        # By an instant: the last seq recorded by then.
        async with store.unit_of_work(t.tenant_id, readonly=True) as s:
            at = await s.conn.fetchval("SELECT recorded_at FROM events WHERE seq = $1", middle)
            tied = await s.conn.fetchval("SELECT max(seq) FROM events WHERE recorded_at = $1",
                                         at)
        by_time = (await http.get("/v1/tickets", params={"as_of": at.isoformat(), "limit": 100},
                                  headers=auth(key))).json()
        assert by_time["as_of_seq"] == tied
        if tied == middle:
            assert by_time["data"] == paged[:100]
        tagged = await as_of_list(http, key, middle, tag="vip", state=["open", "pending"])
        assert tagged == [d for d in paged if "vip" in d["tags"]
                          and d["state"] in ("open", "pending")]
        # At the head the as-of list is the current list.
        now = (await http.get("/v1/tickets", params={"limit": 100},
                              headers=auth(key))).json()["data"]
        first = await http.get("/v1/tickets", params={"as_of_seq": head, "limit": 100},
                               headers=auth(key))
        assert first.json()["data"] == now and first.json()["as_of_seq"] == head

        backlog = (await http.get("/v1/analytics/backlog", params={"as_of_seq": middle},
                                  headers=auth(key))).json()
        assert backlog["as_of_seq"] == middle and backlog["lag"] == head - middle
        open_then = Counter((d["state"], d["priority"]) for d in expected[middle].values()
                            if d["state"] in ("open", "pending", "on_hold"))
        counted: Counter[tuple[str, str]] = Counter()
        for row in backlog["rows"]:
            counted[(row["state"], row["priority"])] += row["tickets"]
        assert counted == open_then and backlog["total"] == sum(open_then.values())

        ahead = await http.get("/v1/tickets", params={"as_of_seq": head + 1},
                               headers=auth(key))
        assert (ahead.status_code, ahead.json()["code"]) == (400, "invalid_parameter")
        assert ahead.json()["parameters"] == ["as_of_seq"]
        for bad in ({"as_of_seq": 1, "sort": "sla_due"}, {"as_of_seq": 1, "q": "x"},
                    {"as_of_seq": 1, "as_of": "2026-01-01T00:00:00Z"}):
            refused = await http.get("/v1/tickets", params=bad, headers=auth(key))
            assert refused.status_code == 400, bad
        late = await http.get("/v1/analytics/backlog", params={"as_of_seq": head + 1},
                              headers=auth(key))
        assert late.status_code == 400


FILTERS = (
    (TicketFilters(states=("open", "pending")), lambda d: d["state"] in ("open", "pending")),
    (TicketFilters(assignee=AGENTS[0]), lambda d: d["assignee"] == str(AGENTS[0])),
    (TicketFilters(unassigned=True), lambda d: d["assignee"] is None),
    (TicketFilters(tags=("vip",), priorities=("high",)),
     lambda d: "vip" in d["tags"] and d["priority"] == "high"),
    (TicketFilters(created_after=datetime(2026, 1, 20, tzinfo=UTC), sources=("email",)),
     lambda d: d["created_at"] >= "2026-01-20" and d["source"] == "email"),
    (TicketFilters(updated_after=datetime(2026, 2, 1, tzinfo=UTC)),
     lambda d: d["updated_at"] >= "2026-02-01"),
)


async def test_kept_versions_are_the_tenants_own_and_no_customers(db, make_tenant, store):
    """As the runtime role: one tenant's context reads none of another's versions, and
    a customer's or a widget's reads none at all (outside its own appends)."""
    a, b = await make_tenant("A"), await make_tenant("B")
    for t in (a, b):
        await generate(store, t.tenant_id, random.Random(7), tickets=5, commands=5)
    async with store.unit_of_work(a.tenant_id, readonly=True) as s:
        assert await s.conn.fetchval("SELECT current_user") == "helpdesk_app"
        mine = await s.conn.fetch("SELECT DISTINCT tenant_id FROM ticket_versions")
        assert [r["tenant_id"] for r in mine] == [a.tenant_id]
        assert len(await list_as_of(s.conn, a.tenant_id, 10**6, TicketFilters(), None, 100)
                   ) == 5
        assert await list_as_of(s.conn, b.tenant_id, 10**6, TicketFilters(), None, 100) == []
    for kind in ("customer", "widget"):
        async with store.unit_of_work(a.tenant_id, StoreActor(kind, str(uuid.uuid4())),
                                      readonly=True) as s:
            assert await s.conn.fetchval("SELECT count(*) FROM ticket_versions") == 0
