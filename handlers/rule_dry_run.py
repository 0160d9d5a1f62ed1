"""The dry run of a ticket's rules (``GET /v1/tickets/{id}/rules``): which rules would
fire on the ticket now, and why the others would not.

A rule on events is matched as the engine would match it with no event (a condition
on ``event`` fails). A rule on time is judged as the time pass would judge it now
(``handlers.rule_timers``): its clock must be running, have run its hours (calendar or
business) and not have fired in this episode, the ticket must not be closed, and its
conditions must hold; its ``clock`` says when the clock started, how many hours it has
run and how many remain.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from domain.business_hours import Calendar, business_ms_between
from domain.rule import in_order
from domain.rule_parts import TimeTrigger, failing
from domain.values import TicketState
from eventstore.store import UnitOfWork
from handlers.rule_engine import ticket_facts
from handlers.ticket_state import load_ticket
from projections import rules as read_model
from projections.tenant_settings import load_settings

FIRINGS_SHOWN = 50
HOUR_MS = 3_600_000

_NOT_RUNNING = {
    "created": "the ticket has no created clock yet",
    "updated": "the ticket has no updated clock yet",
    "pending": "the ticket is not pending",
    "customer_reply": "no public reply by the customer yet",
    "agent_reply": "no public reply by an agent yet",
}


def hours_run(time: TimeTrigger, calendar: Calendar, start: datetime, now: datetime) -> float:
    """The hours a clock started at ``start`` has run by ``now`` (business hours when
    the rule counts them)."""
    if time.business:
        return business_ms_between(calendar, start, now) / HOUR_MS
    return max((now - start) / timedelta(hours=1), 0.0)


def clock_verdict(time: TimeTrigger, start: datetime | None, calendar: Calendar,
                  now: datetime, fired: str | None) -> tuple[list[str], dict[str, Any]]:
    """Why a time rule's clock does not let it fire now (empty: it does), and the
    clock as the dry run shows it; ``fired`` is the outcome recorded for this episode
    (None: none)."""
    clock: dict[str, Any] = {"since": time.since, "hours": time.hours,
                             "business": time.business, "started_at": start,
                             "hours_run": None, "hours_remaining": None}
    if start is None:
        return [_NOT_RUNNING[time.since]], clock
    run = hours_run(time, calendar, start, now)
    clock["hours_run"] = round(run, 2)
    clock["hours_remaining"] = round(max(time.hours - run, 0.0), 2)
    reasons = []
    if run < time.hours:
        kind = "business hours" if time.business else "hours"
        reasons.append(f"its clock has run {run:.2f} of {time.hours} {kind}: "
                       f"{time.hours - run:.2f} to go")
    if fired is not None:
        reasons.append(f"it {fired} already in this clock's episode (since "
                       f"{start.isoformat()})")
    return reasons, clock


async def dry_run(uow: UnitOfWork, ticket_id: UUID, now: datetime) -> dict[str, Any] | None:
    """The dry run's document (None: no such ticket)."""
    conn, tenant = uow.conn, uow.tenant_id
    ticket = await load_ticket(conn, tenant, ticket_id)
    if ticket is None:
        return None
    calendar = (await load_settings(conn, tenant)).policy.calendar
    facts = await ticket_facts(conn, tenant, ticket, None, calendar, now)
    rules = in_order(await read_model.all_rules(conn, tenant))
    timed = [r.id for r in rules if r.time is not None]
    times = await read_model.ticket_times(conn, tenant, ticket_id) if timed else None
    episodes = (await read_model.time_firings_of_ticket(conn, tenant, ticket_id, timed)
                if timed else {})
    shown = []
    for rule in rules:
        reasons = failing(rule.conditions, facts)
        entry: dict[str, Any] = {"rule_id": str(rule.id), "name": rule.name,
                                 "active": rule.active}
        if rule.time is not None:
            start = None if times is None else times[rule.time.since]
            fired = None if start is None else episodes.get((rule.id, start))
            held, clock = clock_verdict(rule.time, start, calendar, now, fired)
            if ticket.state is TicketState.CLOSED:
                held = ["the ticket is closed", *held]
            reasons = [*held, *reasons]
            entry["clock"] = clock
        if not rule.active:
            reasons = ["the rule is inactive", *reasons]
        shown.append(entry | {"matches": not reasons, "reasons": reasons})
    fired_rows = await read_model.firings_of_ticket(conn, tenant, ticket_id, FIRINGS_SHOWN)
    return {"ticket_id": str(ticket_id), "rules": shown, "fired": fired_rows}


__all__ = ["FIRINGS_SHOWN", "clock_verdict", "dry_run", "hours_run"]
