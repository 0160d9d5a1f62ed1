"""The write path of a ticket command, used by routes, job handlers and tests alike.

``run_command`` (and ``post_message``, which first works out who the author is) run
``execute`` in a savepoint and, without an expected version, re-decide on fresh state
when another writer won a race. One ``execute`` runs inside the caller's ``UnitOfWork``
(one transaction, tenant and actor armed) and does, in this order:

1. lock and load the ticket's inline row (commands on one ticket queue on that row
   lock, so they decide on fresh state instead of losing races at append time), with
   the tenant's SLA policy (and, for commands that check field values, the ticket
   field definitions) in the same round trip; a new ticket's requester is resolved to
   a contact (``handlers.requesters``), which may create the contact;
2. ``domain.ticket.decide`` (a customer's message on a closed ticket becomes a follow-up
   ticket via ``domain.ticket.decide.decide_follow_up``: two streams, one transaction);
3. update the inline read models, rendering each written ticket's document once (the
   answer sends those bytes, ``CommandResult.documents``);
4. schedule, move or cancel the SLA timers whose clocks changed;
5. stage the events (a created contact's first): the unit of work sends them in its
   COMMIT's message, where the tenant head lock they take is held for server time only.

Steps 3 and 4 (and a created contact's search row) are written by ``UnitOfWork.write``:
in a unit of work that defers its writes (``UnitOfWork.deferring``, as the HTTP ticket
commands do), they too travel in the COMMIT's message, ahead of the appends, so a
command costs about three round trips: BEGIN with the read, the requester's lookup
for a new ticket, and COMMIT with everything written.

Nothing is committed here: the caller's session commits (with its idempotency record)
or rolls everything back.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from uuid import UUID

import asyncpg

from domain.errors import FollowUpRequired, NotFound, ValidationFailed
from domain.events import Event
from domain.fields import personal_keys
from domain.ids import MessageId, TenantId, TicketId
from domain.mapper import to_stored
from domain.sla import SlaClock
from domain.ticket import Ticket
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangeFields,
    ChangeFollowers,
    ChangeRequester,
    ChangeState,
    Command,
    OpenTicket,
)
from domain.ticket.decide import decide, decide_follow_up
from domain.values import Actor, ActorKind, TicketState, Visibility
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from handlers import attaching, mail_notify
from handlers.requesters import resolve_requester
from handlers.sealing import new_event, stored_event
from handlers.sla_policies import sla_policy_for
from handlers.ticket_state import CommandState, load_for_command, load_ticket
from projections.groups import load_group, unknown_groups
from projections.inline import (
    NewTickets,
    PendingEvent,
    apply_inline,
    fold_new_tickets,
)
from projections.reads import active_agent
from scheduler import jobs

SLA_CHECK = "sla.check"


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command did: the addressed ticket's state afterwards, the events it
    appends at commit (across every stream touched, in append order, each with its
    stream and version) and, when a customer's message on a closed ticket opened one,
    the follow-up ticket."""

    ticket: Ticket
    events: list[PendingEvent] = field(default_factory=list)
    follow_up: Ticket | None = None
    documents: dict[UUID, bytes] = field(default_factory=dict)
    """The API document of each ticket the command wrote, as its row stores it: the
    answer sends these bytes rather than render the ticket again."""


def sla_job_key(ticket_id: UUID, metric: str) -> str:
    """The dedupe key of a ticket's timer for one SLA metric."""
    return f"sla:{ticket_id}:{metric}"


def follow_up_id(closed_id: UUID, message_id: UUID) -> TicketId:
    """Derived, so a retried message opens the same follow-up rather than a second one."""
    return TicketId(uuid.uuid5(closed_id, f"follow-up:{message_id}"))


