"""Ticket commands that change two tickets at once: merging one into another, linking
two, and splitting messages off one into a new ticket (docs/teamwork.md); and copying
customers on a ticket, each resolved to its contact first.

Each locks both tickets' rows, the lower id first, so two such commands on the same
pair (a merge of A into B racing one of B into A, say) queue instead of deadlocking,
and a reply on either ticket waits for the merge or is waited for: the merge decides
on the source's whole thread, and a later reply to the source is refused as merged.
A split locks only its source (the new ticket is nobody else's yet): a reply racing it
waits for it, or is read by it, so nothing is lost either way.
Both streams' events are appended in the caller's unit of work, as the follow-up of
``handlers.tickets.execute`` writes two streams. Nothing is committed here.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from domain.errors import NotFound
from domain.events import Event
from domain.ids import MessageId, TenantId, TicketId
from domain.ticket import Ticket
from domain.ticket.commands import ChangeCcs, LinkTicket, MergeTicket, SplitTicket
from domain.ticket.decide import decide_link, decide_merge, decide_split
from domain.ticket.events import TicketSplitFrom
from domain.values import Actor, LinkKind, Requester, UtcDatetime
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from handlers import attaching, mail_in
from handlers.requesters import requester_of_contact, resolve_requester
from handlers.sealing import stored_event
from handlers.sla_policies import sla_policy_for
from handlers.ticket_state import (
    load_for_command,
    load_ticket,
    lock_duplicate_links,
    own_messages,
    thread_message_ids,
)
from handlers.tickets import (
    CommandResult,
    move_sla_timers,
    pending_events,
    run_command,
    stage_contact_events,
)
from projections.inline import apply_inline

CHAIN_MAX = 100
"""The longest chain of duplicates followed when looking for a cycle."""


@dataclass(frozen=True, slots=True)
class PairResult:
    """What a two-ticket command did: the addressed ticket (``ticket``) and the other
    one afterwards, with both documents (``CommandResult`` of each)."""

    ticket: CommandResult
    other: CommandResult


async def change_ccs(uow: UnitOfWork, ticket_id: UUID, add: Sequence[Requester | UUID],
                     remove: Sequence[str], actor: Actor, at: UtcDatetime, *,
                     expected_version: int | None = None) -> CommandResult:
    """Copy customers on the ticket (``add``: each an e-mail with its name, or a
    contact's id) or take them off (``remove``: e-mails), as ``ChangeCcs``. Each one
    added is resolved to its contact first, as an opening resolves its requester: a
    contact id must name one (422 ``unknown_contact``), an e-mail links to the contact
    that holds it or to one created for it. So a CC is a contact, who reads the ticket
    in the portal (``ticket_contacts``, migration 0900). Resolving takes each e-mail's
    requester lock before the command locks the ticket, the order an erasure takes
    them in."""
    people: list[Requester] = []
    for person in add:
        if not isinstance(person, Requester):
            people.append(await requester_of_contact(uow, person))
            continue
        found, created = await resolve_requester(uow.conn, uow.tenant_id, person, at,
                                                 write=uow.write)
        await stage_contact_events(uow, created)
        people.append(found)
    command = ChangeCcs(add=tuple(people), remove=tuple(remove), actor=actor, at=at)
    return await run_command(uow, ticket_id, command, expected_version=expected_version)


async def merge_ticket(uow: UnitOfWork, source_id: UUID, command: MergeTicket, *,
                       expected_version: int | None = None) -> PairResult:
    """Merge ticket ``source_id`` into ``command.into`` (``decide_merge``);
    ``expected_version`` is the source's (an ``If-Match``). A ticket the caller
    cannot see (another tenant's, or out of an agent's group scope) is ``NotFound``."""
    conn, tenant = uow.conn, uow.tenant_id
    if uow.writes:
        await uow.flush_writes()
    target_id = command.into
    target: Ticket | None = None
    if target_id < source_id:  # the lower id first (see the module's docstring)
        target = await load_ticket(conn, tenant, target_id, for_update=True)
    loaded = await load_for_command(conn, tenant, source_id, with_catalog=False)
    if loaded.key is not None:
        uow.held_key(*loaded.key)
    source = loaded.ticket
    if target_id >= source_id and target_id != source_id:
        target = await load_ticket(conn, tenant, target_id, for_update=True)
    elif target_id == source_id:
        target = source
    _expect(source_id, source, expected_version)
    if source is None:
        raise NotFound()
    thread: list[UUID] = [source.id, *source.merged_from]
    ids = tuple(MessageId(m) for m in await thread_message_ids(conn, tenant, thread))
    command = command.model_copy(update={"message_ids": ids})
    policy = await sla_policy_for(conn, tenant, loaded.settings.policy, loaded,
                                  source.requester.contact_id)
    mine, theirs = decide_merge(command, source, target, policy)
    assert target is not None
    return await _write_pair(uow, tenant, (source, mine), (target, theirs))


def new_split_id() -> TicketId:
    """The id of a ticket a split opens."""
    return TicketId(uuid.uuid4())


async def split_ticket(uow: UnitOfWork, source_id: UUID, command: SplitTicket, *,
                       expected_version: int | None = None) -> PairResult:
    """Move ``command.message_ids`` of ticket ``source_id`` to the new ticket
    ``command.ticket_id`` (``decide_split``), their files with them; ``expected_version``
    is the source's. A ticket the caller cannot see is ``NotFound``."""
    conn, tenant = uow.conn, uow.tenant_id
    if uow.writes:
        await uow.flush_writes()
    loaded = await load_for_command(conn, tenant, source_id, with_catalog=False,
                                    memo=uow.memo)
    if loaded.key is not None:
        uow.held_key(*loaded.key)
    source = loaded.ticket
    _expect(source_id, source, expected_version)
    if source is None:
        raise NotFound()
    command = command.model_copy(update={
        "thread": await own_messages(conn, tenant, source_id)})
    policy = await sla_policy_for(conn, tenant, loaded.settings.policy, loaded,
                                  source.requester.contact_id)
    mine, theirs = decide_split(command, source, policy)
    done = await _write(uow, tenant, [(source.id, source, mine),
                                      (command.ticket_id, None, theirs)])
    moved = next(e for e in theirs if isinstance(e, TicketSplitFrom)).message_ids
    await attaching.move(uow, moved, command.ticket_id)
    await mail_in.split_thread(uow, source_id, command.ticket_id, moved, command.at)
    return done


async def link_ticket(uow: UnitOfWork, ticket_id: UUID, command: LinkTicket, *,
                      expected_version: int | None = None) -> PairResult:
    """Link ticket ``ticket_id`` to ``command.ticket_id`` (or take the link off),
    ``decide_link``; ``expected_version`` is the addressed ticket's."""
    conn, tenant = uow.conn, uow.tenant_id
    if uow.writes:
        await uow.flush_writes()
    other_id = command.ticket_id
    duplicate = command.kind in (LinkKind.DUPLICATE_OF, LinkKind.DUPLICATES)
    if duplicate and not command.remove:
        # Duplicate links of the tenant one at a time: two links that each look fine
        # alone (A of B, B of A) would close a cycle if decided side by side.
        await lock_duplicate_links(conn, tenant)
    states: dict[UUID, Ticket | None] = {}
    for locked in sorted({ticket_id, other_id}):  # one ticket when linked to itself
        states[locked] = await load_ticket(conn, tenant, locked, for_update=True)
    here, other = states[ticket_id], states[other_id]
    _expect(ticket_id, here, expected_version)
    if duplicate and not command.remove and here is not None and other is not None:
        original = other if command.kind is LinkKind.DUPLICATE_OF else here
        command = command.model_copy(update={
            "chain": await _duplicate_chain(uow, tenant, original, states)})
    mine, theirs = decide_link(command, here, other)
    assert here is not None and other is not None
    return await _write_pair(uow, tenant, (here, mine), (other, theirs))


def _expect(ticket_id: UUID, state: Ticket | None, expected: int | None) -> None:
    current = 0 if state is None else state.version
    if expected is not None and expected != current:
        raise ConcurrencyError(ticket_id, expected, current)


async def _duplicate_chain(uow: UnitOfWork, tenant: TenantId, original: Ticket,
                           held: dict[UUID, Ticket | None]) -> tuple[TicketId, ...]:
    """The original and the originals it duplicates in turn (up to ``CHAIN_MAX``)."""
    chain = [original.id]
    at: Ticket | None = original
    while at is not None and at.links.duplicate_of is not None and len(chain) < CHAIN_MAX:
        nxt = at.links.duplicate_of
        if nxt in chain:
            break
        chain.append(nxt)
        at = held[nxt] if nxt in held else await load_ticket(uow.conn, tenant, nxt)
    return tuple(chain)


async def _write_pair(uow: UnitOfWork, tenant: TenantId, first: tuple[Ticket, list[Event]],
                      second: tuple[Ticket, list[Event]]) -> PairResult:
    """Write both tickets' decided events: rows, versions, timers, then the appends."""
    return await _write(uow, tenant, [(first[0].id, first[0], first[1]),
                                      (second[0].id, second[0], second[1])])


async def _write(uow: UnitOfWork, tenant: TenantId,
                 pair: list[tuple[UUID, Ticket | None, list[Event]]]) -> PairResult:
    """Write two streams' decided events (a state of None: a stream the events open):
    rows, versions, timers, then the appends."""
    decided = {stream: events for stream, _, events in pair if events}
    states = {stream: state for stream, state, _ in pair}
    if not decided:
        first, second = (CommandResult(s) for _, s, _ in pair if s is not None)
        return PairResult(first, second)
    versions = {s: 0 if states[s] is None else states[s].version  # type: ignore[union-attr]
                for s in decided}
    pending = pending_events(decided, versions)
    after = await apply_inline(uow.conn, tenant, pending, write=uow.write,
                               known={s: states[s] for s in decided})
    for stream, written in after.items():
        await move_sla_timers(uow, states[stream], written.ticket)
    for stream in decided:
        subject = after[stream].ticket.requester.contact_id
        await uow.append(stream, versions[stream], [
            stored_event(e.type, e.data, e.schema_version, stream, subject=subject)
            for e in pending if e.stream_id == stream])

    def result(stream: UUID) -> CommandResult:
        written = after.get(stream)
        if written is None:
            state = states[stream]
            assert state is not None
            return CommandResult(state)
        return CommandResult(written.ticket,
                             [e for e in pending if e.stream_id == stream],
                             documents={stream: written.document})

    return PairResult(result(pair[0][0]), result(pair[1][0]))


__all__ = ["CHAIN_MAX", "PairResult", "change_ccs", "link_ticket", "merge_ticket", "new_split_id",
           "split_ticket"]
