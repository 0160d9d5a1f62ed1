"""Inline read models of ticket streams: ``tickets`` and ``messages``.

Written in the command's own transaction, from the events it is about to append (or
from recorded events, when rebuilding), so a client always reads its own writes. The
``tickets`` row keeps the whole folded state (``state_json``, which the next command
decides on) and the document the API sends (``view``, passed through by lists and
gets) next to the columns that list filters use, so nothing has to fold the stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

import asyncpg
import orjson

from domain.attachment import AttachmentRef
from domain.errors import CorruptStream
from domain.events import Event
from domain.ids import TenantId, TicketId
from domain.mapper import from_stored
from domain.ticket import Ticket, evolve
from domain.ticket.events import (
    TICKET_EVENTS,
    CcsChanged,
    FieldValuesChanged,
    MessageAdded,
    RequesterChanged,
    TagsChanged,
    TicketMergeReceived,
    TicketOpened,
    TicketSplit,
    TicketSplitFrom,
)
from domain.values import Visibility
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.search import index_new_ticket, index_ticket_message, index_tickets
from projections.views import TICKET_KEYS, ticket_json

Q = load_queries(Path(__file__).with_name("queries.sql"))
VQ = load_queries(Path(__file__).with_name("ticket_versions.sql"))

FOREVER = datetime.max.replace(tzinfo=UTC)
"""Sent by asyncpg as Postgres' 'infinity'."""
_TICKET_TYPES = frozenset(cls.TYPE for cls in TICKET_EVENTS)
# Events that change the head of a ticket's search document (subject, tags, requester):
# it is recomputed from the rows. A message alone is appended to it.
# A split moves messages between two tickets: both are recomputed too. A merge's target
# takes the merged tickets' messages into its document (migration 0911).
_HEAD_TYPES = frozenset({TicketOpened.TYPE, TagsChanged.TYPE, RequesterChanged.TYPE,
                         TicketSplit.TYPE, TicketSplitFrom.TYPE, TicketMergeReceived.TYPE})
# Events that change who reads a ticket in the portal (its requester, its CCs, the
# tickets merged into it): its ticket_contacts rows are written again (migration 0900).
_READER_TYPES = frozenset({TicketOpened.TYPE, TicketSplitFrom.TYPE, RequesterChanged.TYPE,
                           CcsChanged.TYPE, TicketMergeReceived.TYPE})


class StoredEvent(Protocol):
    """What the inline projection needs of an event: a ``RecordedEvent`` has it, and
    so has an event about to be appended (``PendingEvent``)."""

    @property
    def stream_id(self) -> UUID: ...
    @property
    def version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def schema_version(self) -> int: ...
    @property
    def data(self) -> dict[str, Any]: ...


class PendingEvent:
    """An event decided for ``stream_id`` at ``version`` but not appended yet."""

    __slots__ = ("data", "schema_version", "stream_id", "type", "version")

    def __init__(self, stream_id: UUID, version: int, type_: str, schema_version: int,
                 data: dict[str, Any]) -> None:
        self.stream_id = stream_id
        self.version = version
        self.type = type_
        self.schema_version = schema_version
        self.data = data


def state_to_json(ticket: Ticket) -> dict[str, Any]:
    """The stored form of a folded ticket (read model JSON, not event JSON)."""
    return ticket.model_dump(mode="json")


def state_from_json(doc: dict[str, Any]) -> Ticket:
    """Read a ``tickets.state_json`` value back."""
    return Ticket.model_validate(doc)


async def _stored_ticket(conn: asyncpg.Connection, tenant_id: TenantId,
                         ticket_id: UUID) -> Ticket | None:
    """The ticket as its inline row holds it, for events applied without the state
    their command decided on (a rebuild, an upgrade)."""
    row = await conn.fetchrow(Q["ticket_state"], tenant_id, ticket_id)
    return None if row is None else state_from_json(row["state_json"])


@dataclass(frozen=True, slots=True)
class WrittenTicket:
    """A ticket as ``apply_inline`` wrote its row: the folded state, and the bytes of
    its API document (``tickets.view``), rendered once and sent as they are."""

    ticket: Ticket
    document: bytes


