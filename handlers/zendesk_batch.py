"""Imported tickets written a batch at a time (handlers/zendesk_tickets.py): each ticket
decided and folded in memory from its commands, by the domain's own ``decide`` and
``evolve``, then the whole batch's rows written in one transaction with a few statements.

A ticket's commands are those the one-by-one path (``zendesk_tickets._write``) runs
through the command handlers, in the same order, on the same state, with the same
stamps; so the events, their sealing and the rows are what that path writes
(tests/integration/test_zendesk_batch.py compares the two, ticket by ticket). What the
handlers would do and undo for history is left out: the SLA timers a command schedules
are cancelled in the ticket's own transaction there, and no follower is told of a
stamped unit of work's events (handlers/mail_notify.py). What differs is how the rows
go: the inline read models of the batch in one statement a table
(projections/inline.py ``apply_new_tickets``), the ``import_sources`` rows in one, the
events with the COMMIT (one append a ticket), where each command cost a read of the
ticket, its own rows and its own append.

A ticket a command refuses is reported and left out of the batch, as its own
transaction would have rolled back. A batch that fails as a whole (another run imported
one of its tickets first, a conflict at commit) rolls back and its tickets go one by
one, so the report is the one-by-one path's. A ticket whose requester must be resolved
(an e-mail no imported contact holds) goes one by one too: resolving may create a
contact, which the batch does not do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg
import orjson

from domain.errors import DomainError, ValidationFailed
from domain.events import Event
from domain.fields import personal_keys
from domain.ids import MessageId
from domain.ticket import Ticket, evolve
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangeFields,
    ChangeState,
    Command,
    OpenTicket,
)
from domain.ticket.decide import decide
from domain.values import TicketState
from eventstore.errors import EventStoreError
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers import attaching, attachments
from handlers.errors import HandlerError
from handlers.sealing import stored_event
from handlers.sla_policies import sla_policy_for
from handlers.ticket_state import CommandState, load_for_command
from handlers.tickets import pending_events
from handlers.zendesk_records import (
    ACTOR,
    SOURCE,
    SYSTEM,
    AlreadyImported,
    Run,
    stamp,
    target_id,
)
from projections.groups import load_group
from projections.inline import PendingEvent, apply_new_tickets
from projections.reads import active_agent

if TYPE_CHECKING:
    from handlers.zendesk_tickets import Plan

Q = load_queries(Path(__file__).with_name("imports.sql"))

BATCH = 50
"""Tickets a transaction: large enough that a statement a table is a small share of a
ticket's cost, small enough that a batch rolled back and done again one by one is not."""


@dataclass(slots=True)
class Decided:
    """One command's events, as its own ``execute`` would append them."""

    stamp: dict[str, Any]
    version: int
    """The ticket's version before the command."""
    events: list[PendingEvent]
    subject: UUID | None
    """The ticket's requester contact after the command (the data subject)."""
    at: datetime
    """The command's time (its files are attached at it)."""
    claimed: attaching.Claimed | None = None


@dataclass(slots=True)
class Folded:
    """A ticket decided in memory: its commands' events, in order, and its state."""

    plan: Plan
    uploads: dict[str, list[UUID]]
    commands: list[Decided] = field(default_factory=list)
    state: Ticket | None = None


