"""Seed the demo tenants through the same handlers as the API, at times relative to now.

Only creating a tenant is the operator's (as the owner role, like ``helpdesk tenants
create``). Everything after is done as the API would do it, over the runtime role's
store: the tenant's first admin key adds the agents, gives each a password (to sign
in to the console with, printed like the keys) and issues their keys; each
ticket command runs in a unit of work of its own, stamped with the key that would
have sent it (an agent's own key, or the intake key writing for a customer); SLA
checks and sweeps run as the scheduler does, with its actor.

Time is injected: every command carries its ``at``, computed from the moment of
seeding, so the SLA clocks and analytics look current whenever the seed runs. The
seed plays one timeline, in time order, across every ticket of a tenant:

* its customer companies first (each customer's first ticket creates the contact,
  which joins its company by its e-mail's domain), a group per team of agents and two
  ticket fields the intake fills in (the category of the request and whether it stops
  the customer's business);
* each ticket goes into its team's group when one of the team takes it (a ticket
  handed to someone outside the team leaves the group);
* each placement's opening and steps, up to now (later steps are not played);
* an SLA check at the due time of every clock a command left running, as the
  ``sla.check`` job would run it (a clock that moved or was met decides nothing);
* the tenant's sweep every six hours, as the hourly job would find the tickets.

A refused command is a mistake in a story and stops the seed: nothing is skipped
silently. The same plans at another moment give the same desk, shifted in time.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from uuid import UUID

from domain.field_definitions import DefineField
from domain.fields import FieldOption, FieldType
from domain.group import CreateGroup
from domain.ids import AgentId, GroupId, MessageId, TenantId, TicketId
from domain.tenant_settings import ReplaceSettings
from domain.ticket import Ticket
from domain.ticket.commands import (
    Assign,
    ChangePriority,
    ChangeState,
    ChangeTags,
    CheckSla,
    Command,
    OpenTicket,
)
from domain.values import (
    Actor,
    ActorKind,
    Priority,
    Requester,
    Role,
    Source,
    TicketState,
    Visibility,
)
from eventstore.store import EventStore
from eventstore.types import SYSTEM, StoreActor
from handlers.agents import AddAgent, add_agent
from handlers.api_keys import IssuedKey, IssueKey, issue_key
from handlers.credentials import Passwords, new_password
from handlers.demo import harbor, tidewater
from handlers.demo.files import attach_demo_files
from handlers.demo.plan import DEMO_SITE, Placement, Plan, Step, Story, span
from handlers.groups import create_group
from handlers.mailboxes import CreateMailbox, create_mailbox
from handlers.organizations import NewOrganization, create_organization
from handlers.sessions import store_password
from handlers.sweep import sweep_tenant
from handlers.tenant_settings import get_settings, replace_settings
from handlers.tenants import create_tenant_as_operator
from handlers.ticket_fields import define_field
from handlers.tickets import CommandResult, PostMessage, post_message, run_command

PLANS: tuple[Plan, ...] = (tidewater.PLAN, harbor.PLAN)
SWEEP_EVERY = timedelta(hours=6)
CHECK_DELAY = timedelta(minutes=1)
"""How long after a clock's due time its check runs (a scheduler is not instant)."""
CATEGORY = "category"
IMPACT = "business_impact"
"""The demo's ticket fields: a dropdown of the teams' work and a checkbox."""


@dataclass(frozen=True, slots=True)
class DemoKey:
    """An API key of a demo tenant; ``agent`` and ``email`` name the person it acts as,
    who signs in with ``email`` and ``password``."""

    role: str
    name: str
    secret: str
    agent: str | None = None
    email: str | None = None
    password: str | None = None


@dataclass(frozen=True, slots=True)
class DemoTenant:
    tenant_id: TenantId
    name: str
    keys: tuple[DemoKey, ...]
    tickets: int
    slug: str = ""

    def key(self, role: str) -> DemoKey:
        """The first key of ``role`` (people's keys come first)."""
        return next(k for k in self.keys if k.role == role)


def _light_passwords() -> Passwords:
    # The demo's passwords are printed in the clear; a sign-in rehashes each with the
    # serving process's parameters anyway.
    return Passwords(memory_kib=1024, time_cost=1)