@dataclass(slots=True)
class HeldStates:
    """What a run of commands in one deferring unit of work left each ticket at: the
    state each command wrote (its row locked by the first command's read, its writes
    deferred to the COMMIT), so the next command on the ticket decides on it rather
    than sending the deferred writes and reading the row back (two round trips a
    command; an imported ticket is eight or so commands, bench/import_zendesk.py).

    Only for a caller whose unit of work writes those tickets through these commands
    alone: a write of the row by anything else would not be seen. Commands that read
    what deferred writes change (a requester's organization, for SLA policies that ask
    for it) still send them first."""

    states: dict[UUID, tuple[CommandState, bool]] = field(default_factory=dict)
    """By ticket: the state, and whether it holds the field definitions."""
    openings: NewTickets | None = None
    """When set, a new ticket's opening is folded here rather than written row by row:
    the caller writes every opening held here with ``write_new_tickets`` (one statement
    a table) once its commands are done, before the COMMIT that appends their events."""


async def _command_state(session: UnitOfWork, ticket_id: UUID, command: Command, *,
                         checks_fields: bool, held: HeldStates | None
                         ) -> tuple[CommandState, bool]:
    """The state ``command`` decides on, held (``HeldStates``) or locked and read, and
    whether it holds the field definitions."""
    kept = None if held is None else held.states.get(ticket_id)
    if kept is not None and (kept[1] or not checks_fields):
        if session.writes and kept[0].sla.asks_organization:
            await session.flush_writes()
        return kept
    if session.writes:
        # An earlier command of this unit of work deferred its writes: read after them.
        await session.flush_writes()
    # A new ticket's requester e-mail is locked in the same round trip (see below).
    email = (command.requester.email if isinstance(command, OpenTicket)
             and command.requester.contact_id is None else None)
    loaded = await load_for_command(session.conn, session.tenant_id, ticket_id,
                                    with_catalog=checks_fields, requester_email=email,
                                    memo=session.memo)
    if loaded.key is not None:
        session.held_key(*loaded.key)
    return loaded, checks_fields


