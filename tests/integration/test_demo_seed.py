"""The demo seed: two tenants through the command handlers, at times relative to now."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from api.cli.demo import describe
from api.http.keycache import KeyCache
from domain.values import Priority, Source, TicketState
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from handlers.credentials import Passwords
from handlers.demo import tidewater
from handlers.demo.plan import span
from handlers.demo.seed import DemoTenant, seed_demo
from handlers.mailboxes import list_mailboxes, mail_health
from handlers.sessions import Lifetimes, SignIn, sign_in
from tests.integration.test_cli import _env, helpdesk
from tests.support import pg

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
Seeded = tuple[pg.TestDatabase, DemoTenant, DemoTenant]


@pytest.fixture(scope="module")
async def seeded(databases: pg.Databases) -> AsyncIterator[Seeded]:
    """One database with the demo seeded at NOW, shared by the tests that read it (a
    seed is the slow part: six weeks of a desk through the command handlers)."""
    clone = await databases.clone()
    pool = await create_pool(clone.runtime_url, min_size=1, max_size=2)
    try:
        secret = await pool.fetchval("SELECT value FROM instance_secrets WHERE name = 'data_key'")
        store = EventStore(pool, keyring=Keyring(bytes(secret)))
        rich, small = await seed_demo(clone.admin_url, store, NOW)
    finally:
        await pool.close()
    yield clone, rich, small
    await databases.drop(clone.name)


@pytest.fixture
def db(seeded: Seeded) -> pg.TestDatabase:
    """Every test of this module reads (or adds to) the one seeded database."""
    return seeded[0]


async def _tickets(store: EventStore, tenant: DemoTenant) -> list[dict[str, Any]]:
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        rows = await s.conn.fetch("SELECT view FROM tickets ORDER BY created_at")
    return [dict(r["view"]) for r in rows]


async def _events(store: EventStore, tenant: DemoTenant) -> list[Any]:
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        return list(await s.conn.fetch(
            "SELECT seq, stream_id, type, data, actor_kind, actor_id FROM events ORDER BY seq"))


async def test_the_rich_tenant_covers_the_desk_over_six_weeks(seeded, store):
    _, rich, small = seeded
    assert (rich.name, small.name) == ("Tidewater Support", "Harbor Bikes")
    tickets = await _tickets(store, rich)
    assert len(tickets) == rich.tickets >= 50
    assert {t["state"] for t in tickets} == set(TicketState)
    assert {t["priority"] for t in tickets} == set(Priority)
    # Slack tickets come in only from a connected Slack channel, which the demo has not.
    assert {t["source"] for t in tickets} == set(Source) - {Source.SLACK}
    created = [datetime.fromisoformat(t["created_at"]) for t in tickets]
    assert NOW - timedelta(days=42) <= min(created) < NOW - timedelta(days=40)
    assert NOW - timedelta(hours=1) < max(created) <= NOW
    # Spread over the weeks, not bunched: tickets in each of the six weeks.
    assert {(NOW - c).days // 7 for c in created} == set(range(6))
    assert any(t["reopen_count"] for t in tickets)
    assert any(t["follow_up_of"] for t in tickets)
    assert any(t["assignee"] is None for t in tickets if t["state"] == "open")

    events = await _events(store, rich)
    types = Counter(e["type"] for e in events)
    assert types["TicketOpened"] == len(tickets)
    # Every ticket is a contact's; the companies' people joined them by their domains.
    assert all(t["requester"]["contact_id"] for t in tickets)
    assert types["OrganizationCreated"] == 5
    # The teams are groups; tickets are in their team's group once one of it takes them,
    # and the intake filled in both ticket fields.
    assert types["GroupCreated"] == 3
    assert any(t["group_id"] for t in tickets)
    assert any(t["group_id"] is None for t in tickets)
    assert {t["fields"]["category"] for t in tickets} == {"accounts", "billing", "technical"}
    assert {t["fields"]["business_impact"] for t in tickets} == {True, False}
    joined = [e for e in events if e["type"] == "ContactCreated"
              and e["data"]["organization_id"] is not None]
    assert len(joined) >= 5
    breaches = Counter(e["data"]["metric"] for e in events if e["type"] == "SlaBreached")
    assert set(breaches) == {"first_response", "next_reply", "resolution"}
    notes = [e for e in events if e["type"] == "MessageAdded"
             and e["data"]["visibility"] == "internal"]
    assert len(notes) >= 20
    # A few tickets carry files: a screenshot in a reply, a log in a note (their names
    # sealed, as the message bodies are).
    files = [a for e in events if e["type"] == "MessageAdded"
             for a in e["data"].get("attachments", [])]
    assert {a["type"] for a in files} == {"image/png", "application/octet-stream"}
    assert len(files) == 6 and all("sealed" in a["name"] for a in files)
    async with store.unit_of_work(rich.tenant_id, readonly=True) as s:
        names = {r["name"] for r in await s.conn.fetch("SELECT name FROM uploads")}
    assert names == {"settings.png", "sync.log"}
    at = [datetime.fromisoformat(e["data"]["at"]) for e in events if "at" in e["data"]]
    assert max(at) <= NOW
    # Breaches are recorded as the scheduler would: a minute after the clock's due time.
    for e in events:
        if e["type"] == "SlaBreached":
            late = datetime.fromisoformat(e["data"]["at"]) - \
                datetime.fromisoformat(e["data"]["due_at"])
            assert timedelta(0) <= late <= timedelta(minutes=1)
    # Reopened by a customer's reply and by an agent.
    reopened = [e for e in events if e["type"] == "StateChanged"
                and e["data"]["from_state"] == "solved" and e["data"]["to_state"] == "open"]
    assert {e["actor_kind"] for e in reopened} == {"api_key"}
    assert len(reopened) >= 2


async def test_every_change_is_stamped_with_the_key_that_would_have_sent_it(seeded, store, pool):
    _, rich, _ = seeded
    keys = KeyCache(pool, ttl=0)
    role_of: dict[str, str] = {}
    for key in rich.keys:
        principal = await keys.lookup(key.secret)
        assert principal is not None and principal.tenant_id == rich.tenant_id
        assert principal.role == key.role
        role_of[str(principal.key_id)] = key.role
    events = await _events(store, rich)
    for e in events:
        if e["type"] == "SlaBreached":
            assert (e["actor_kind"], e["actor_id"]) == ("system", "scheduler")
        elif e["type"] == "MessageAdded" and e["data"]["author"]["kind"] == "customer":
            assert role_of[e["actor_id"]] == "intake"
        elif e["type"] == "MessageAdded":
            assert role_of[e["actor_id"]] in ("agent", "admin")
        elif e["type"] == "StateChanged" and e["actor_kind"] == "system":
            assert "by the sweep" in e["data"]["reason"]
    # The operator creates the tenant and its first admin key; that key hires the team
    # and issues the other keys, as an admin would over the API.
    first = next(k for k in rich.keys if k.name == "first admin key")
    staff = [e for e in events if e["type"] in ("AgentAdded", "ApiKeyIssued")]
    assert staff[0]["actor_kind"] == "operator"
    assert {(e["actor_kind"], role_of[e["actor_id"]]) for e in staff[1:]} == {
        ("api_key", "admin")}
    assert {e["actor_id"] for e in staff[1:]} == {
        str((await keys.lookup(first.secret)).key_id)}  # type: ignore[union-attr]


async def test_every_demo_person_signs_in_with_the_password_printed_for_them(seeded, store):
    _, rich, small = seeded
    passwords = Passwords(memory_kib=1024, time_cost=1)
    lifetimes = Lifetimes(refresh=timedelta(days=1), session=timedelta(days=1))
    for tenant in (rich, small):
        people = [k for k in tenant.keys if k.agent is not None]
        assert people and all(k.password and k.email for k in people)
        assert all(k.password is None for k in tenant.keys if k.agent is None)
        for key in people:
            signed = await sign_in(store, passwords, lifetimes,
                                   SignIn(tenant.tenant_id, key.email or "", key.password or "",
                                          NOW))
            assert signed.role == key.role
    described = describe([{"tenant_id": str(rich.tenant_id), "name": rich.name,
                           "tickets": rich.tickets,
                           "keys": [{"role": k.role, "name": k.name, "secret": k.secret,
                                     "agent": k.agent, "email": k.email,
                                     "password": k.password} for k in rich.keys]}])
    person = next(k for k in rich.keys if k.agent is not None)
    assert f"sign in: {person.email} / {person.password}" in described


async def test_the_small_tenant_sees_only_its_own(seeded, store):
    _, rich, small = seeded
    small_tickets = await _tickets(store, small)
    assert len(small_tickets) == small.tickets == 5
    rich_ids = {t["id"] for t in await _tickets(store, rich)}
    assert rich_ids.isdisjoint(t["id"] for t in small_tickets)
    assert {k.role for k in small.keys} == {"admin", "agent", "intake"}


async def test_each_tenant_has_one_dormant_mailbox(seeded, store, pool):
    _, rich, small = seeded
    for tenant in (rich, small):
        async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
            boxes = await list_mailboxes(s, None, 10)
        [box] = boxes
        assert box["address"].startswith("support@") and box["name"] == f"{tenant.name} support"
        assert (box["smtp"], box["imap"], box["dkim"]) == (None, None, None)
    async with pool.acquire() as conn:
        assert await mail_health(conn) == (0, 0)  # readiness: mail dormant


async def test_another_moment_gives_the_same_desk_shifted_in_time(seeded, store):
    later = NOW + timedelta(days=3, hours=5, minutes=7)
    db, first, _ = seeded
    second, _ = await seed_demo(db.admin_url, store, later)

    def shape(tickets: list[dict[str, Any]], now: datetime) -> list[tuple[Any, ...]]:
        return sorted((t["subject"], t["state"], t["priority"], t["reopen_count"],
                       now - datetime.fromisoformat(t["created_at"])) for t in tickets)

    assert shape(await _tickets(store, first), NOW) == \
        shape(await _tickets(store, second), later)


def test_every_placement_names_a_story_and_a_customer_and_every_story_is_placed():
    plan = tidewater.PLAN
    for placement in plan.placements:
        assert placement.story in plan.stories and placement.customer in plan.customers
        assert span(placement.ago) <= timedelta(days=42)
    assert {p.story for p in plan.placements} == set(plan.stories)
    domains = {o.domain for o in plan.organizations}
    for person in plan.customers.values():
        if person.organization is not None:
            assert person.email.rsplit("@", 1)[1] in domains


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_demo_seed_prints_working_keys(db, pool):
    env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
    out = helpdesk("demo", "seed", "--json", env=env)
    assert out.returncode == 0, out.stderr
    demo = json.loads(out.stdout)
    assert [t["name"] for t in demo] == ["Tidewater Support", "Harbor Bikes"]
    keys = KeyCache(pool, ttl=0)
    for tenant in demo:
        for key in tenant["keys"]:
            principal = await keys.lookup(key["secret"])
            assert principal is not None and str(principal.tenant_id) == tenant["tenant_id"]
    # Without --json the command prints describe(demo) (a second seed would take long).
    human = describe(demo)
    assert "Priya Raman" in human and demo[0]["keys"][0]["secret"] in human
    refused = helpdesk("demo", "seed", env=_env(DATABASE_URL=db.runtime_url))
    assert refused.returncode == 2 and "MIGRATION_DATABASE_URL" in refused.stderr