async def apply_inline(
    conn: asyncpg.Connection, tenant_id: TenantId, events: Sequence[StoredEvent], *,
    write: Write | None = None, known: dict[UUID, Ticket | None] | None = None,
) -> dict[UUID, WrittenTicket]:
    """Apply ticket-stream events to ``tickets`` and ``messages``; returns each touched
    ticket's new state and document. Events of other streams are ignored.

    Events of one stream must come in version order and continue the row's version;
    anything else means the read model and the stream disagree, and is refused.

    ``known`` holds states the caller has read already (and holds locked), so they are
    not read again; ``write`` runs the writes (``eventstore.types.Write``; default: at
    once on ``conn``). A deferred row update (``write`` answers None) cannot report a
    row that moved on, so ``known`` states must be locked rows (a command's ``FOR
    UPDATE`` read) whose stream versions the appends check.
    """
    run = write or conn.execute
    states: dict[UUID, Ticket | None] = dict(known or {})
    touched: set[UUID] = set()
    inserted: set[UUID] = set()
    with_fields: set[UUID] = set()
    messages: list[tuple[TicketId, int, Event]] = []
    made: list[Ticket] = []  # every version the events make, in order
    for stored in events:
        if stored.type not in _TICKET_TYPES:
            continue
        event = from_stored(stored.type, stored.schema_version, stored.data)
        stream = stored.stream_id
        touched.add(stream)
        if stream not in states:
            states[stream] = (
                None if isinstance(event, TicketOpened | TicketSplitFrom)
                else await _stored_ticket(conn, tenant_id, stream)
            )
        before = states[stream]
        expected = 1 if before is None else before.version + 1
        if stored.version != expected:
            raise CorruptStream(
                f"inline ticket {stream} at version {expected - 1} cannot take "
                f"event version {stored.version}"
            )
        after = evolve(before, event)
        states[stream] = after
        made.append(after)
        if before is None:
            inserted.add(stream)
        if isinstance(event, FieldValuesChanged) or (
                isinstance(event, TicketOpened | TicketSplitFrom) and event.fields):
            with_fields.add(stream)
        messages.append((TicketId(stream), stored.version, event))
    out: dict[UUID, WrittenTicket] = {}
    for stream, ticket in states.items():
        if stream not in touched:
            continue
        assert ticket is not None
        document = await _write_ticket(conn, tenant_id, ticket, insert=stream in inserted,
                                       previous=_first_version(events, stream) - 1,
                                       write=write)
        if stream in with_fields:
            # Only commands that touch fields pay for this (the list filters on it).
            await run(Q["set_ticket_fields"], tenant_id, ticket.id,
                      state_to_json(ticket)["fields"])
        out[stream] = WrittenTicket(ticket, document)
    for kept in made:
        final = out[kept.id]
        await _write_version(run, tenant_id, kept, final.document
                             if kept.version == final.ticket.version else None)
    readers = sorted({e.stream_id for e in events if e.type in _READER_TYPES})
    if readers:
        await _write_readers(run, tenant_id, [out[t].ticket for t in readers])
    for stored in events:
        if stored.type == TicketMergeReceived.TYPE:
            merged = from_stored(stored.type, stored.schema_version, stored.data)
            assert isinstance(merged, TicketMergeReceived)
            await run(Q["hold_merged"], tenant_id, stored.stream_id, list(merged.merged_ids),
                      merged.at)
    # Messages after their tickets' rows: a customer's transaction may only write a
    # message on a ticket row it can see as its own (row-level security, migration 0460),
    # and a new ticket's row must exist for its first message.
    for ticket_id, version, event in messages:
        await _insert_message(run, tenant_id, ticket_id, version, event)
    # The search index: a changed head is recomputed from the rows just written (which
    # include the batch's messages); a message on a ticket whose head stayed is
    # appended alone, so a reply's cost does not grow with its thread.
    whole = {e.stream_id for e in events if e.type in _HEAD_TYPES}
    # A ticket opened by this batch and nothing else of it: indexed from its values.
    opened = {stream for stream in whole & inserted
              if [e.type for e in events if e.stream_id == stream
                  and e.type in _TICKET_TYPES] == [TicketOpened.TYPE]}
    for ticket_id, _, event in messages:
        if isinstance(event, TicketOpened) and ticket_id in opened:
            t = out[ticket_id].ticket
            await index_new_ticket(tenant_id, ticket_id, t.subject, t.tags, t.requester.name,
                                   t.requester.email, event.body, write=run)
    await index_tickets(conn, tenant_id, sorted(whole - opened), write=run)
    for ticket_id, _, event in messages:
        if isinstance(event, MessageAdded) and ticket_id not in whole:
            await index_ticket_message(tenant_id, ticket_id, event.body,
                                       event.visibility is Visibility.PUBLIC, write=run)
    return out