async def execute(
    session: UnitOfWork,
    ticket_id: UUID,
    command: Command,
    *,
    expected_version: int | None = None,
    held: HeldStates | None = None,
) -> CommandResult:
    """Run ``command`` on ticket ``ticket_id`` in ``session``'s transaction.

    ``expected_version`` (an ``If-Match``) must equal the ticket's current version
    (0: the ticket must not exist yet). Raises ``ConcurrencyError`` when it does not,
    or when another writer won a race; domain errors (``NotFound``, ``TicketClosed``,
    ``InvalidTransition``, ``ValidationFailed``, ``AlreadyExists``) as ``decide``
    raises them. A command that changes nothing returns the state and no events.

    A ``ConcurrencyError`` may leave the transaction aborted (a lost insert race):
    to retry in the same transaction, call this inside a savepoint
    (``async with session.conn.transaction():``) and re-run it on fresh state.
    ``held`` keeps what the command leaves the ticket at for the next one
    (``HeldStates``).
    """
    conn, tenant = session.conn, session.tenant_id
    checks_fields = isinstance(command, OpenTicket | ChangeFields) or (
        isinstance(command, ChangeState) and command.to is TicketState.SOLVED)
    loaded, with_catalog = await _command_state(session, ticket_id, command,
                                                checks_fields=checks_fields, held=held)
    state, catalog = loaded.ticket, loaded.catalog
    current = 0 if state is None else state.version
    if expected_version is not None and expected_version != current:
        raise ConcurrencyError(ticket_id, expected_version, current)
    policy = loaded.settings.policy
    if isinstance(command, Assign):
        if command.set_agent and command.agent_id is not None:
            await _check_agent(conn, tenant, command.agent_id)
        command = await _with_group_members(conn, tenant, command, state)
    elif isinstance(command, OpenTicket) and command.group_id is not None:
        await _check_groups(conn, tenant, [command.group_id])
    elif isinstance(command, ChangeFollowers):
        found = [a for a in dict.fromkeys(command.add) if await active_agent(conn, tenant, a)]
        command = command.model_copy(update={"agents": frozenset(found)})
    contact_events: list[tuple[UUID, Event]] = []
    if isinstance(command, OpenTicket) and command.requester.contact_id is None:
        requester, contact_events = await resolve_requester(conn, tenant, command.requester,
                                                            command.at, write=session.write,
                                                            locked=True,
                                                            hold_key=session.held_key)
        command = command.model_copy(update={"requester": requester})
    # The requester a command decides for: a moved ticket's new one (its organization
    # re-matches the ticket's SLA policy).
    contact = (command.requester.contact_id if isinstance(command, OpenTicket | ChangeRequester)
               else None if state is None else state.requester.contact_id)
    policy = await sla_policy_for(conn, tenant, policy, loaded, contact)

    decided: dict[UUID, list[Event]]
    try:
        decided = {ticket_id: decide(command, state, policy, catalog)}
    except FollowUpRequired:
        assert isinstance(command, AddMessage) and state is not None
        if session.keyring is not None and state.requester.contact_id is not None:
            # An erased requester's closed ticket has an empty subject for a follow-up
            # to copy: refuse as erased (410), as the append would, not as invalid.
            await session.keyring.take(conn, tenant, state.requester.contact_id)
        new_id = follow_up_id(ticket_id, command.message_id)
        old_events, new_events = decide_follow_up(command, state, new_id, policy)
        decided = {ticket_id: old_events, new_id: new_events}
    if not any(decided.values()):
        assert state is not None
        return CommandResult(ticket=state)

    versions = {ticket_id: current} | {s: 0 for s in decided if s != ticket_id}
    pending = pending_events(decided, versions)
    if state is None and held is not None and held.openings is not None:
        # A new ticket among others: its rows go with theirs (``HeldStates.openings``).
        folded = fold_new_tickets(pending)
        held.openings.add(folded)
        after = folded.written
    else:
        try:
            after = await apply_inline(conn, tenant, pending, write=session.write,
                                       known={ticket_id: state})
        except asyncpg.UniqueViolationError as exc:
            # A concurrent OpenTicket (or follow-up) with the same id got its row in
            # first (deferred, the same race fails the commit with ``ConcurrencyError``).
            raise ConcurrencyError(ticket_id, current, None) from exc
    for stream, written in after.items():
        before = state if stream == ticket_id else None
        await move_sla_timers(session, before, written.ticket)

    # The contact a new requester created goes first: the ticket's events refer to it.
    await stage_contact_events(session, contact_events)
    for stream in decided:
        # The ticket's requester contact is the data subject of its personal fields.
        subject = after[stream].ticket.requester.contact_id
        await session.append(stream, versions[stream], [
            stored_event(e.type, e.data, e.schema_version, stream, subject=subject,
                         fields=personal_keys(catalog))
            for e in pending if e.stream_id == stream])
    if held is not None:
        for stream, written in after.items():
            held.states[stream] = (replace(loaded, ticket=written.ticket, key=None),
                                   with_catalog)
    follow_up = next((w.ticket for s, w in after.items() if s != ticket_id), None)
    return CommandResult(ticket=after[ticket_id].ticket, events=pending, follow_up=follow_up,
                         documents={s: w.document for s, w in after.items()})


async def stage_contact_events(session: UnitOfWork, contact_events: list[tuple[UUID, Event]]
                               ) -> None:
    """Stage the events of contacts that resolving a requester created
    (``handlers.requesters.resolve_requester``), each at version 0 of its stream, after
    making each new contact's data key (without a look-up: its id is fresh)."""
    for contact_id in dict.fromkeys(c for c, _ in contact_events):
        await session.new_subject(contact_id)
    for contact_id, event in contact_events:
        await session.append(contact_id, 0, [new_event(event, contact_id)])


def pending_events(decided: dict[UUID, list[Event]], versions: dict[UUID, int]
                   ) -> list[PendingEvent]:
    """The decided events of each stream in stored form, numbered on from ``versions``."""
    out: list[PendingEvent] = []
    for stream, events in decided.items():
        for offset, event in enumerate(events, start=1):
            type_, schema_version, data = to_stored(event)
            out.append(PendingEvent(stream, versions[stream] + offset, type_, schema_version,
                                    data))
    return out