async def seed_demo(owner_dsn: str, store: EventStore, now: datetime,
                    plans: Sequence[Plan] = PLANS, *,
                    passwords: Passwords | None = None) -> list[DemoTenant]:
    """Create one tenant per plan (operator, as ``owner_dsn``) and play its stories
    through ``store`` (the runtime role), with ``now`` as the moment of seeding.

    Takes the store: a demo is thousands of commands, each in its own unit of work (as
    the API would run them), committed as it goes."""
    hasher = passwords or _light_passwords()
    return [await seed_plan(owner_dsn, store, plan, now, hasher) for plan in plans]


async def seed_plan(owner_dsn: str, store: EventStore, plan: Plan, now: datetime,
                    passwords: Passwords | None = None) -> DemoTenant:
    start = now - plan.history
    tenant = await create_tenant_as_operator(owner_dsn, plan.name, at=start)
    await _brand(store, tenant.tenant_id, tenant.admin_key, plan, start)
    await _mailbox(store, tenant.tenant_id, tenant.admin_key, plan, start)
    cast = await _hire(store, tenant.tenant_id, tenant.admin_key, plan, start,
                       passwords or _light_passwords())
    await _organize(store, tenant.tenant_id, tenant.admin_key, plan, start)
    groups = await _teams(store, tenant.tenant_id, tenant.admin_key, plan, cast, start)
    await _define_fields(store, tenant.tenant_id, tenant.admin_key, plan, start)
    desk = _Desk(store, tenant.tenant_id, plan, cast, groups, now)
    await desk.play(start)
    staff = next(h for h in cast.keys if plan.agent(h).role is Role.AGENT)
    await attach_demo_files(store, tenant.tenant_id, _as(cast.keys[staff]),
                            cast.agents[staff], now)
    people = tuple(DemoKey(k.role, k.name, k.secret, plan.agent(h).name, plan.agent(h).email,
                           cast.passwords[h])
                   for h, k in cast.keys.items())
    machines = tuple(DemoKey(k.role, k.name, k.secret) for k in cast.machines.values())
    first = tenant.admin_key
    return DemoTenant(tenant.tenant_id, plan.name,
                      (*people, *machines, DemoKey(first.role, first.name, first.secret)),
                      desk.opened, tenant.slug)


async def _brand(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                 at: datetime) -> None:
    """The tenant's colour, and the demo site as its widget's origin, as over
    ``PUT /v1/settings``."""
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        current = await get_settings(uow)
        await replace_settings(uow, ReplaceSettings(
            settings=replace(current.value, brand_colour=plan.colour,
                             widget_origins=(DEMO_SITE,)), at=at))


async def _mailbox(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                   at: datetime) -> None:
    """The support address, as over ``POST /v1/mailboxes``: dormant, with no SMTP or
    IMAP server, so the demo mails no one and polls nothing (an admin may give it
    servers; its inbound route takes mail as it is)."""
    domain = plan.agents[0].email.partition("@")[2]
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        await create_mailbox(uow, CreateMailbox(address=f"support@{domain}",
                                                name=f"{plan.name} support", smtp=None, at=at))


async def _organize(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                    at: datetime) -> None:
    """The customer companies, added by the first admin key as over
    ``POST /v1/organizations``: each customer's first ticket then creates the contact,
    which joins its company by the e-mail's domain."""
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        for org in plan.organizations:
            await create_organization(uow, NewOrganization(name=org.name, domains=(org.domain,),
                                                           at=at))


async def _teams(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                 cast: _Cast, at: datetime) -> dict[str, _Team]:
    """A group per team, its members the team's agents, as over ``POST /v1/groups``."""
    teams: dict[str, _Team] = {}
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        for team in sorted({t for a in plan.agents for t in a.teams}):
            members = frozenset(a.handle for a in plan.agents if team in a.teams)
            group = await create_group(uow, CreateGroup(
                group_id=GroupId(uuid.uuid4()), name=team.title(),
                members=tuple(AgentId(cast.agents[m]) for m in sorted(members)), at=at))
            teams[team] = _Team(GroupId(group.id), members)
    return teams


async def _define_fields(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                         at: datetime) -> None:
    """Two ticket fields the intake fills in, as over ``POST /v1/ticket-fields``."""
    categories = sorted({story.team for story in plan.stories.values()})
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        await define_field(uow, DefineField(
            key=CATEGORY, title="Category", type=FieldType.DROPDOWN, intake=True, at=at,
            options=tuple(FieldOption(value=c, title=c.title()) for c in categories)))
        await define_field(uow, DefineField(
            key=IMPACT, title="Stops the business", type=FieldType.CHECKBOX, intake=True,
            at=at))


