"""Rules on time: "N hours (calendar or business) since the ticket was created, last
updated, put pending, or last replied to by the customer or an agent, and conditions".

Two job kinds:

* ``rules.time_pass`` (per tenant, periodic): for each active time rule, the tickets
  not closed whose clock started long enough ago (``rule_ticket_times``, kept by the
  rule engine from the events) and that the rule has not fired for in that episode;
  those whose conditions hold now get a ``rules.time`` job keyed per ticket and rule.
  The pass changes no ticket.
* ``rules.time`` (per ticket and rule): checks everything again on fresh state and, if
  it all still holds, claims the episode in ``rule_time_firings`` and runs the rule's
  actions through the ticket handlers, stamped ``rule:<id>``, in one transaction. The
  episode's row is the guard: a second job for the same episode (two schedulers, a
  retried job, a second pass) finds it and does nothing; a new episode (a newer reply,
  a new pending spell) starts from a new instant and may fire again.

An action the ticket refuses undoes the rule's actions and keeps the episode as
``refused`` with the reason, so it is not tried again every pass.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta
from uuid import UUID

import asyncpg

from domain.business_hours import Calendar, business_ms_between
from domain.errors import DomainError
from domain.ids import TenantId
from domain.rule import Rule
from domain.rule_parts import Facts, TimeTrigger, allowed_values, holds
from domain.ticket import Ticket
from domain.values import Priority, Source, TicketState
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from eventstore.types import SYSTEM, StoreActor
from handlers.errors import HandlerError
from handlers.rule_engine import action_command, in_business_hours, rule_actor, ticket_facts
from handlers.rule_mail import queue_rule_mail
from handlers.ticket_state import load_ticket
from handlers.tickets import run_command
from projections import rules as read_model
from projections.tenant_settings import load_settings
from scheduler import jobs
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

log = logging.getLogger("helpdesk.rules")

PASS = "rules.time_pass"
FIRE = "rules.time"
EVERY = timedelta(minutes=5)


def time_job_key(rule_id: UUID, ticket_id: UUID) -> str:
    return f"rule-time:{rule_id}:{ticket_id}"


def elapsed(time: TimeTrigger, calendar: Calendar, start: datetime, now: datetime) -> bool:
    """Whether ``time.hours`` have passed from ``start`` to ``now`` (in business hours
    when the rule counts them)."""
    wait = timedelta(hours=time.hours)
    if not time.business:
        return now - start >= wait
    return business_ms_between(calendar, start, now) >= wait // timedelta(milliseconds=1)


async def _matches(conn: asyncpg.Connection, tenant: TenantId, rule: Rule, ticket: Ticket,
                   calendar: Calendar, now: datetime) -> bool:
    facts = await ticket_facts(conn, tenant, ticket, None, calendar, now)
    return holds(rule.conditions, facts)


def latest_start(time: TimeTrigger, calendar: Calendar, now: datetime) -> datetime | None:
    """The latest instant a clock may have started at for ``time.hours`` to have run
    by ``now``: ``elapsed(time, calendar, start, now)`` exactly when ``start`` is at or
    before it (None: no start is, a calendar with no hours). Business time from a start
    to ``now`` only shrinks as the start moves later, so the instant is found by
    halving, to the microsecond."""
    latest = now - timedelta(hours=time.hours)  # business time never runs faster
    if not time.business or elapsed(time, calendar, latest, now):
        return latest
    earliest, span = latest, timedelta(hours=time.hours)
    while not elapsed(time, calendar, earliest, now):
        span *= 2
        if span > timedelta(days=3660):
            return None
        earliest = latest - span
    # elapsed at earliest, not at latest
    while latest - earliest > timedelta(microseconds=1):
        middle = earliest + (latest - earliest) / 2
        if elapsed(time, calendar, middle, now):
            earliest = middle
        else:
            latest = middle
    return earliest


def _row_facts(row: asyncpg.Record, business_hours: bool) -> Facts:
    """A ticket's facts from its row (``time_due``), as ``ticket_facts`` has them with
    no event: a multi-select value is a tuple, as in the ticket's state."""
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in row["fields"].items()}
    return Facts(event_type="", state=TicketState(row["state"]),
                 priority=Priority(row["priority"]), channel=Source(row["source"]),
                 group_id=row["group_id"], assignee_id=row["assignee"],
                 organization_id=row["organization_id"], tags=frozenset(row["tags"]),
                 fields=fields, public_customer_reply=False, business_hours=business_hours)