async def _check_agent(conn: asyncpg.Connection, tenant: TenantId, agent_id: UUID) -> None:
    if not await active_agent(conn, tenant, agent_id):
        raise ValidationFailed("agent_id is not an active agent of this tenant",
                               field="agent_id")


async def _check_groups(conn: asyncpg.Connection, tenant: TenantId, ids: list[UUID]) -> None:
    unknown = await unknown_groups(conn, tenant, ids)
    if unknown:
        raise ValidationFailed(f"no group {unknown[0]} in this tenant", field="group_id")


async def _with_group_members(conn: asyncpg.Connection, tenant: TenantId, command: Assign,
                              state: Ticket | None) -> Assign:
    """``command`` with the members of the group the ticket will be in, for the domain's
    rule that an assignee belongs to the ticket's group."""
    if state is None:
        return command  # no such ticket: ``decide`` says so
    group = command.group_id if command.set_group else state.group_id
    if group is None:
        return command
    found = await load_group(conn, tenant, group, for_share=True)
    if found is None:
        raise ValidationFailed(f"no group {group} in this tenant", field="group_id")
    return command.model_copy(update={"group_members": frozenset(found.members)})


async def move_sla_timers(session: UnitOfWork, before: Ticket | None, after: Ticket) -> None:
    """One ``sla.check`` job per running, unbreached clock, at its due time; a clock
    that stopped, was fulfilled or already breached has none. The timers that move go
    in one statement; a new ticket (``before`` None) has none to cancel."""
    old: dict[str, SlaClock] = (
        {} if before is None else {str(m): c for m, c in before.clocks.items()}
    )
    due: list[tuple[str, datetime, dict[str, str]]] = []
    gone: list[str] = []
    for metric, clock in after.clocks.items():
        if old.get(str(metric)) == clock:
            continue
        key = sla_job_key(after.id, metric.value)
        if clock.running and clock.breached_at is None and clock.due_at is not None:
            due.append((key, clock.due_at, {"ticket_id": str(after.id), "metric": metric.value}))
        elif before is not None:
            # A new ticket has no timer yet to cancel.
            gone.append(key)
    await jobs.schedule_many(session.conn, session.tenant_id, SLA_CHECK, due,
                             write=session.write)
    # One statement per timer that goes (rarely more than one): an array of keys in
    # one statement read the whole queue under a generic plan (0.7-1.4 ms an opening,
    # bench/write_breakdown.py), where one key is one lookup in the unique index.
    for key in gone:
        await jobs.cancel(session.conn, session.tenant_id, key, write=session.write)


MAX_ATTEMPTS = 5


async def run_command(
    uow: UnitOfWork,
    ticket_id: UUID,
    command: Command,
    *,
    expected_version: int | None = None,
    files: Sequence[UUID] = (),
    claimed: attaching.Claimed | None = None,
    held: HeldStates | None = None,
) -> CommandResult:
    """``execute`` with retries: each attempt runs in a savepoint, so a lost race undoes
    only that attempt and the caller's transaction (its idempotency lock) carries on.

    With ``expected_version`` a conflict is the caller's answer (``ConcurrencyError``
    at once); without it the command is decided again on the winner's state, up to
    ``MAX_ATTEMPTS`` times. ``files`` are uploads the opening message (an
    ``OpenTicket``) carries (handlers/attaching.py); ``claimed``, in their place,
    uploads the caller claimed already (``attaching.claim_openings``, for several
    openings at once). ``held``: see ``HeldStates``.
    """
    if not files and claimed is None:
        return await _with_retries(uow, ticket_id, lambda: _decided(command), expected_version,
                                   held)
    assert isinstance(command, OpenTicket)
    if claimed is None:
        claimed = await attaching.claim(uow, files)
    command = command.model_copy(update={"attachments": claimed.refs})
    result = await _with_retries(uow, ticket_id, lambda: _decided(command), expected_version,
                                 held)
    await _attach(uow, claimed, result, command.at)
    return result