@dataclass(slots=True)
class NewTickets:
    """New tickets folded from their events (``fold_new_tickets``), waiting to be
    written by ``write_new_tickets``: each ticket's final state with its document,
    every version the events make, in order, and the messages with their versions."""

    written: dict[UUID, WrittenTicket] = field(default_factory=dict)
    made: list[Ticket] = field(default_factory=list)
    messages: list[tuple[UUID, int, Event]] = field(default_factory=list)

    def add(self, other: NewTickets) -> None:
        """Take ``other``'s tickets in too (none may be held here already)."""
        assert not self.written.keys() & other.written.keys(), "a new ticket folded twice"
        self.written |= other.written
        self.made += other.made
        self.messages += other.messages


def fold_new_tickets(events: Sequence[StoredEvent]) -> NewTickets:
    """The tickets these events open, folded by ``evolve`` in memory, nothing written.
    Each stream must begin here with ``TicketOpened``; events that touch other tickets'
    rows (splits, merges) are refused, as anything not a new ticket's is."""
    states: dict[UUID, Ticket] = {}
    made: list[Ticket] = []
    messages: list[tuple[UUID, int, Event]] = []
    for stored in events:
        if stored.type not in _TICKET_TYPES:
            continue
        event = from_stored(stored.type, stored.schema_version, stored.data)
        stream = stored.stream_id
        before = states.get(stream)
        if (before is None) != isinstance(event, TicketOpened) or isinstance(
                event, TicketSplitFrom | TicketSplit | TicketMergeReceived):
            raise CorruptStream(f"ticket {stream}: {stored.type} is not a new ticket's event")
        expected = 1 if before is None else before.version + 1
        if stored.version != expected:
            raise CorruptStream(f"inline ticket {stream} at version {expected - 1} cannot "
                                f"take event version {stored.version}")
        after = evolve(before, event)
        states[stream] = after
        made.append(after)
        messages.append((stream, stored.version, event))
    return NewTickets({t: WrittenTicket(ticket, ticket_json(ticket))
                       for t, ticket in states.items()}, made, messages)


async def apply_new_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                            events: Sequence[StoredEvent]) -> dict[UUID, WrittenTicket]:
    """``apply_inline`` for a batch of tickets that these events open (an import's
    batch, handlers/zendesk_batch.py): the same rows, folded by the same ``evolve``, but
    each table written once for the whole batch (an unnested array a column) instead of
    a statement a row (``fold_new_tickets``, then ``write_new_tickets``). Returns each
    ticket's final state and document."""
    return await write_new_tickets(conn, tenant_id, fold_new_tickets(events))


