"""The rule engine: a projector over the event sequence whose ``apply`` acts.

It is a projection (``projections.base.Projection``) named ``rules``, run by a
``projections.projector.Projector`` of its own: a worker claims ``(rules, tenant)``
with ``FOR UPDATE SKIP LOCKED``, reads the events after the checkpoint, and for each
ticket event matches the tenant's active rules in order against the ticket as it stood
right after that event (``handlers.rule_states``, ``domain.rule_parts.failing``). A
matching rule's actions run through the same command handlers as the API
(``handlers.tickets``), stamped by the database as actor ``rule:<id>``; they, the
``rule_firings`` rows and the checkpoint commit in the projector's one transaction, so
each event is matched once and its actions happen once, a worker killed mid-batch
included (the batch rolls back whole and is done again by whoever claims it next).

Choices worth knowing:

* A rule's actions are staged as they run (the ticket rows they lock are locked in
  event order) and appended together at the end of the batch, each firing's under its
  rule's actor, just before the commit: the tenant head lock the appends take is held
  for those statements only, after every row lock (the API's lock order: ticket row,
  then head). A batch ends after ``ACTED_MAX`` events acted on, so the rows it locked
  are not held long. Each firing's seqs are recorded with it, so an event a rule
  appended knows how deep in a chain it is (``projections.rules.chain_depth``).
* Loop guard: a rule never fires on an event it appended itself; a rule that would
  fire at depth ``CHAIN_DEPTH_MAX + 1`` does not, and ``RuleChainStopped`` (tenant
  stream) says so.
* An action the ticket refuses now (a rule that solves a ticket with a required
  field empty, an assignee who left the group) undoes that rule's actions only; the
  firing is recorded as ``refused`` with the reason, and the engine goes on.
* ``send_mail`` appends no event: its notification rows and their jobs are written
  in the batch's transaction (``handlers.rule_mail``), so they commit with the
  checkpoint and are sent after it; a mail that cannot be queued (no mailbox left,
  nobody to mail) is said in the firing's ``detail``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from domain.business_hours import Calendar, CALENDAR_24x7, business_ms_between
from domain.errors import DomainError
from domain.events import Event, RuleChainStopped
from domain.ids import AgentId, GroupId, MessageId, TenantId, TicketId
from domain.rule import CHAIN_DEPTH_MAX, Rule
from domain.rule_parts import TICKET_EVENT_TYPES, Action, Facts, event_types, holds
from domain.templates import render
from domain.ticket import Ticket
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangeFields,
    ChangePriority,
    ChangeState,
    ChangeTags,
    Command,
)
from domain.ticket.events import MessageAdded, StateChanged, TicketOpened, TicketSplitFrom
from domain.values import Actor, ActorKind, Priority, TicketState, Visibility
from eventstore.errors import ConcurrencyError
from eventstore.keys import Keyring
from eventstore.memo import TenantMemo
from eventstore.store import UnitOfWork
from eventstore.types import IMPORT_ACTOR_KIND
from handlers.errors import HandlerError
from handlers.rule_mail import queue_rule_mail
from handlers.rule_states import TicketStates
from handlers.tenant_events import record
from handlers.ticket_state import load_ticket
from handlers.tickets import run_command
from projections import rules as read_model
from projections.base import Envelope
from projections.people import load_contact
from projections.tenant_settings import load_settings
from scheduler import jobs

log = logging.getLogger("helpdesk.rules")

NAME = "rules"
WEBHOOK = "webhook.deliver"
ACTED_MAX = 20
"""A batch ends after this many events some rule acted on: the rows their actions
locked are held until the batch commits."""


def rule_actor(rule_id: UUID) -> Actor:
    """The domain actor of a rule's commands."""
    return Actor(kind=ActorKind.RULE, id=str(rule_id))


def in_business_hours(calendar: Calendar, at: datetime) -> bool:
    """Whether ``at`` falls inside the calendar's hours."""
    return business_ms_between(calendar, at, at + timedelta(minutes=1)) > 0