class _Batch:
    """What a batch's commands decide with, read once for the batch: the tenant's
    settings, SLA policies and field catalog, and the agents and groups assignments
    name (groups held FOR SHARE to the commit, as a command holds them)."""

    def __init__(self, uow: UnitOfWork, loaded: CommandState) -> None:
        self.uow = uow
        self.loaded = loaded
        self.agents: dict[UUID, bool] = {}
        self.groups: dict[UUID, frozenset[UUID] | None] = {}

    async def active(self, agent: UUID) -> bool:
        if agent not in self.agents:
            self.agents[agent] = await active_agent(self.uow.conn, self.uow.tenant_id, agent)
        return self.agents[agent]

    async def members(self, group: UUID) -> frozenset[UUID] | None:
        if group not in self.groups:
            found = await load_group(self.uow.conn, self.uow.tenant_id, group, for_share=True)
            self.groups[group] = None if found is None else frozenset(found.members)
        return self.groups[group]

    async def decide(self, folded: Folded, command: Command, stamp_: dict[str, Any],
                     claimed: attaching.Claimed | None = None) -> None:
        """``handlers.tickets.execute`` on the ticket's state in memory: the same checks,
        the same policy, the same decision; the events are kept for the batch's write."""
        state, tenant, conn = folded.state, self.uow.tenant_id, self.uow.conn
        if isinstance(command, Assign):
            command = await self._with_members(command, state)
        contact = (command.requester.contact_id if isinstance(command, OpenTicket)
                   else None if state is None else state.requester.contact_id)
        policy = await sla_policy_for(conn, tenant, self.loaded.settings.policy,
                                      replace(self.loaded, ticket=state), contact)
        events: list[Event] = decide(command, state, policy, self.loaded.catalog)
        if not events:
            return
        ticket_id = folded.plan.ticket_id
        current = 0 if state is None else state.version
        pending = pending_events({ticket_id: events}, {ticket_id: current})
        for event in events:
            state = evolve(state, event)
        assert state is not None
        folded.state = state
        folded.commands.append(Decided(stamp_, current, pending, state.requester.contact_id,
                                       command.at, claimed))

    async def _with_members(self, command: Assign, state: Ticket | None) -> Assign:
        """``tickets._check_agent`` and ``tickets._with_group_members``."""
        if command.set_agent and command.agent_id is not None and not await self.active(
                command.agent_id):
            raise ValidationFailed("agent_id is not an active agent of this tenant",
                                   field="agent_id")
        if state is None:
            return command
        group = command.group_id if command.set_group else state.group_id
        if group is None:
            return command
        members = await self.members(group)
        if members is None:
            raise ValidationFailed(f"no group {group} in this tenant", field="group_id")
        return command.model_copy(update={"group_members": members})

    async def attempt(self, folded: Folded, command: Command, stamp_: dict[str, Any]
                      ) -> str | None:
        """``zendesk_tickets._attempt``: None when the command went through, else why
        it was refused (the ticket carries on without it)."""
        try:
            await self.decide(folded, command, stamp_)
        except (DomainError, HandlerError) as exc:
            return str(exc) or type(exc).__name__
        return None


def batchable(plan: Plan) -> bool:
    """Whether the batch can write ``plan``: its requester is a known contact."""
    return plan.requester.contact_id is not None


async def _fold(run: Run, batch: _Batch, plan: Plan, uploads: dict[str, list[UUID]],
                claims: dict[str, attaching.Claimed]) -> Folded:
    """The ticket's commands, as ``zendesk_tickets._write`` runs them, decided in memory;
    ``claims``: the uploads of each of its comments, claimed."""
    folded = Folded(plan, uploads)
    tenant, zid = run.tenant_id, plan.source_id
    first, *rest = plan.comments
    claimed = claims.get(first.source_id)
    await batch.decide(folded, OpenTicket(
        ticket_id=plan.ticket_id, subject=plan.subject, body=first.body,
        requester=plan.requester, priority=plan.priority, tags=plan.tags,
        actor=first.author, at=plan.at,
        message_id=MessageId(target_id(tenant, "comment", first.source_id)),
        attachments=() if claimed is None else claimed.refs),
        stamp("ticket", zid, first.author_source, recorded=plan.facts), claimed)
    for c in rest:
        claimed = claims.get(c.source_id)
        await batch.decide(folded, AddMessage(
            message_id=MessageId(target_id(tenant, "comment", c.source_id)), body=c.body,
            visibility=c.visibility, actor=c.author, at=c.at,
            attachments=() if claimed is None else claimed.refs),
            stamp("comment", c.source_id, c.author_source), claimed)
    ticket_stamp = stamp("ticket", zid)
    if plan.fields:
        refused = await batch.attempt(folded, ChangeFields(values=plan.fields, actor=SYSTEM,
                                                           at=plan.at), ticket_stamp)
        if refused:
            run.report.skip("ticket.field_value", zid, f"field values refused: {refused}")
    if plan.agent is not None or plan.group is not None:
        refused = await batch.attempt(folded, Assign(
            agent_id=plan.agent, set_agent=plan.agent is not None, group_id=plan.group,
            set_group=plan.group is not None, actor=SYSTEM, at=plan.at), ticket_stamp)
        if refused is not None:
            run.report.skip("ticket.assignee", zid, f"not assigned: {refused}")
            if plan.agent is not None and plan.group is not None:
                await batch.attempt(folded, Assign(set_agent=False, group_id=plan.group,
                                                   set_group=True, actor=SYSTEM, at=plan.at),
                                    ticket_stamp)
    moves = {TicketState.CLOSED: (TicketState.SOLVED, TicketState.CLOSED)}.get(
        plan.state, (plan.state,) if plan.state is not TicketState.OPEN else ())
    for to in moves:
        await batch.decide(folded, ChangeState(to=to, actor=SYSTEM, at=plan.state_at),
                           ticket_stamp)
    return folded


