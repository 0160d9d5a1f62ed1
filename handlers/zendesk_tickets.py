"""The ticket half of a Zendesk import (handlers/zendesk_import.py): each ticket with its
comments, files, fields, assignment and state, a batch of tickets to a transaction
(handlers/zendesk_batch.py), or one by one through the command handlers (``_write``),
which a batch falls back to.

A ticket becomes, in order: ``OpenTicket`` with its first comment (the requester, tags,
priority, custom field values and the first comment's files), a message for each later
comment (public reply or internal note, by its author, at its time), the assignment to
its group and agent, and the moves to its state (``closed`` by way of ``solved``). A
comment's author is an imported agent (an agent's message) or anyone else with an
e-mail (the customer's). Every command is at the source's time.

What is checked before anything is written, each reported and left out on its own:
an invalid time (the ticket's: the ticket is skipped; a comment's: the comment), an
unknown requester (the ticket), an unknown comment author, a comment dated before its
ticket, a comment file for a ticket the export does not hold, a missing attachment
file, an unknown assignee or group, a field value outside its field's options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from domain.errors import DomainError, ValidationFailed
from domain.fields import FieldDefinition, check_value
from domain.ids import AgentId, ContactId, GroupId, MessageId, TicketId
from domain.ticket.commands import Assign, ChangeFields, ChangeState, Command, OpenTicket
from domain.values import Actor, ActorKind, Priority, Requester, SlaMetric, TicketState, Visibility
from eventstore.errors import EventStoreError
from eventstore.store import UnitOfWork
from handlers.errors import HandlerError
from handlers.tickets import HeldStates, PostMessage, post_message, run_command, sla_job_key
from handlers.zendesk_batch import BATCH, batchable, write_batch
from handlers.zendesk_export import parse_time
from handlers.zendesk_records import (
    ACTOR,
    PRIORITIES,
    STATES,
    SYSTEM,
    AlreadyImported,
    Run,
    definition_of,
    int_key,
    stamp,
    target_id,
    upload_file,
)
from scheduler import jobs


@dataclass(frozen=True, slots=True)
class Comment:
    """A comment as it will be written."""

    source_id: str
    author: Actor
    author_source: str
    body: str
    visibility: Visibility
    at: datetime
    files: tuple[tuple[str, Any], ...] = ()
    """(file name, path) of each of its attachments found in the export."""


@dataclass(slots=True)
class Plan:
    """A ticket as it will be written, once checked."""

    source_id: str
    ticket_id: TicketId
    subject: str
    requester: Requester
    priority: Priority
    tags: tuple[str, ...]
    fields: dict[str, Any]
    at: datetime
    state: TicketState
    state_at: datetime
    comments: list[Comment]
    agent: AgentId | None
    group: GroupId | None
    facts: dict[str, Any] = field(default_factory=dict)


def _author(run: Run, user_id: Any) -> Actor | None:
    agent = run.known("agent", user_id)
    if agent is not None:
        return Actor(kind=ActorKind.AGENT, id=str(agent))
    email = run.emails.get(str(user_id))
    return None if email is None else Actor(kind=ActorKind.CUSTOMER, id=email)


def _facts(ticket: Mapping[str, Any]) -> dict[str, Any]:
    """The source's own SLA measures, kept as it recorded them (Zendesk's metric set)."""
    metrics = ticket.get("metric_set")
    if not isinstance(metrics, dict):
        return {}
    out: dict[str, Any] = {}
    for ours, theirs in (("first_reply_minutes", "reply_time_in_minutes"),
                         ("full_resolution_minutes", "full_resolution_time_in_minutes")):
        value = metrics.get(theirs)
        if isinstance(value, dict) and value.get("calendar") is not None:
            out[ours] = value["calendar"]
    if parse_time(metrics.get("solved_at")) is not None:
        out["solved_at"] = metrics["solved_at"]
    return out


def _fields(run: Run, zid: str, raw: Any,
            definitions: Mapping[str, FieldDefinition | None]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in raw or ():
        fid, value = str(item.get("id")), item.get("value")
        if value is None or value == "" or value == []:
            continue
        d = definitions.get(fid)
        if d is None or (run.known("ticket_field", fid) is None and not run.report.dry_run):
            run.report.skip("ticket.field_value", zid, f"field {fid} was not imported")
            continue
        try:
            values[d.key] = check_value(d, value)
        except ValidationFailed as exc:
            run.report.skip("ticket.field_value", zid,
                            f"field {fid} value {value!r} refused: {exc.message}")
    return values


def _comments(run: Run, zid: str, opened: datetime) -> list[Comment]:
    out: list[Comment] = []
    for c in run.export.comments.get(zid, ()):
        cid = str(c.get("id"))
        at = parse_time(c.get("created_at"))
        if at is None:
            run.report.skip("comment", cid, f"invalid time {c.get('created_at')!r}")
            continue
        if at < opened:
            run.report.skip("comment", cid, f"dated {c.get('created_at')}, before its "
                                            f"ticket {zid} was opened")
            continue
        author = _author(run, c.get("author_id"))
        if author is None:
            run.report.skip("comment", cid, f"unknown author {c.get('author_id')}")
            continue
        body = str(c.get("body") or c.get("plain_body") or "").strip() or "(no text)"
        files: list[tuple[str, Any]] = []
        for a in c.get("attachments") or ():
            path = run.export.attachment_path(a)
            if path is None or not path.is_file():
                run.report.skip("attachment", a.get("id", "?"),
                                f"file {a.get('file_name')!r} of comment {cid} is not in "
                                "the export")
                continue
            if run.storages is None:
                run.report.skip("attachment", a.get("id"), "no file storage to keep it in")
                continue
            files.append((str(a["file_name"]), path))
        visibility = Visibility.PUBLIC if c.get("public", True) else Visibility.INTERNAL
        out.append(Comment(cid, author, str(c.get("author_id")), body, visibility, at,
                           tuple(files)))
    out.sort(key=lambda c: (c.at, int_key(c.source_id)))
    return out


def plan_ticket(run: Run, zid: str, ticket: Mapping[str, Any],
                definitions: Mapping[str, FieldDefinition | None]) -> Plan | None:
    """The ticket as it will be written, or None (reported) when it cannot be;
    ``definitions``: ours of the export's ticket fields, by Zendesk id."""
    at = parse_time(ticket.get("created_at"))
    if at is None:
        run.report.skip("ticket", zid, f"invalid time {ticket.get('created_at')!r}")
        return None
    requester_id = str(ticket.get("requester_id"))
    email = run.emails.get(requester_id)
    if email is None:
        run.report.skip("ticket", zid, f"unknown requester {requester_id}")
        return None
    # None for an agent, or an address a contact of the tenant held before the import:
    # the ticket then goes to whoever holds the e-mail (handlers/requesters.py).
    contact = run.contacts.get(email)
    user = run.export.users.get(requester_id, {})
    requester = Requester(email=email, name=user.get("name") or None,
                          contact_id=ContactId(contact) if contact is not None else None)
    agent: AgentId | None = None
    if ticket.get("assignee_id") is not None:
        found = run.known("agent", ticket["assignee_id"])
        if found is None:
            run.report.skip("ticket.assignee", zid, f"unknown assignee "
                                                    f"{ticket['assignee_id']}; unassigned")
        else:
            agent = AgentId(found)
    group: GroupId | None = None
    if ticket.get("group_id") is not None:
        found = run.known("group", ticket["group_id"])
        if found is None:
            run.report.skip("ticket.group", zid, f"unknown group {ticket['group_id']}")
        else:
            group = GroupId(found)
    state = STATES.get(str(ticket.get("status")), TicketState.OPEN)
    state_at = parse_time(ticket.get("updated_at")) or at
    comments = _comments(run, zid, at)
    if not comments:
        # No usable comment: the description opens the ticket, as the requester's.
        comments = [Comment(f"{zid}:description",
                            Actor(kind=ActorKind.CUSTOMER, id=email), requester_id,
                            str(ticket.get("description") or "").strip() or "(no text)",
                            Visibility.PUBLIC, at)]
    return Plan(zid, TicketId(target_id(run.tenant_id, "ticket", zid)),
                str(ticket.get("subject") or "").strip() or "(no subject)", requester,
                PRIORITIES.get(str(ticket.get("priority")), Priority.NORMAL),
                tuple(str(t) for t in ticket.get("tags") or ()),
                _fields(run, zid, ticket.get("custom_fields"), definitions), at, state,
                max(state_at, comments[-1].at), comments, agent, group, _facts(ticket))