async def ticket_facts(conn: asyncpg.Connection, tenant: TenantId, ticket: Ticket,
                       event: Event | None, calendar: Calendar, at: datetime, *,
                       with_organization: bool = True) -> Facts:
    """The ticket after ``event`` (None: no event, the dry run's "now") as conditions
    see it; without ``with_organization`` (no condition asks), the requester's
    organization is not read."""
    organization = None
    if with_organization and ticket.requester.contact_id is not None:
        contact = await load_contact(conn, tenant, ticket.requester.contact_id)
        organization = None if contact is None else contact.organization_id
    customer_reply = (isinstance(event, MessageAdded) and event.visibility is Visibility.PUBLIC
                      and event.author.kind is ActorKind.CUSTOMER)
    return Facts(
        event_type="" if event is None else event.TYPE, state=ticket.state,
        priority=ticket.priority, channel=ticket.source, group_id=ticket.group_id,
        assignee_id=ticket.assignee, organization_id=organization, tags=frozenset(ticket.tags),
        fields=dict(ticket.fields), public_customer_reply=customer_reply,
        business_hours=in_business_hours(calendar, at))


def note_values(ticket: Ticket, agent_name: str | None) -> dict[str, str | None]:
    """The placeholder values of a ticket (``domain.templates``)."""
    values: dict[str, str | None] = {
        "requester.name": ticket.requester.name, "requester.email": ticket.requester.email,
        "ticket.id": str(ticket.id), "ticket.subject": ticket.subject,
        "agent.name": agent_name}
    for key, value in ticket.fields.items():
        values[f"fields.{key}"] = None if value is None else str(value)
    return values


def action_command(action: Action, ticket: Ticket, actor: Actor, at: datetime,
                   message_id: UUID, agent_name: str | None = None) -> Command | None:
    """The ticket command an action is (None: ``call_webhook``, which is no command)."""
    match action.type:
        case "set_state":
            return ChangeState(to=TicketState(action.value), actor=actor, at=at)
        case "set_priority":
            return ChangePriority(priority=Priority(action.value), actor=actor, at=at)
        case "set_group":
            return Assign(group_id=GroupId(UUID(action.value)), set_group=True,
                          set_agent=False, actor=actor, at=at)
        case "assign":
            agent = None if action.value is None else AgentId(UUID(action.value))
            return Assign(agent_id=agent, actor=actor, at=at)
        case "add_tags":
            return ChangeTags(add=tuple(action.value), actor=actor, at=at)
        case "remove_tags":
            return ChangeTags(remove=tuple(action.value), actor=actor, at=at)
        case "set_fields":
            return ChangeFields(values=dict(action.value), actor=actor, at=at)
        case "add_note":
            return AddMessage(message_id=MessageId(message_id),
                              body=render(action.value, note_values(ticket, agent_name)),
                              visibility=Visibility.INTERNAL, actor=actor, at=at)
    return None


class TicketTimes:
    """When each ticket's clocks for time rules start, from the events of a batch:
    created, last updated, pending since (cleared when it leaves pending), the last
    public reply by the customer and by an agent (``rule_ticket_times``)."""

    def __init__(self) -> None:
        self.seen: dict[UUID, dict[str, Any]] = {}

    def see(self, envelope: Envelope) -> None:
        event = envelope.event
        row = self.seen.setdefault(envelope.stream_id, {"created": None, "pending": False,
                                                        "pending_since": None,
                                                        "customer": None, "agent": None})
        row["updated"] = event.at
        match event:
            case TicketOpened():
                row["created"] = event.at
                if event.author.kind is ActorKind.CUSTOMER:
                    row["customer"] = event.at
            case TicketSplitFrom():
                # Created at the split, as its SLA clocks are; the moved messages' own
                # times are the source's past, not this ticket's replies.
                row["created"] = event.at
            case StateChanged():
                if event.to_state is TicketState.PENDING:
                    row["pending"], row["pending_since"] = True, event.at
                elif event.from_state is TicketState.PENDING:
                    row["pending"], row["pending_since"] = True, None
            case MessageAdded() if event.visibility is Visibility.PUBLIC:
                if event.author.kind is ActorKind.CUSTOMER:
                    row["customer"] = event.at
                elif event.author.kind is ActorKind.AGENT:
                    row["agent"] = event.at

    async def write(self, conn: asyncpg.Connection, tenant: TenantId) -> None:
        await read_model.upsert_ticket_times(conn, tenant, [
            {"ticket_id": ticket_id, "created": row["created"], "updated": row["updated"],
             "pending_changed": row["pending"], "pending_since": row["pending_since"],
             "customer": row["customer"], "agent": row["agent"]}
            for ticket_id, row in self.seen.items()])
        self.seen.clear()