@dataclass(slots=True)
class _File:
    """A comment's file, read and checked, then received into a blob."""

    plan: Plan
    comment: str
    command: attachments.ReceiveFile
    whole: attachments.WholeFile


async def _read_files(run: Run, plans: Sequence[Plan]) -> tuple[list[Plan], list[_File]]:
    """The plans whose files are all readable and acceptable, and their files; a plan
    with a file refused is reported skipped, as its own ``upload_file`` would make it."""
    kept: list[Plan] = []
    files: list[_File] = []
    for plan in plans:
        mine: list[_File] = []
        try:
            for c in plan.comments:
                for name, path in c.files:
                    command = attachments.ReceiveFile(name=name, declared_type=None,
                                                      uploader=ACTOR, at=c.at)
                    data = await asyncio.to_thread(Path(path).read_bytes)
                    if run.file_limits is None:
                        run.file_limits = await attachments.check_upload(
                            run.store, run.tenant_id, command, None)
                    mine.append(_File(plan, c.source_id, command, attachments.check_whole(
                        name, None, data, run.file_limits)))
        except (DomainError, HandlerError, EventStoreError, OSError) as exc:
            run.report.skip("ticket", plan.source_id, str(exc) or type(exc).__name__)
            continue
        kept.append(plan)
        files += mine
    return kept, files


async def _record_uploads(run: Run, uow: UnitOfWork, files: Sequence[_File],
                          received: Sequence[attachments.Received]
                          ) -> dict[str, dict[str, list[UUID]]]:
    """The received files made uploads in the batch's transaction, their rows in one
    round trip: upload ids by comment, by ticket source id."""
    uow.deferring = True
    ids = await attachments.record_uploads(uow, received, ACTOR,
                                           [f.command.at for f in files])
    await uow.flush_writes()
    uow.deferring = False
    out: dict[str, dict[str, list[UUID]]] = {}
    for f, upload_id in zip(files, ids, strict=True):
        out.setdefault(f.plan.source_id, {}).setdefault(f.comment, []).append(upload_id)
    return out


async def write_batch(run: Run, plans: Sequence[Plan]) -> list[Plan]:
    """Write ``plans`` (``zendesk_tickets.Plan``, batchable ones) in one transaction,
    their files received beforehand all at once (``attachments.receive_all``; a blob
    left over by a batch that did not commit is the upload purge's). Returns the plans
    to write one by one instead: all of them (but those another run imported) when the
    batch failed as a whole. A ticket a command refused is reported and not returned."""
    done: list[Folded] = []
    plans, files = await _read_files(run, plans)
    reported = len(run.report.skipped)
    if not plans:
        return []
    try:
        if files:
            assert run.storages is not None
            received = await attachments.receive_all(
                run.store, run.storages, run.tenant_id, ACTOR, [f.whole for f in files],
                [f.command.at for f in files])
        else:
            received = []
        async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
            uploads = await _record_uploads(run, uow, files, received)
            loaded = await load_for_command(uow.conn, run.tenant_id, plans[0].ticket_id,
                                            with_catalog=True, memo=uow.memo)
            batch = _Batch(uow, replace(loaded, ticket=None, key=None))
            claims = await _claim(uow, uploads)
            for plan in plans:
                try:
                    done.append(await _fold(run, batch, plan, uploads.get(plan.source_id, {}),
                                            claims.get(plan.source_id, {})))
                except (DomainError, HandlerError) as exc:
                    # Its own transaction would have rolled back: nothing of it is kept
                    # (what was reported of it stays reported, as there).
                    run.report.skip("ticket", plan.source_id, str(exc) or type(exc).__name__)
            if done:
                await _write(run, uow, done, batch.loaded)
    except (AlreadyImported, EventStoreError, HandlerError, asyncpg.UniqueViolationError):
        # Written by another run meanwhile, a conflict at commit, a file a claim
        # refused: nothing of the batch committed. What another run imported is counted
        # as found; the rest go one by one, each to its own answer (what the batch
        # reported of its tickets goes: the one-by-one path reports it again).
        del run.report.skipped[reported:]
        return await _not_imported(run, plans)
    for folded in done:
        run.done("ticket", folded.plan.source_id, folded.plan.ticket_id)
        run.report.created["comment"] += len(folded.plan.comments)
        run.report.created["attachment"] += sum(len(u) for u in folded.uploads.values())
    return []