async def evaluate_tenant(conn: asyncpg.Connection, tenant: TenantId, now: datetime) -> int:
    """One pass over a tenant's time rules (the caller's transaction, tenant armed):
    schedule a ``rules.time`` job for each (ticket, rule) due now; returns how many.

    One statement finds them all (``projections.rules.time_due``): each rule's clock
    is compared with the latest start due now (``latest_start``, so business hours
    cost one search per rule, not one count per ticket), and the tickets whose state,
    priority or channel its conditions rule out are left out there; the rest of the
    conditions are asked of each row here."""
    rules = {r.id: r for r in await read_model.active_rules(conn, tenant)
             if r.time is not None}
    if not rules:
        return 0
    calendar = (await load_settings(conn, tenant)).policy.calendar
    wanted = []
    for rule in rules.values():
        assert rule.time is not None
        started_by = latest_start(rule.time, calendar, now)
        if started_by is not None:
            wanted.append({"rule_id": str(rule.id), "since": rule.time.since,
                           "started_by": started_by, **allowed_values(rule.conditions)})
    business_hours = in_business_hours(calendar, now)
    fire: list[tuple[str, datetime, dict[str, str]]] = []
    for row in await read_model.time_due(conn, tenant, wanted):
        rule = rules[row["rule_id"]]
        if holds(rule.conditions, _row_facts(row, business_hours)):
            fire.append((time_job_key(rule.id, row["ticket_id"]), now,
                         {"rule_id": str(rule.id), "ticket_id": str(row["ticket_id"]),
                          "episode": row["episode"].isoformat()}))
    # One statement per thousand jobs, not one each.
    for start in range(0, len(fire), 1000):
        await jobs.schedule_many(conn, tenant, FIRE, fire[start:start + 1000])
    return len(fire)


async def time_pass(ctx: JobContext, job: Job) -> None:
    """Handle one ``rules.time_pass`` job: a pass over the tenant's time rules."""
    if job.tenant_id is None:
        raise ValueError(f"{PASS} needs a tenant")
    async with ctx.store.unit_of_work(job.tenant_id, SYSTEM) as uow:
        await evaluate_tenant(uow.conn, uow.tenant_id, ctx.clock.now())


async def fire(uow: UnitOfWork, rule_id: UUID, ticket_id: UUID, episode: datetime,
               now: datetime) -> bool:
    """Fire a time rule for one ticket's episode if everything still holds (the unit
    of work is armed as the rule); True when its actions ran."""
    conn, tenant = uow.conn, uow.tenant_id
    rule = await read_model.load_rule(conn, tenant, rule_id)
    if rule is None or not rule.active or rule.time is None:
        return False
    times = await read_model.ticket_times(conn, tenant, ticket_id)
    ticket = await load_ticket(conn, tenant, ticket_id, for_update=True)
    if times is None or ticket is None or times[rule.time.since] != episode:
        return False  # a newer episode began: its own pass and job decide
    calendar = (await load_settings(conn, tenant)).policy.calendar
    if not elapsed(rule.time, calendar, episode, now) or not await _matches(
            conn, tenant, rule, ticket, calendar, now):
        return False
    if not await read_model.claim_time_firing(conn, tenant, rule.id, ticket_id, episode, now):
        return False  # fired already in this episode
    actor = rule_actor(rule.id)
    mark = uow.mark()
    try:
        async with conn.transaction():  # a savepoint: a refusal undoes the actions only
            for i, action in enumerate(rule.actions):
                current = await load_ticket(conn, tenant, ticket_id)
                assert current is not None
                if action.type == "send_mail":
                    # Queued with the episode's claim: once per episode, sent after
                    # this job commits.
                    await queue_rule_mail(uow, action.value, current,
                                          f"{rule.id}:{ticket_id}:{episode.isoformat()}:{i}",
                                          now)
                    continue
                # Derived: the same episode's firing done again writes the same note.
                message_id = uuid.uuid5(rule.id, f"time-note:{ticket_id}:"
                                                 f"{episode.isoformat()}:{i}")
                command = action_command(action, current, actor, now, message_id)
                if command is not None:
                    await run_command(uow, ticket_id, command)
    except (DomainError, HandlerError, ConcurrencyError) as exc:
        uow.undo_to(mark)
        detail = f"{type(exc).__name__}: {exc}"[:500]
        await read_model.refuse_time_firing(conn, tenant, rule.id, ticket_id, episode, detail)
        log.info("time rule %s refused on ticket %s: %s", rule.id, ticket_id, detail)
        return False
    return True


async def handle_fire(ctx: JobContext, job: Job) -> None:
    """Handle one ``rules.time`` job."""
    if job.tenant_id is None:
        raise ValueError(f"{FIRE} needs a tenant")
    payload = job.payload
    rule_id = UUID(payload["rule_id"])
    async with ctx.store.unit_of_work(job.tenant_id, StoreActor("rule", str(rule_id))) as uow:
        await fire(uow, rule_id, UUID(payload["ticket_id"]),
                   datetime.fromisoformat(payload["episode"]), ctx.clock.now())


def register(registry: Registry, every: timedelta = EVERY) -> None:
    """Add the time-rule job kinds to ``registry``."""
    registry.periodic(PASS, every, time_pass, per_tenant=True)
    registry.register(FIRE, handle_fire)


__all__ = ["EVERY", "FIRE", "PASS", "elapsed", "evaluate_tenant", "fire", "latest_start",
           "register", "time_job_key", "time_pass"]