@dataclass(frozen=True, slots=True)
class _Team:
    group_id: GroupId
    members: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Cast:
    agents: dict[str, UUID]
    keys: dict[str, IssuedKey]
    machines: dict[Role, IssuedKey]
    passwords: dict[str, str]

    def handle_of(self, agent_id: UUID | None) -> str | None:
        return next((h for h, a in self.agents.items() if a == agent_id), None)


async def _hire(store: EventStore, tenant_id: TenantId, admin: IssuedKey, plan: Plan,
                at: datetime, hasher: Passwords) -> _Cast:
    """The agents, their passwords and keys, and the keys of no person, added by the
    tenant's first admin key as over ``POST /v1/agents`` and ``POST /v1/api-keys``."""
    agents: dict[str, UUID] = {}
    keys: dict[str, IssuedKey] = {}
    machines: dict[Role, IssuedKey] = {}
    passwords = {agent.handle: new_password() for agent in plan.agents}
    hashes = {handle: hasher.hash(pw) for handle, pw in passwords.items()}
    async with store.unit_of_work(tenant_id, _as(admin)) as uow:
        for agent in plan.agents:
            row = await add_agent(uow, AddAgent(email=agent.email, name=agent.name,
                                                role=agent.role, at=at))
            agents[agent.handle] = row["id"]
            await store_password(uow, row["id"], hashes[agent.handle], at)
            keys[agent.handle] = await issue_key(uow, IssueKey(
                name=f"{agent.name}'s key", role=agent.role, at=at, agent_id=row["id"]))
        for machine in plan.keys:
            machines[machine.role] = await issue_key(uow, IssueKey(
                name=machine.name, role=machine.role, at=at))
    if Role.INTAKE not in machines:
        raise ValueError(f"plan {plan.name!r} needs an intake key: customers write with it")
    return _Cast(agents, keys, machines, passwords)


@dataclass
class _Run:
    """One placement being played: the ticket it is on now (a follow-up replaces a
    closed one) and who has it."""

    placement: Placement
    story: Story
    ticket_id: TicketId
    duty: str
    assignee: str | None = None
    group_id: GroupId | None = None


Action = Callable[[datetime], Awaitable[None]]


