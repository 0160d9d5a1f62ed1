"""Clocks follow the SLA policy in force when they started or were retargeted.

Policies: the default (first reply 1 h, next reply 30 min, resolution 8 h) and "Tier 2"
for tickets in group G (first reply 20 min, next reply 5 min, resolution 2 h), both on
calendar time. A ticket opened at 09:00 runs on the default; moved into G at 09:10 it is
re-matched: an ``SlaRetargeted`` names both policies and its first reply, 10 minutes
spent, is due at 09:20. With two schedulers running, the breach latches at 09:20
exactly once (and the timer of the old 10:00 deadline is gone). The next reply has its
own target (5 min, not the first reply's). An edit of Tier 2 applies to clocks that
start after it; ``apply`` moves the running one.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import timedelta
from typing import Any

from api.app import create_app
from api.config import ProcessSettings
from domain.business_hours import Calendar
from domain.clock import ManualClock
from domain.group import CreateGroup
from domain.ids import GroupId, MessageId
from domain.rule_parts import Condition
from domain.sla import SlaTarget
from domain.sla_calendar import ChangeCalendar, CreateCalendar
from domain.target_policy import ChangePolicy, CreatePolicy
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.ticket.commands import AddMessage, Assign
from domain.values import Priority
from domain.workflow_events import PolicyTargets
from eventstore.pool import create_pool
from handlers import groups
from handlers import sla_policies as policies
from handlers.sla_apply import apply_policy
from handlers.tenant_settings import ReplaceSettings, replace_settings
from handlers.upgrades import upgrade
from projections import sla_policies as sla_reads
from projections.admin import rebuild
from projections.projector import Projector
from projections.views import ticket_document
from tests.e2e.conftest import auth
from tests.integration import test_sla_jobs
from tests.integration import test_sla_verdicts as verdicts
from tests.integration.test_sla_jobs import (
    AGENT,
    CUSTOMER,
    KEY,
    T0,
    events,
    open_ticket,
    reply,
    run,
    schedulers,
    settle,
    ticket,
)
from tests.support.http import asgi_client

MIN = 60_000
admin = test_sla_jobs.admin  # the fixture: an admin connection


async def test_regrouping_retargets_and_the_breach_latches_once_at_the_new_deadline(
        db, store, admin, make_tenant):
    tenant = (await make_tenant()).tenant_id
    group = GroupId(uuid.uuid4())
    async with store.unit_of_work(tenant, KEY) as s:
        await groups.create_group(s, CreateGroup(group_id=group, name="Tier 2", at=T0))
        default = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, at=T0,
            targets=PolicyTargets(first_reply_ms=60 * MIN, next_reply_ms=30 * MIN,
                                  resolution_ms=480 * MIN)))
        tier2 = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Tier 2", at=T0,
            conditions=(Condition(field="group_id", op="is", value=str(group)),),
            targets=PolicyTargets(first_reply_ms=20 * MIN, next_reply_ms=5 * MIN,
                                  resolution_ms=120 * MIN)))
    tid = await open_ticket(store, tenant)
    opened = await ticket(store, tenant, tid)
    assert opened.clocks["first_response"].basis.policy_id == default.id
    assert opened.clocks["first_response"].due_at == T0 + timedelta(hours=1)

    await run(store, tenant, tid, Assign(group_id=group, set_group=True, set_agent=False,
                                         actor=AGENT, at=T0 + timedelta(minutes=10)))
    [moved] = await events(store, tenant, tid, "SlaRetargeted")
    assert (moved.data["from_policy"]["policy_id"], moved.data["to_policy"]["policy_id"],
            moved.data["reason"]) == (str(default.id), str(tier2.id), "group")
    regrouped = await ticket(store, tenant, tid)
    assert regrouped.clocks["first_response"].due_at == T0 + timedelta(minutes=20)
    assert regrouped.clocks["resolution"].due_at == T0 + timedelta(minutes=120)
    shown = ticket_document(regrouped)["sla"]["first_response"]["policy"]
    assert shown == {"policy_id": str(tier2.id), "policy_version": 1, "calendar_id": None,
                     "calendar_version": None, "policy_name": "Tier 2"}

    clock = ManualClock(T0 + timedelta(minutes=10))
    pools = [await create_pool(db.runtime_url, min_size=1, max_size=4) for _ in range(2)]
    try:
        async with schedulers(pools, clock) as loops:
            clock.set(T0 + timedelta(minutes=19, seconds=59))
            await settle(admin, loops, clock)
            assert await events(store, tenant, tid, "SlaBreached") == []
            clock.set(T0 + timedelta(minutes=20, seconds=1))
            await settle(admin, loops, clock)
            clock.set(T0 + timedelta(hours=1, seconds=1))  # the old deadline: no timer
            await settle(admin, loops, clock)
    finally:
        for p in pools:
            await p.close()
    [breach] = await events(store, tenant, tid, "SlaBreached")
    assert breach.data["metric"] == "first_response"
    assert breach.data["due_at"].startswith("2026-06-01T09:20:00")
    assert (await ticket(store, tenant, tid)).clocks["first_response"].breached_at == \
        T0 + timedelta(minutes=20, seconds=1)

    # The next reply runs on its own target, on the policy in force when it starts.
    await run(store, tenant, tid, reply(T0 + timedelta(minutes=25)))
    await run(store, tenant, tid, AddMessage(message_id=MessageId(uuid.uuid4()), body="And?",
                                             actor=CUSTOMER, at=T0 + timedelta(minutes=30)))
    nr = (await ticket(store, tenant, tid)).clocks["next_reply"]
    assert (nr.target_ms, nr.due_at, nr.basis.policy_id) == (
        5 * MIN, T0 + timedelta(minutes=35), tier2.id)

    # An edit applies to clocks that start after it; apply moves the running ones.
    async with store.unit_of_work(tenant, KEY) as s:
        await policies.change_policy(s, tier2.id, ChangePolicy(
            targets=PolicyTargets(first_reply_ms=20 * MIN, next_reply_ms=15 * MIN,
                                  resolution_ms=120 * MIN), at=T0 + timedelta(minutes=31)))
    assert (await ticket(store, tenant, tid)).clocks["next_reply"] == nr
    async with store.unit_of_work(tenant, KEY) as s:
        applied = await apply_policy(s, tier2.id, T0 + timedelta(minutes=32))
    assert (applied.version, applied.tickets) == (2, 1)
    after = (await ticket(store, tenant, tid)).clocks
    assert (after["next_reply"].target_ms, after["next_reply"].due_at,
            after["next_reply"].basis.policy_version) == (
        15 * MIN, T0 + timedelta(minutes=45), 2)
    # The fulfilled first reply is history: it keeps the policy it was judged on.
    assert after["first_response"].basis.policy_version == 1
    last = (await events(store, tenant, tid, "SlaRetargeted"))[-1]
    assert (last.data["reason"], last.data["from_policy"]["policy_version"],
            last.data["to_policy"]["policy_version"]) == ("apply", 1, 2)
    async with store.unit_of_work(tenant, KEY) as s:
        again = await apply_policy(s, tier2.id, T0 + timedelta(minutes=33))
    assert again.tickets == 0


async def test_migrate_makes_policies_that_judge_as_the_settings_did(db, store, make_tenant):
    """``helpdesk migrate`` gives a tenant without policies those equivalent to its
    settings (business hours as a calendar, a group's own targets first): appended as
    events, once; a ticket opened after it is judged as one opened before."""
    tenant = (await make_tenant()).tenant_id
    group = GroupId(uuid.uuid4())
    office = Calendar(timezone="Europe/Berlin", weekly={d: [("09:00", "17:00")] for d in range(5)})
    async with store.unit_of_work(tenant, KEY) as s:
        await groups.create_group(s, CreateGroup(group_id=group, name="Tier 2", at=T0))
        await replace_settings(s, ReplaceSettings(at=T0, settings=dataclasses.replace(
            DEFAULT_SETTINGS, business_hours=office,
            group_targets={group: {Priority.URGENT: SlaTarget(10 * MIN, 60 * MIN)}})))

    async def story() -> dict[str, Any]:
        tid = await open_ticket(store, tenant, Priority.URGENT)
        await run(store, tenant, tid, Assign(group_id=group, set_group=True, set_agent=False,
                                             actor=AGENT, at=T0 + timedelta(minutes=2)))
        await run(store, tenant, tid, reply(T0 + timedelta(minutes=3)))
        await run(store, tenant, tid, AddMessage(
            message_id=MessageId(uuid.uuid4()), body="And?", actor=CUSTOMER,
            at=T0 + timedelta(minutes=4)))
        return {m: (c.target_ms, c.due_at, c.fulfilled_at)
                for m, c in (await ticket(store, tenant, tid)).clocks.items()}

    before = await story()
    changed = await upgrade(db.admin_url)
    assert changed["SLA policies made from the settings' targets"] == 5
    assert (await upgrade(db.admin_url))["SLA policies made from the settings' targets"] == 0
    async with store.unit_of_work(tenant, readonly=True) as s:
        made = await sla_reads.all_policies(s.conn, tenant)
        [calendar_id] = {p.calendar_id for p in made}
        assert (await sla_reads.load_calendar(s.conn, tenant, calendar_id)).hours == office
    assert await story() == before

    # Row-level security, as the runtime role: another tenant, or none, sees no row.
    other = (await make_tenant("Other")).tenant_id
    tables = ("sla_policies", "sla_calendars", "sla_calendar_versions")
    async with store.unit_of_work(other, readonly=True) as s:
        assert [await s.conn.fetchval(f"SELECT count(*) FROM {t}") for t in tables] == [0] * 3
    async with store.unit_of_work(tenant, readonly=True) as s:
        assert [await s.conn.fetchval(f"SELECT count(*) FROM {t}") for t in tables] == [5, 1, 1]
        assert not await s.conn.fetchval("SELECT rolsuper OR rolbypassrls FROM pg_roles "
                                         "WHERE rolname = current_user")


async def test_a_requester_joining_or_leaving_an_organization_re_matches_their_tickets(
        db, store, make_tenant):
    from handlers import contacts, organizations

    tenant = (await make_tenant()).tenant_id
    async with store.unit_of_work(tenant, KEY) as s:
        acme = (await organizations.create_organization(s, organizations.NewOrganization(
            name="Acme", domains=(), at=T0))).organization
        default = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, at=T0,
            targets=PolicyTargets(first_reply_ms=60 * MIN, resolution_ms=480 * MIN)))
        gold = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Gold", at=T0,
            conditions=(Condition(field="organization_id", op="is", value=str(acme.id)),),
            targets=PolicyTargets(first_reply_ms=20 * MIN, resolution_ms=120 * MIN)))
    tid = await open_ticket(store, tenant)
    contact = (await ticket(store, tenant, tid)).requester.contact_id
    # The organization claims the requester's domain: its tickets move to Gold.
    async with store.unit_of_work(tenant, KEY) as s:
        await organizations.update_organization(s, organizations.ChangeOrganization(
            organization_id=acme.id, domains=("example.com",), move_contacts=True,
            at=T0 + timedelta(minutes=10)))
    [joined] = await events(store, tenant, tid, "SlaRetargeted")
    assert joined.data["reason"] == "organization"
    assert (joined.data["from_policy"]["policy_id"], joined.data["to_policy"]["policy_id"]) == (
        str(default.id), str(gold.id))
    clocks = (await ticket(store, tenant, tid)).clocks
    assert clocks["first_response"].due_at == T0 + timedelta(minutes=20)
    # The requester leaves it by an edit of the contact: back to the default.
    async with store.unit_of_work(tenant, KEY) as s:
        await contacts.update_contact(s, contacts.ChangeContact(
            contact_id=contact, changes={"organization_id": None},
            at=T0 + timedelta(minutes=15)))
    left = (await events(store, tenant, tid, "SlaRetargeted"))[-1]
    assert (left.data["reason"], left.data["to_policy"]["policy_id"]) == (
        "organization", str(default.id))
    assert (await ticket(store, tenant, tid)).clocks["first_response"].due_at == (
        T0 + timedelta(minutes=60))


async def test_a_clock_whose_policy_is_deleted_breaches_at_its_recorded_target(
        db, pool, store, admin, make_tenant):
    """"Fast" (urgent tickets, on Office Mon-Fri 09:00-17:00 UTC: first reply 20 min,
    resolution 4 h) is deleted while a ticket opened on it Monday 16:50 runs. Its clocks
    keep what they recorded: the first reply breaches Tuesday 09:10 (not at the
    default's 17:50), once, with two schedulers; the reply at 09:15 fulfils it and the
    breach stays; the resolution breaches at 12:50. The ticket, the desk as of the last
    seq, the ticket's as-of and analytics all say the same, and a rebuild of analytics
    after the default and the calendar change too moves no figure."""
    tenant = await make_tenant()
    tid_ = tenant.tenant_id
    monday = T0 + timedelta(hours=7, minutes=50)
    tuesday = T0 + timedelta(days=1)
    async with store.unit_of_work(tid_, KEY) as s:
        office = await policies.create_calendar(s, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Office", at=T0, hours=Calendar(
                timezone="UTC", weekly={d: [("09:00", "17:00")] for d in range(5)})))
        default = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Default", default=True, at=T0,
            targets=PolicyTargets(first_reply_ms=60 * MIN, resolution_ms=480 * MIN)))
        fast = await policies.create_policy(s, CreatePolicy(
            policy_id=uuid.uuid4(), name="Fast", calendar_id=office.id, at=T0,
            conditions=(Condition(field="priority", op="is", value="urgent"),),
            targets=PolicyTargets(first_reply_ms=20 * MIN, resolution_ms=240 * MIN)))
    tid = await open_ticket(store, tid_, Priority.URGENT, at=monday)
    recorded = (await ticket(store, tid_, tid)).clocks
    assert recorded["first_response"].due_at == tuesday + timedelta(minutes=10)
    assert recorded["resolution"].due_at == tuesday + timedelta(hours=3, minutes=50)
    async with store.unit_of_work(tid_, KEY) as s:
        await policies.delete_policy(s, fast.id, monday + timedelta(minutes=10))
        assert await policies.get_policy(s, fast.id) is None
    assert (await ticket(store, tid_, tid)).clocks == recorded

    clock = ManualClock(monday + timedelta(minutes=10))
    pools = [await create_pool(db.runtime_url, min_size=1, max_size=4) for _ in range(2)]
    try:
        async with schedulers(pools, clock) as loops:
            for now in (monday + timedelta(hours=1, minutes=1),  # the default's deadline
                        tuesday + timedelta(minutes=9, seconds=59)):
                clock.set(now)
                await settle(admin, loops, clock)
                assert await events(store, tid_, tid, "SlaBreached") == []
            clock.set(tuesday + timedelta(minutes=10, seconds=1))
            await settle(admin, loops, clock)
            await run(store, tid_, tid, reply(tuesday + timedelta(minutes=15)))
            clock.set(tuesday + timedelta(hours=3, minutes=49))
            await settle(admin, loops, clock)
            assert len(await events(store, tid_, tid, "SlaBreached")) == 1
            clock.set(tuesday + timedelta(hours=3, minutes=50, seconds=1))
            await settle(admin, loops, clock)
    finally:
        for p in pools:
            await p.close()
    breaches = await events(store, tid_, tid, "SlaBreached")
    assert [(e.data["metric"], e.data["due_at"][:19]) for e in breaches] == [
        ("first_response", "2026-06-02T09:10:00"), ("resolution", "2026-06-02T12:50:00")]
    clocks = (await ticket(store, tid_, tid)).clocks
    first = clocks["first_response"]
    assert (first.breached_at, first.fulfilled_at, first.basis.policy_id) == (
        tuesday + timedelta(minutes=10, seconds=1), tuesday + timedelta(minutes=15), fast.id)
    assert clocks["resolution"].breached_at == tuesday + timedelta(hours=3, minutes=50,
                                                                   seconds=1)

    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    async with store.unit_of_work(tid_, readonly=True) as s:
        row = await s.conn.fetchrow("SELECT * FROM analytics_tickets WHERE tenant_id = $1 "
                                    "AND ticket_id = $2", tid_, tid)
    # 16:50-17:00 Monday and 09:00-09:15 Tuesday on Office, the calendar it recorded.
    assert (row["breaches_first_response"], row["breaches_resolution"],
            row["first_reply_business_ms"]) == (1, 1, 25 * MIN)
    # The deleted policy, then other policy changes, then a rebuild: the same figures.
    projected = await verdicts.dump(pool, tid_)
    async with store.unit_of_work(tid_, KEY) as s:
        await policies.change_policy(s, default.id, ChangePolicy(
            targets=PolicyTargets(first_reply_ms=5 * MIN), set_calendar=True, calendar_id=office.id,
            at=tuesday + timedelta(hours=4)))
        await policies.change_calendar(s, office.id, ChangeCalendar(
            hours=Calendar(timezone="UTC", weekly={0: [("10:00", "11:00")]}),
            at=tuesday + timedelta(hours=4)))
    await rebuild(projector, "analytics", tid_)
    assert await verdicts.dump(pool, tid_) == projected

    app = create_app(ProcessSettings(database_url=db.runtime_url), clock=clock)
    key = auth(tenant.admin_key)
    async with asgi_client(app) as http:
        now = (await http.get(f"/v1/tickets/{tid}", headers=key)).json()
        head = breaches[-1].seq
        listed = (await http.get("/v1/tickets", params={"as_of_seq": head},
                                 headers=key)).json()
        assert listed["as_of_seq"] == head
        past = (await http.get(f"/v1/tickets/{tid}/as-of",
                               params={"version": now["version"]}, headers=key)).json()
        summary = (await http.get("/v1/analytics/summary", headers=key, params={
            "from": "2026-06-01", "to": "2026-06-02"})).json()
    assert [t["sla"] for t in listed["data"]] == [now["sla"]]
    assert past["sla"] == now["sla"]
    assert now["sla"]["first_response"]["breached_at"].startswith("2026-06-02T09:10:01")
    assert now["sla"]["first_response"]["policy"]["policy_name"] == "Fast"
    achieved = summary["total"]["sla_achievement"]
    assert (achieved["first_response"], achieved["resolution"]) == (0.0, 0.0)