async def write_new_tickets(conn: asyncpg.Connection, tenant_id: TenantId, new: NewTickets,
                            *, write: Write | None = None) -> dict[UUID, WrittenTicket]:
    """The rows of folded new tickets, each table by one statement: tickets, versions,
    readers, messages and search. The search rows are computed from the rows just
    written (``index_tickets``, in the database: a deferred ``write`` keeps them in
    order), as ``apply_inline`` does for a batch holding more than a ticket's opening."""
    run = write or conn.execute
    out, made, messages = new.written, new.made, new.messages
    if not out:
        return {}
    tickets = [(w.ticket, state_to_json(w.ticket), w.document.decode()) for w in out.values()]
    await run(
        Q["insert_new_tickets"], tenant_id, [t.id for t, _, _ in tickets],
        [t.version for t, _, _ in tickets], [t.state.value for t, _, _ in tickets],
        [t.priority.value for t, _, _ in tickets], [t.source.value for t, _, _ in tickets],
        [t.assignee for t, _, _ in tickets], [orjson.dumps(t.tags).decode() for t, _, _ in tickets],
        [t.subject for t, _, _ in tickets], [d["requester"] for _, d, _ in tickets],
        [t.follow_up_of for t, _, _ in tickets], [d["clocks"] for _, d, _ in tickets],
        [d for _, d, _ in tickets], [t.created_at for t, _, _ in tickets],
        [t.updated_at for t, _, _ in tickets], [v for _, _, v in tickets],
        [t.requester.contact_id for t, _, _ in tickets], [sla_due(t) for t, _, _ in tickets],
        [d["fields"] for _, d, _ in tickets])
    versions = [(v, out[v.id].document if v.version == out[v.id].ticket.version
                 else ticket_json(v)) for v in made]
    fields = [state_to_json(v)["fields"] for v, _ in versions]
    await run(
        VQ["insert_new_ticket_versions"], tenant_id, [v.id for v, _ in versions],
        [v.version for v, _ in versions], [v.state.value for v, _ in versions],
        [v.priority.value for v, _ in versions], [v.source.value for v, _ in versions],
        [v.assignee for v, _ in versions], [orjson.dumps(v.tags).decode() for v, _ in versions],
        [v.group_id for v, _ in versions], [v.requester.contact_id for v, _ in versions],
        fields, [v.created_at for v, _ in versions], [v.updated_at for v, _ in versions],
        [d.decode() for _, d in versions])
    await _write_readers(run, tenant_id, [w.ticket for w in out.values()])
    rows = [_message_row(ticket_id, version, event) for ticket_id, version, event in messages]
    kept = [r for r in rows if r is not None]
    await run(Q["insert_new_messages"], tenant_id,
              *(list(c) for c in zip(*kept, strict=True)))
    await index_tickets(conn, tenant_id, list(out), write=write)
    return out


def _message_row(ticket_id: UUID, version: int, event: Event) -> tuple[Any, ...] | None:
    """The ``messages`` row of an opening or a message (``_insert_message``), else None."""
    if isinstance(event, TicketOpened):
        return (event.message_id, ticket_id, version, "public", event.author.kind.value,
                event.author.id, event.body, event.at, _files(event.attachments))
    if isinstance(event, MessageAdded):
        return (event.message_id, ticket_id, version, event.visibility.value,
                event.author.kind.value, event.author.id, event.body, event.at,
                _files(event.attachments))
    return None


def ticket_readers(t: Ticket) -> list[tuple[UUID, UUID, str]]:
    """The ``ticket_contacts`` rows (ticket, contact, role) a ticket's state makes: its
    requester and CCs (those resolved to a contact), and the same contacts as readers
    (``merged``) of each ticket merged into it, whose messages its thread lists."""
    own = [(t.id, p.contact_id, role) for p, role in
           ((t.requester, "requester"), *((c, "cc") for c in t.ccs))
           if p.contact_id is not None]
    readers = sorted({c for _, c, _ in own})
    return [*own, *((s, c, "merged") for s in t.merged_from for c in readers)]


async def _write_readers(run: Write, tenant_id: TenantId, tickets: Sequence[Ticket]) -> None:
    """Replace these tickets' ``ticket_contacts`` rows with those their states make:
    the requester and CC rows of each, and the ``merged`` rows of those merged into it
    (a merged ticket takes no command, so its target owns those rows)."""
    scope = [(t.id, role) for t in tickets for role in ("requester", "cc")]
    scope += [(s, "merged") for t in tickets for s in t.merged_from]
    rows = [r for t in tickets for r in ticket_readers(t)]
    await run(Q["set_ticket_contacts"], tenant_id, [s for s, _ in scope],
              [r for _, r in scope], [r[0] for r in rows], [r[1] for r in rows],
              [r[2] for r in rows])


def _first_version(events: Sequence[StoredEvent], stream: UUID) -> int:
    return min(e.version for e in events if e.stream_id == stream and e.type in _TICKET_TYPES)