@dataclass
class _Firing:
    """One rule matched on one event in this batch, and where its appends are staged."""

    rule_id: UUID
    ticket_id: UUID
    trigger_seq: int
    depth: int
    at: datetime
    outcome: str
    detail: str | None
    staged: tuple[int, int]


class RuleEngine:
    """The ``rules`` projection: runs the tenant's rules on each ticket event."""

    name = NAME
    handles = TICKET_EVENT_TYPES

    def __init__(self, keyring: Keyring | None, now: Any = None,
                 memo: TenantMemo | None = None) -> None:
        self.keyring = keyring
        self.memo = memo  # the store's (eventstore/memo.py), for the actions' commands
        self.now = now  # a clock's ``now`` for ``fired_at`` (None: the event's time)
        self.states = TicketStates()

    async def reset(self, conn: asyncpg.Connection, tenant_id: TenantId) -> None:
        raise RuntimeError("the rule engine acts; it is never rebuilt")

    async def apply(self, conn: asyncpg.Connection, event: Envelope) -> None:
        await self.apply_batch(conn, event.tenant_id, [event])

    async def apply_batch(self, conn: asyncpg.Connection, tenant_id: TenantId,
                          events: Sequence[Envelope]) -> int | None:
        """Run the rules on ``events`` in order; returns the seq of the event after
        which the batch ended (``ACTED_MAX`` events acted on), None for all of them.
        The ticket times of time rules (``TicketTimes``) are kept for every event
        applied."""
        if not events:
            return None
        times = TicketTimes()
        rules = [r for r in await read_model.active_rules(conn, tenant_id) if r.time is None]
        wanted = [(r, event_types(r.conditions)) for r in rules]
        uses = {c.field for r in rules for c in r.conditions}
        calendar = ((await load_settings(conn, tenant_id)).policy.calendar
                    if "business_hours" in uses else CALENDAR_24x7)
        uow = UnitOfWork(conn, tenant_id, self.keyring, self.memo)
        firings: list[_Firing] = []
        rows: dict[UUID, Ticket] = {}
        if rules:
            # The rows of the tickets whose state memory does not carry on from.
            ids = list({e.stream_id for e in events
                        if not self.states.continues(tenant_id, e)})
            if ids:
                rows = {k: Ticket.model_validate(v) for k, v in
                        (await read_model.ticket_states(conn, tenant_id, ids)).items()}
        acted = 0
        through: int | None = None
        for envelope in events:
            imported = envelope.actor_kind == IMPORT_ACTOR_KIND
            if not imported:
                times.see(envelope)
            if not rules:
                continue
            # Every ticket event moves the memory on, wanted by a rule or not, so the
            # next one that is wanted follows from it.
            ticket = await self.states.after(conn, tenant_id, envelope,
                                             rows.get(envelope.stream_id))
            if imported:
                continue  # history brought from another desk: no rule acts on it
            candidates = [r for r, types in wanted
                          if types is None or envelope.event.TYPE in types]
            if not candidates or ticket is None:
                continue
            facts = await ticket_facts(conn, tenant_id, ticket, envelope.event, calendar,
                                       envelope.event.at,
                                       with_organization="organization_id" in uses)
            matched = [r for r in candidates if holds(r.conditions, facts)]
            if matched and await self._fire(uow, envelope, matched, firings):
                acted += 1
                if acted >= ACTED_MAX:
                    through = envelope.seq
                    break
        await self._commit(uow, firings)
        await times.write(conn, tenant_id)
        return through

    async def _fire(self, uow: UnitOfWork, envelope: Envelope, matched: list[Rule],
                    firings: list[_Firing]) -> bool:
        """Stage the matched rules' actions on the event's ticket; False when every one
        was skipped (its own event)."""
        conn, tenant = uow.conn, uow.tenant_id
        depth = 0
        if envelope.actor_kind == ActorKind.RULE.value:
            depth = await read_model.chain_depth(conn, tenant, envelope.seq)
        acted = False
        for rule in matched:
            if envelope.actor_kind == ActorKind.RULE.value and envelope.actor_id == str(rule.id):
                continue  # never on its own events
            acted = True
            at = self.now() if self.now is not None else envelope.event.at
            mark = uow.mark()
            outcome, detail = "fired", None
            if depth + 1 > CHAIN_DEPTH_MAX:
                outcome, detail = "stopped", f"chain depth {CHAIN_DEPTH_MAX} reached"
                await record(uow, RuleChainStopped(
                    rule_id=rule.id, ticket_id=TicketId(envelope.stream_id),
                    trigger_seq=envelope.seq, depth=depth, at=at))
            else:
                try:
                    async with conn.transaction():  # a savepoint: a refusal undoes the rule
                        notes = await self._act(uow, envelope, rule, at)
                    detail = "; ".join(notes)[:500] or None
                except (DomainError, HandlerError, ConcurrencyError) as exc:
                    uow.undo_to(mark)
                    outcome, detail = "refused", f"{type(exc).__name__}: {exc}"[:500]
                    log.info("rule %s refused on seq %s: %s", rule.id, envelope.seq, detail)
            firings.append(_Firing(rule.id, envelope.stream_id, envelope.seq, depth + 1, at,
                                   outcome, detail, (mark[0], len(uow.staged))))
        return acted

    async def _commit(self, uow: UnitOfWork, firings: list[_Firing]) -> None:
        """Append each firing's staged events under its rule's actor, in order, and
        record the firings with the seqs their events got. The appends go last, just
        before the commit: the tenant head lock they take is held for them only."""
        conn, tenant = uow.conn, uow.tenant_id
        staged = uow.staged
        armed: UUID | None = None
        rows: list[dict[str, Any]] = []
        for firing in firings:
            first, last = firing.staged
            recorded = []
            if last > first:
                if armed != firing.rule_id:  # a run of one rule's firings: armed once
                    await read_model.arm_rule_actor(conn, firing.rule_id)
                    armed = firing.rule_id
                uow.staged = staged[first:last]
                recorded = await uow.flush()
            seqs = [e.seq for e in recorded]
            detail = firing.detail
            if firing.outcome == "stopped" and seqs:
                detail = f"{detail} (RuleChainStopped at seq {seqs[0]})"
                seqs = []
            rows.append({"trigger_seq": firing.trigger_seq, "rule_id": firing.rule_id,
                         "ticket_id": firing.ticket_id, "depth": firing.depth,
                         "first_seq": min(seqs, default=None),
                         "last_seq": max(seqs, default=None), "outcome": firing.outcome,
                         "detail": detail, "fired_at": firing.at})
        await read_model.record_firings(conn, tenant, rows)
        uow.staged = []

    async def _act(self, uow: UnitOfWork, envelope: Envelope, rule: Rule, at: datetime
                   ) -> list[str]:
        """Run the rule's actions; what the firing's detail should say (a mail that
        could not be queued)."""
        actor = rule_actor(rule.id)
        notes: list[str] = []
        for i, action in enumerate(rule.actions):
            if action.type == "call_webhook":
                await jobs.schedule(uow.conn, uow.tenant_id, WEBHOOK, at,
                                    dedupe_key=f"webhook:rule:{rule.id}:{envelope.seq}",
                                    payload={"seq": envelope.seq, "rule_id": str(rule.id)},
                                    max_attempts=8)
                continue
            ticket = await load_ticket(uow.conn, uow.tenant_id, envelope.stream_id)
            if ticket is None:
                return notes
            if action.type == "send_mail":
                # Queued in this batch's transaction: the mail exists once the firing
                # commits, with the checkpoint, and a batch done again makes none twice.
                note = await queue_rule_mail(uow, action.value, ticket,
                                             f"{rule.id}:{envelope.seq}:{i}", at)
                notes += [] if note is None else [note]
                continue
            # Derived: the same firing done again writes the same message.
            message_id = uuid.uuid5(rule.id, f"note:{envelope.seq}:{i}")
            command = action_command(action, ticket, actor, at, message_id)
            if command is not None:
                await run_command(uow, envelope.stream_id, command)
        return notes


__all__ = ["NAME", "RuleEngine", "TicketTimes", "action_command", "in_business_hours",
           "note_values", "rule_actor", "ticket_facts"]