async def _write(run: Run, uow: UnitOfWork, done: list[Folded], loaded: CommandState
                 ) -> None:
    """The batch's rows: import rows, read models, files, then the events staged for
    the COMMIT, each command's with its own stamp (``execute``'s order)."""
    tenant = run.tenant_id
    # First, so that a ticket another run imported meanwhile fails the batch here.
    await _record(run, uow, done)
    await apply_new_tickets(uow.conn, tenant, [e for f in done for d in f.commands
                                               for e in d.events])
    attached: list[tuple[attaching.Claimed, attaching.Placed, datetime]] = []
    for folded in done:
        for d in folded.commands:
            if d.claimed is None:
                continue
            placed = attaching.placed_files(d.events, {folded.plan.ticket_id: d.subject})
            assert placed is not None, "a command given files records them"
            attached.append((d.claimed, placed, d.at))
    # From here on nothing is read back: the writes go with the COMMIT, ahead of the
    # appends, as a deferring command's do.
    uow.deferring = True
    await attaching.attach_many(uow, attached)
    personal = personal_keys(loaded.catalog)
    for folded in done:
        for d in folded.commands:
            uow.stamp = d.stamp
            await uow.append(folded.plan.ticket_id, d.version, [
                stored_event(e.type, e.data, e.schema_version, e.stream_id, subject=d.subject,
                             fields=personal) for e in d.events])
    if run.checkpoint is not None:
        for folded in done:
            run.checkpoint("ticket", folded.plan.source_id)


async def _claim(uow: UnitOfWork, uploads: dict[str, dict[str, list[UUID]]]
                 ) -> dict[str, dict[str, attaching.Claimed]]:
    """Every comment's uploads claimed, in one round trip (``attaching.claim_openings``):
    the claims by comment, by ticket source id."""
    keys = [(zid, comment) for zid, comments in uploads.items() for comment in comments]
    if not keys:
        return {}
    claimed = await attaching.claim_openings(uow, [uploads[z][c] for z, c in keys])
    out: dict[str, dict[str, attaching.Claimed]] = {}
    for (zid, comment), got in zip(keys, claimed, strict=True):
        out.setdefault(zid, {})[comment] = got
    return out


async def _not_imported(run: Run, plans: Sequence[Plan]) -> list[Plan]:
    """``plans`` but those another run has imported (counted as found)."""
    async with run.store.unit_of_work(run.tenant_id, ACTOR, readonly=True) as uow:
        found = {r["source_id"]: r["target_id"] for r in await uow.conn.fetch(
            Q["imported_of"], run.tenant_id, SOURCE, "ticket",
            [p.source_id for p in plans])}
    for zid, target in found.items():
        run.mapped[("ticket", zid)] = target
        run.report.existing["ticket"] += 1
    return [p for p in plans if p.source_id not in found]


async def _record(run: Run, uow: UnitOfWork, done: list[Folded]) -> None:
    """The batch's ``import_sources`` rows in one statement (``Run.record``); a ticket
    another run recorded first fails the batch."""
    rows = await uow.conn.fetch(
        Q["record_imports"], run.tenant_id, SOURCE, "ticket",
        [f.plan.source_id for f in done], [f.plan.ticket_id for f in done],
        [orjson.dumps(f.plan.facts).decode() for f in done])
    if len(rows) != len(done):
        raise AlreadyImported("ticket", sorted({f.plan.source_id for f in done}
                                               - {r["source_id"] for r in rows}))


__all__ = ["BATCH", "batchable", "write_batch"]