async def _insert_message(run: Write, tenant_id: TenantId, ticket_id: TicketId,
                          version: int, event: Event) -> None:
    if isinstance(event, TicketOpened):
        await run(Q["insert_message"], tenant_id, event.message_id, ticket_id, version,
                           "public", event.author.kind.value, event.author.id, event.body,
                           event.at, _files(event.attachments))
    elif isinstance(event, MessageAdded):
        await run(Q["insert_message"], tenant_id, event.message_id, ticket_id, version,
                           event.visibility.value, event.author.kind.value, event.author.id,
                           event.body, event.at, _files(event.attachments))
    elif isinstance(event, TicketSplitFrom):
        # The moved messages' rows now belong to the new ticket: one row per message,
        # as written on the source, listed in the new thread and not in the source's.
        await run(Q["move_messages"], tenant_id, list(event.message_ids), ticket_id)


def _files(refs: tuple[AttachmentRef, ...]) -> str | None:
    """A message's files as its row keeps them, JSON text (None: none, as before)."""
    if not refs:
        return None
    return orjson.dumps([r.model_dump(mode="json") for r in refs]).decode()


async def _write_ticket(conn: asyncpg.Connection, tenant_id: TenantId, t: Ticket, *,
                        insert: bool, previous: int, write: Write | None) -> bytes:
    """Write the ticket's row; returns the document stored with it."""
    doc = state_to_json(t)
    clocks = doc["clocks"]
    document = ticket_json(t)
    view = document.decode()
    if insert:
        await (write or conn.execute)(
            Q["insert_ticket"], tenant_id, t.id, t.version, t.state.value, t.priority.value,
            t.source.value, t.assignee, list(t.tags), t.subject, doc["requester"],
            t.follow_up_of, clocks, doc, t.created_at, t.updated_at, view,
            t.requester.contact_id, sla_due(t),
        )
        return document
    args = (tenant_id, t.id, t.version, t.state.value, t.priority.value, t.assignee,
            list(t.tags), clocks, doc, t.updated_at, previous, view, doc["requester"],
            t.requester.contact_id, sla_due(t))
    status = await (write or conn.execute)(Q["update_ticket"], *args)
    # None: deferred, where the row is locked and the appends check its stream's version.
    if status is not None and status != "UPDATE 1":
        raise CorruptStream(f"inline ticket {t.id} is not at version {previous}")
    return document


async def _write_version(run: Write, tenant_id: TenantId, t: Ticket,
                         document: bytes | None) -> None:
    """Keep this version of the ticket for as-of reads (migration 0611): its list
    columns and document; the events' trigger stamps the seqs it is valid between."""
    await run(VQ["insert_ticket_version"], tenant_id, t.id, t.version, t.state.value,
              t.priority.value, t.source.value, t.assignee, list(t.tags), t.group_id,
              t.requester.contact_id, state_to_json(t)["fields"], t.created_at,
              t.updated_at, (document or ticket_json(t)).decode())


def sla_due(t: Ticket) -> datetime:
    """The next deadline among the ticket's running SLA clocks, or the end of time
    (Postgres' 'infinity') when none runs: the key of the list's ``sort=sla_due``."""
    due = [c.due_at for c in t.clocks.values() if c.running and c.due_at is not None]
    return min(due) if due else FOREVER


async def fill_views(conn: asyncpg.Connection, tenant_id: TenantId, *, batch: int = 500) -> int:
    """Render the API document of every ticket row that has none (rows written before
    ``tickets.view`` existed), or whose document lacks a key the document has now
    (rows written before that key was added); returns how many were filled."""
    filled = 0
    keys = list(TICKET_KEYS)
    while True:
        rows = await conn.fetch(Q["tickets_without_view"], tenant_id, batch, keys)
        filled += await _render_views(conn, tenant_id, rows)
        if len(rows) < batch:
            return filled


async def _render_views(conn: asyncpg.Connection, tenant_id: TenantId,
                        rows: Sequence[asyncpg.Record]) -> int:
    """Store the document rendered from each row's ``state_json``; returns how many."""
    for row in rows:
        await conn.execute(Q["set_view"], tenant_id, row["id"],
                           ticket_json(state_from_json(row["state_json"])).decode())
    return len(rows)


__all__ = [
    "NewTickets",
    "PendingEvent",
    "StoredEvent",
    "WrittenTicket",
    "apply_inline",
    "apply_new_tickets",
    "fill_views",
    "fold_new_tickets",
    "state_from_json",
    "state_to_json",
    "write_new_tickets",
]