async def import_tickets(run: Run, dry_run: bool, *, one_by_one: bool = False) -> None:
    """Every ticket of the export not imported yet, in Zendesk id order: a batch at a
    time (handlers/zendesk_batch.py), or with ``one_by_one`` each in its own
    transaction through the command handlers (what a batch falls back to)."""
    tickets = run.export.tickets
    definitions = {k: definition_of(k, v) for k, v in run.export.ticket_fields.items()}
    for zid in run.export.comments:
        if zid not in tickets:
            run.report.skip("comment", f"ticket {zid}", f"{len(run.export.comments[zid])} "
                            f"comment(s) of ticket {zid}, which the export does not hold")
    batch: list[Plan] = []
    for n, (zid, ticket) in enumerate(sorted(tickets.items(), key=lambda kv: int_key(kv[0])), 1):
        if run.known("ticket", zid) is not None:
            run.report.existing["ticket"] += 1
            run.tell("ticket", n, len(tickets))
            continue
        plan = plan_ticket(run, zid, ticket, definitions)
        if plan is None:
            run.tell("ticket", n, len(tickets))
            continue
        if dry_run:
            run.done("ticket", zid, plan.ticket_id)
            run.report.created["comment"] += len(plan.comments)
            run.report.created["attachment"] += sum(len(c.files) for c in plan.comments)
            run.tell("ticket", n, len(tickets))
            continue
        if one_by_one or not batchable(plan):
            await _write_batch(run, batch, n - 1, len(tickets))
            await _write_one(run, plan)
            run.tell("ticket", n, len(tickets))
            continue
        batch.append(plan)
        if len(batch) == BATCH:
            await _write_batch(run, batch, n, len(tickets))
    await _write_batch(run, batch, len(tickets), len(tickets))