@dataclass
class _Desk:
    store: EventStore
    tenant_id: TenantId
    plan: Plan
    cast: _Cast
    teams: dict[str, _Team]
    now: datetime
    opened: int = 0
    _timeline: list[tuple[datetime, int, Action]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def _at(self, when: datetime, action: Action) -> None:
        if when <= self.now:
            heapq.heappush(self._timeline, (when, next(self._order), action))

    async def play(self, start: datetime) -> None:
        for index, placement in enumerate(self.plan.placements):
            story = self.plan.stories[placement.story]
            team = [a.handle for a in self.plan.agents if story.team in a.teams]
            run = _Run(placement, story, TicketId(uuid.uuid4()),
                       team[index % len(team)] if team else self.plan.agents[0].handle)
            self._place(run, self.now - span(placement.ago))
        sweep = start + SWEEP_EVERY
        while sweep <= self.now:
            self._at(sweep, self._sweep)
            sweep += SWEEP_EVERY
        while self._timeline:
            when, _, action = heapq.heappop(self._timeline)
            await action(when)

    def _place(self, run: _Run, opened: datetime) -> None:
        async def open_(at: datetime) -> None:
            await self._open(run, at)

        self._at(opened, open_)
        when = opened
        for step in run.story.steps:
            when += step.after
            self._at(when, self._step_action(run, step))

    def _step_action(self, run: _Run, step: Step) -> Action:
        async def act(at: datetime) -> None:
            await self._step(run, step, at)

        return act

    # -- commands, each in its own unit of work ---------------------------------------

    async def _run(self, actor: StoreActor, run: _Run | None,
                   command: Command | PostMessage, ticket_id: TicketId) -> None:
        async with self.store.unit_of_work(self.tenant_id, actor) as uow:
            if isinstance(command, PostMessage):
                result = await post_message(uow, command)
            else:
                result = await run_command(uow, ticket_id, command)
        self._after(result, run)

    def _after(self, result: CommandResult, run: _Run | None) -> None:
        if result.follow_up is not None:
            self.opened += 1
            if run is not None:  # the story goes on on the follow-up ticket
                run.ticket_id = result.follow_up.id
        for ticket in (result.ticket, result.follow_up):
            if ticket is not None:
                self._schedule_checks(ticket)
        if run is not None:
            current = result.follow_up or result.ticket
            run.assignee = self.cast.handle_of(current.assignee)
            run.group_id = current.group_id

    def _schedule_checks(self, ticket: Ticket) -> None:
        for metric, clock in ticket.clocks.items():
            # A clock due later than now is left to the real scheduler: its job is
            # in the queue, at its due time.
            if (clock.running and clock.breached_at is None and clock.due_at is not None
                    and clock.due_at <= self.now):
                check = CheckSla(metric=metric, at=min(clock.due_at + CHECK_DELAY, self.now))

                async def check_(at: datetime, tid: TicketId = ticket.id,
                                 command: CheckSla = check) -> None:
                    await self._run(SYSTEM, None, command, tid)

                self._at(check.at, check_)

    async def _sweep(self, at: datetime) -> None:
        await sweep_tenant(self.store, self.tenant_id, at)

    def _agent(self, handle: str) -> Actor:
        return Actor(kind=ActorKind.AGENT, id=str(self.cast.agents[handle]))

    async def _open(self, run: _Run, at: datetime) -> None:
        person = self.plan.customers[run.placement.customer]
        story = run.story
        source = run.placement.source or story.source
        if source is Source.PHONE:  # an agent takes the call and opens the ticket
            key, actor = self.cast.keys[run.duty], self._agent(run.duty)
        else:  # the intake integration opens it for the customer
            key = self.cast.machines[Role.INTAKE]
            actor = Actor(kind=ActorKind.CUSTOMER, id=person.email)
        command = OpenTicket(
            ticket_id=run.ticket_id, subject=story.subject, body=story.body,
            requester=Requester(email=person.email, name=person.name),
            priority=run.placement.priority or story.priority, source=source,
            tags=story.tags, actor=actor, at=at,
            fields={CATEGORY: story.team,
                    IMPACT: (run.placement.priority or story.priority) in _PRESSING})
        self.opened += 1
        await self._run(_as(key), run, command, run.ticket_id)

    async def _step(self, run: _Run, step: Step, at: datetime) -> None:
        tid = run.ticket_id
        if step.kind == "customer":
            await self._run(_as(self.cast.machines[Role.INTAKE]), run, PostMessage(
                ticket_id=tid, message_id=MessageId(uuid.uuid4()), body=step.text,
                visibility=Visibility.PUBLIC, at=at), tid)
            return
        if step.kind == "assign":
            to = step.value or run.duty
            by = step.by or to  # people take tickets themselves
            team = self.teams.get(run.story.team)
            group = team.group_id if team is not None and to in team.members else None
            command: Command | PostMessage = Assign(
                agent_id=AgentId(self.cast.agents[to]), group_id=group,
                set_group=group != run.group_id, actor=self._agent(by), at=at)
        else:
            by = step.by or run.assignee or run.duty
            actor = self._agent(by)
            if step.kind in ("reply", "note"):
                command = PostMessage(
                    ticket_id=tid, message_id=MessageId(uuid.uuid4()), body=step.text,
                    visibility=Visibility.PUBLIC if step.kind == "reply"
                    else Visibility.INTERNAL, at=at, author=actor)
            elif step.kind == "state":
                assert step.value is not None
                command = ChangeState(to=TicketState(step.value), reason=step.text or None,
                                      actor=actor, at=at)
            elif step.kind == "priority":
                assert step.value is not None
                command = ChangePriority(priority=Priority(step.value), actor=actor, at=at)
            else:
                command = ChangeTags(add=step.add, remove=step.remove, actor=actor, at=at)
        await self._run(_as(self.cast.keys[by]), run, command, tid)


_PRESSING = frozenset({Priority.HIGH, Priority.URGENT})


def _as(key: IssuedKey) -> StoreActor:
    """The actor the database stamps on what a request with ``key`` appends."""
    return StoreActor("api_key", str(key.id))


__all__ = ["PLANS", "DemoKey", "DemoTenant", "seed_demo", "seed_plan"]