async def _attach(uow: UnitOfWork, claimed: attaching.Claimed, result: CommandResult,
                  at: datetime) -> None:
    """Attach the claimed uploads where the command's event put them."""
    written = {t.id: t.requester.contact_id for t in (result.ticket, result.follow_up)
               if t is not None}
    placed = attaching.placed_files(result.events, written)
    assert placed is not None, "a command given files records them"
    await attaching.attach(uow, claimed, placed, at)


@dataclass(frozen=True, slots=True)
class PostMessage:
    """Add a message; ``author`` None means the ticket's requester (an intake key
    writing for the customer), whose e-mail is read from the ticket."""

    ticket_id: TicketId
    message_id: MessageId
    body: str
    visibility: Visibility
    at: datetime
    author: Actor | None = None
    attachments: tuple[UUID, ...] = ()
    """Upload ids the message carries (handlers/attaching.py)."""


async def requester_actor(uow: UnitOfWork, ticket_id: UUID) -> Actor:
    """The ticket's requester as the customer who acts (``NotFound``: no such ticket)."""
    ticket = await load_ticket(uow.conn, uow.tenant_id, ticket_id)
    if ticket is None:
        raise NotFound()
    return Actor(kind=ActorKind.CUSTOMER, id=ticket.requester.email)


async def post_message(uow: UnitOfWork, command: PostMessage, *,
                       expected_version: int | None = None,
                       held: HeldStates | None = None) -> CommandResult:
    """Post a reply or note (a customer's message on a closed ticket opens a follow-up,
    which the result carries); retried like ``run_command``."""
    if command.attachments and uow.writes:
        # The claim reads the ticket's row and the contact's sealed files, which the
        # writes deferred so far may change (``HeldStates`` skips the flush otherwise).
        await uow.flush_writes()
    claimed = (await attaching.claim(uow, command.attachments, command.ticket_id)
               if command.attachments else None)

    async def build() -> Command:
        author = (command.author if command.author is not None
                  else await requester_actor(uow, command.ticket_id))
        return AddMessage(message_id=command.message_id, body=command.body,
                          visibility=command.visibility, actor=author, at=command.at,
                          attachments=() if claimed is None else claimed.refs)

    result = await _with_retries(uow, command.ticket_id, build, expected_version, held)
    if claimed is not None:
        await _attach(uow, claimed, result, command.at)
    return result


async def _decided(command: Command) -> Command:
    return command


async def _tell_followers(uow: UnitOfWork, command: Command, result: CommandResult
                          ) -> None:
    """Mail the ticket's followers of what the command did (handlers/mail_notify.py)."""
    await mail_notify.queue_follower_notices(uow, result.ticket, result.events,
                                             getattr(command, "actor", None), command.at)


async def _with_retries(uow: UnitOfWork, ticket_id: UUID,
                        build: Callable[[], Awaitable[Command]],
                        expected_version: int | None,
                        held: HeldStates | None = None) -> CommandResult:
    if uow.deferring:
        # Every write goes with the COMMIT, so no race is lost before it and a
        # savepoint has nothing to undo (two round trips saved); a version that moved
        # on is found at commit, where the whole unit of work fails as a conflict.
        command = await build()
        result = await execute(uow, ticket_id, command, expected_version=expected_version,
                               held=held)
        await _tell_followers(uow, command, result)
        return result
    for attempt in range(1, MAX_ATTEMPTS + 1):
        mark = uow.mark()
        try:
            async with uow.conn.transaction():  # a savepoint: a lost race undoes only this
                command = await build()
                result = await execute(uow, ticket_id, command,
                                       expected_version=expected_version, held=held)
                # Followers' mail goes with the attempt that won (none when undone).
                await _tell_followers(uow, command, result)
                return result
        except ConcurrencyError:
            uow.undo_to(mark)  # what the undone attempt staged goes with its rows
            if expected_version is not None or attempt == MAX_ATTEMPTS:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


__all__ = ["MAX_ATTEMPTS", "SLA_CHECK", "CommandResult", "HeldStates", "PostMessage", "execute",
           "follow_up_id", "move_sla_timers", "pending_events", "post_message",
           "requester_actor", "run_command", "sla_job_key", "stage_contact_events"]