async def _write_batch(run: Run, batch: list[Plan], n: int, total: int) -> None:
    """The tickets gathered so far, in one transaction (handlers/zendesk_batch.py), and
    those it leaves one by one; ``batch`` is emptied."""
    if not batch:
        return
    left = await write_batch(run, batch)
    for plan in left:
        await _write_one(run, plan)
    batch.clear()
    run.tell("ticket", n, total)


async def _write_one(run: Run, plan: Plan) -> None:
    """``_write``, with what goes wrong reported as the ticket skipped."""
    try:
        await _write(run, plan)
    except AlreadyImported:
        run.report.existing["ticket"] += 1
    except (DomainError, HandlerError, EventStoreError, OSError) as exc:
        run.report.skip("ticket", plan.source_id, str(exc) or type(exc).__name__)


async def _write(run: Run, plan: Plan) -> None:
    """The ticket in one transaction, command by command through the handlers (files
    are received first, each on its own: one left over by a ticket that did not commit
    is the upload purge's)."""
    uploads = {c.source_id: [await upload_file(run, path, name, c.at) for name, path in c.files]
               for c in plan.comments if c.files}
    zid = plan.source_id
    async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
        # The commands' writes wait for the next read or the COMMIT (as the HTTP ticket
        # commands' do): each command saves its savepoint's round trips.
        uow.deferring = True
        # Each command decides on the state the one before left (``HeldStates``):
        # nothing but these commands writes the ticket in this transaction.
        held = HeldStates()
        first, *rest = plan.comments
        uow.stamp = stamp("ticket", zid, first.author_source, recorded=plan.facts)
        await run_command(uow, plan.ticket_id, OpenTicket(
            ticket_id=plan.ticket_id, subject=plan.subject, body=first.body,
            requester=plan.requester, priority=plan.priority, tags=plan.tags,
            actor=first.author, at=plan.at,
            message_id=MessageId(target_id(run.tenant_id, "comment", first.source_id))),
            files=uploads.get(first.source_id, ()), held=held)
        for c in rest:
            uow.stamp = stamp("comment", c.source_id, c.author_source)
            await post_message(uow, PostMessage(
                ticket_id=plan.ticket_id,
                message_id=MessageId(target_id(run.tenant_id, "comment", c.source_id)),
                body=c.body, visibility=c.visibility, at=c.at, author=c.author,
                attachments=tuple(uploads.get(c.source_id, ()))), held=held)
        uow.stamp = stamp("ticket", zid)
        refused = plan.fields and await _attempt(uow, plan, held, ChangeFields(
            values=plan.fields, actor=SYSTEM, at=plan.at))
        if refused:
            run.report.skip("ticket.field_value", zid, f"field values refused: {refused}")
        await _assign(run, uow, plan, held)
        moves = {TicketState.CLOSED: (TicketState.SOLVED, TicketState.CLOSED)}.get(
            plan.state, (plan.state,) if plan.state is not TicketState.OPEN else ())
        for to in moves:
            await run_command(uow, plan.ticket_id, ChangeState(to=to, actor=SYSTEM,
                                                               at=plan.state_at), held=held)
        # History's clocks are not run again: no timer, so no breach, for this ticket.
        for metric in SlaMetric:
            await jobs.cancel(uow.conn, run.tenant_id, sla_job_key(plan.ticket_id,
                                                                   metric.value),
                              write=uow.write)
        await run.record(uow, "ticket", zid, plan.ticket_id, plan.facts)
    run.done("ticket", zid, plan.ticket_id)
    run.report.created["comment"] += len(plan.comments)
    run.report.created["attachment"] += sum(len(u) for u in uploads.values())


async def _attempt(uow: UnitOfWork, plan: Plan, held: HeldStates, command: Command
                   ) -> str | None:
    """Run ``command``: None when it went through, else why it was refused (what it
    staged is undone, and the ticket's transaction carries on). No savepoint: the
    unit of work defers its writes, so a refused command has written nothing; what it
    read (an agent, a group) it only read."""
    mark = uow.mark()
    try:
        await run_command(uow, plan.ticket_id, command, held=held)
    except (DomainError, HandlerError) as exc:
        uow.undo_to(mark)
        return str(exc) or type(exc).__name__
    return None


async def _assign(run: Run, uow: UnitOfWork, plan: Plan, held: HeldStates) -> None:
    """The ticket's group and assignee; an assignee who is not one of the group's
    members is left out (reported), the group kept."""
    if plan.agent is None and plan.group is None:
        return
    refused = await _attempt(uow, plan, held, Assign(
        agent_id=plan.agent, set_agent=plan.agent is not None, group_id=plan.group,
        set_group=plan.group is not None, actor=SYSTEM, at=plan.at))
    if refused is None:
        return
    run.report.skip("ticket.assignee", plan.source_id, f"not assigned: {refused}")
    if plan.agent is not None and plan.group is not None:
        await _attempt(uow, plan, held, Assign(set_agent=False, group_id=plan.group,
                                         set_group=True, actor=SYSTEM, at=plan.at))
