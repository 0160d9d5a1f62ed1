"""Mail taken in: a raw message becomes a ticket, a message on one, or a record of why not.

``take_in`` is the one path of every inbound mail (the inbound route, a quarantined
mail retried). In order:

1. parse (``domain.mail``); a mail that cannot be parsed goes to the quarantine, whole
   and sealed, with the reason;
2. a Message-ID the tenant has seen (sent or taken in) is a duplicate: nothing is done
   again, whatever route it came by;
3. noise is recorded and goes no further: mail from the desk's own addresses, a
   delivery status notification (whose hard bounces mark the address as bouncing),
   automatic mail (RFC 3834: ``Auto-Submitted``, ``Precedence``, ``X-Autoreply``,
   mailing lists), and a sender over the hourly cap;
4. threading, in this order: In-Reply-To/References against the Message-IDs the desk
   sent and took in, the ticket's token in a ``local+token@`` recipient, the
   ``[#token]`` reference in the subject; found, the mail is a public message on that
   ticket by its sender (a closed ticket gets a follow-up); not found, it opens a
   ticket (``source: email``) whose requester the sender resolves to, as any opening.
   A sender who is neither the found ticket's requester nor one of its CCs is taken
   as the tenant's ``stranger_replies`` setting says: a message on it (the default),
   or a ticket of its own;
5. the files (attachments, inline images, ``winmail.dat``, invites and the original
   message) are stored as uploads first, then attached in the ticket command's own
   transaction, which also writes the mail's row keyed by its Message-ID: a lost race
   with the same mail rolls the whole of it back.

Mails taken in together (``take_in_all``, a run in one transaction) share what each
would look up alone: the openings' uploads, requesters, claims and state are looked up
once for the run (``_openings``), and the run's uploads, mail rows and threads are
written by one statement each, so a run costs a few round trips, not a few a mail.

A mail's To and Cc addresses are kept on its mail row (``GET /v1/tickets/{id}/mail``):
a sender among them may write to the ticket, and its replies are copied to them as
well as to the ticket's own CCs (handlers/mail_out.py).
"""

from __future__ import annotations

import asyncio
import base64
import multiprocessing
import os
import secrets
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.attachment import FileLimits
from domain.errors import DomainError
from domain.ids import MessageId, TenantId, TicketId
from domain.mail import (
    MailFile,
    ParsedMail,
    Unparseable,
    headline,
    is_own_address,
    parse,
    plus_token,
    subject_ref,
)
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester, Source, Visibility
from eventstore.keys import Keyring, SubjectErased
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers import attaching, attachments
from handlers.errors import HandlerError, Missing
from handlers.requesters import resolve_requesters
from handlers.ticket_state import load_for_command, load_ticket, merged_target
from handlers.tickets import (
    HeldStates,
    PostMessage,
    post_message,
    run_command,
    stage_contact_events,
)
from projections.inline import NewTickets, write_new_tickets
from projections.tenant_settings import load_settings

Q = load_queries(Path(__file__).with_name("mail.sql"))

SENDER_HOURLY_CAP = 30
"""Mail taken in per sender per hour; more is recorded and ignored (a loop's guard)."""
TOKEN_BYTES = 8


@dataclass(frozen=True, slots=True)
class TakenIn:
    """What became of one mail: ``outcome`` is ``ticket``, ``reply``, ``follow_up``,
    ``ignored``, ``bounce``, ``duplicate`` or ``quarantined``."""

    outcome: str
    reason: str | None = None
    ticket_id: UUID | None = None
    message_id: UUID | None = None
    mail_id: UUID | None = None


class _Duplicate(Exception):
    """The same Message-ID was taken in by another writer first: undo this one."""


def new_token() -> str:
    """A ticket's thread token: lower-case base32, so mail systems that fold the local
    part's case do not break it."""
    return base64.b32encode(secrets.token_bytes(TOKEN_BYTES)).decode().rstrip("=").lower()


async def split_thread(uow: UnitOfWork, source_id: UUID, ticket_id: UUID,
                       message_ids: Sequence[UUID], at: datetime) -> None:
    """The mail side of a split (docs/email.md, "A split-off of a mail ticket"): a
    split-off of a mail ticket gets a thread of its own, with its own token, on the
    source's mailbox, so its public replies are mailed to its requester; the mail rows
    of the moved messages move with them, so its replies answer the moved mail
    (In-Reply-To, References: a fresh thread when none came or went by mail) and mail
    answering either threads onto it, not onto the source. A source with no thread
    (not a mail ticket) gives the split-off none."""
    await uow.conn.execute(Q["mail_thread_split"], uow.tenant_id, source_id, ticket_id,
                           new_token(), at, list(message_ids))


def mail_actor(mailbox_id: UUID) -> StoreActor:
    return StoreActor("system", f"mail:{mailbox_id}")


Checkpoint = Callable[[UnitOfWork], Awaitable[None]]
"""Written in the transaction that settles a mail, whatever became of it (the IMAP
poller's UID: handlers/mail_poll.py)."""


async def _nothing(uow: UnitOfWork) -> None:
    return None


async def take_in(store: EventStore, storages: attachments.Storages, tenant_id: TenantId,
                  mailbox_id: UUID, raw: bytes, at: datetime, *,
                  quarantine_id: UUID | None = None,
                  checkpoint: Checkpoint = _nothing) -> TakenIn:
    """Take in ``raw`` for mailbox ``mailbox_id`` (module docstring). A mail retried from
    the quarantine (``quarantine_id``) leaves it once taken in; quarantined again, its
    row keeps the new reason. ``checkpoint`` commits with the mail's outcome."""
    try:
        mail = parse(raw)
    except Unparseable as exc:
        return await _quarantine(store, tenant_id, mailbox_id, raw, exc.reason, at,
                                 quarantine_id, checkpoint)
    return await _take_parsed(store, storages, tenant_id, mailbox_id, raw, mail, at,
                              quarantine_id=quarantine_id, checkpoint=checkpoint)


async def _take_parsed(store: EventStore, storages: attachments.Storages,
                       tenant_id: TenantId, mailbox_id: UUID, raw: bytes, mail: ParsedMail,
                       at: datetime, *, quarantine_id: UUID | None = None,
                       checkpoint: Checkpoint = _nothing) -> TakenIn:
    """``take_in`` of a mail already parsed from ``raw``."""
    try:
        (taken,) = await _settle(store, storages, tenant_id, mailbox_id, [mail], at,
                                 quarantine_id=quarantine_id, checkpoint=checkpoint)
        return taken
    except _Duplicate:
        return TakenIn("duplicate", "this Message-ID was taken in before")
    except (DomainError, HandlerError, SubjectErased) as exc:
        # Refused by a rule of the desk (a sender address it does not take, an erased
        # contact's): kept, with the reason, rather than refused again at every poll.
        reason = f"refused: {getattr(exc, 'message', None) or exc}"
        return await _quarantine(store, tenant_id, mailbox_id, raw, reason, at,
                                 quarantine_id, checkpoint)


GROUP = 25
"""Mails of one poll settled in one transaction at most (``take_in_all``)."""

GroupCheckpoint = Callable[[UnitOfWork, int], Awaitable[None]]
"""Written in the transaction that settles mails up to the one at the given index."""


async def take_in_all(store: EventStore, storages: attachments.Storages,
                      tenant_id: TenantId, mailbox_id: UUID, raws: Sequence[bytes],
                      now: Callable[[], datetime], *, checkpoint: GroupCheckpoint
                      ) -> list[TakenIn]:
    """Take in ``raws`` in order, as ``take_in`` would one by one, in fewer
    transactions: a run of mails that do not touch one another (parsed, distinct
    senders and Message-IDs, none answering another of the run) is settled in one
    transaction with ``checkpoint`` at its last mail, so a crash loses or repeats none
    of them. A run that fails in any way (a refused mail, a lost race) is rolled back
    whole and its mails are taken in one by one instead, each with its own checkpoint;
    any other mail goes alone too. A transaction per mail costs about as much as the
    mail's own work (its look-ups, files and ticket), hence the runs."""
    out: list[TakenIn] = []
    i = 0
    # The next run is parsed in a process of its own while this one waits on the database.
    parsing: asyncio.Future[list[ParsedMail]] | None = _parse_run(raws, 0)
    try:
        while parsing is not None:
            run = await parsing
            size = max(len(run), 1)
            parsing = _parse_run(raws, i + size) if i + size < len(raws) else None
            if len(run) > 1:
                try:
                    out += await _settle(store, storages, tenant_id, mailbox_id, run, now(),
                                         checkpoint=_at(checkpoint, i + size - 1),
                                         deferring=True)
                    i += size
                    continue
                except Exception:
                    pass  # each of them alone: what it was, refused, or raised again
            # Alone: a run's mails are parsed already; a mail that ended an empty run
            # is one that does not parse, which take_in quarantines.
            for j in range(i, i + size):
                if j - i < len(run):
                    out.append(await _take_parsed(store, storages, tenant_id, mailbox_id,
                                                  raws[j], run[j - i], now(),
                                                  checkpoint=_at(checkpoint, j)))
                else:
                    out.append(await take_in(store, storages, tenant_id, mailbox_id,
                                             raws[j], now(), checkpoint=_at(checkpoint, j)))
            i += size
    finally:
        if parsing is not None:
            parsing.cancel()
    return out


_PARSER: list[ProcessPoolExecutor] = []
"""The process that parses the next run while this one is written, made on the first
run and kept; empty until mail is taken in."""


def _follow_parent(parent: int) -> None:
    """In the parsing process: end it when the process it parses for has gone (killed,
    or ended without shutting its pool down), which it is not told of otherwise."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _parse_run(raws: Sequence[bytes], start: int) -> asyncio.Future[list[ParsedMail]]:
    return asyncio.ensure_future(_parsed_run(list(raws[start:start + GROUP])))


async def _parsed_run(raws: list[bytes]) -> list[ParsedMail]:
    """``_run_of`` in a process of its own (the standard library's parser is pure
    Python: in a thread it holds the interpreter for up to 5 ms at a time while the
    event loop has an answer to read, about a tenth of ingestion's rate,
    docs/performance.md, "Mail"). A process that died is replaced by the next run, and
    this run is parsed in a thread."""
    if not _PARSER:
        _PARSER.append(ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"),
            initializer=_follow_parent, initargs=(os.getpid(),)))
    pool = _PARSER[0]
    try:
        return await asyncio.get_running_loop().run_in_executor(pool, _run_of, raws, 0)
    except BrokenProcessPool:
        if _PARSER and _PARSER[0] is pool:
            _PARSER.clear()
        pool.shutdown(wait=False)
        return await asyncio.to_thread(_run_of, raws, 0)


def _at(checkpoint: GroupCheckpoint, i: int) -> Checkpoint:
    async def written(uow: UnitOfWork) -> None:
        await checkpoint(uow, i)
    return written


def _run_of(raws: Sequence[bytes], start: int) -> list[ParsedMail]:
    """The mails from ``start`` on that may share a transaction (``take_in_all``)."""
    run: list[ParsedMail] = []
    senders: set[str] = set()
    ids: set[str] = set()
    for raw in raws[start:start + GROUP]:
        try:
            mail = parse(raw)
        except Unparseable:
            break
        if mail.sender in senders or mail.message_id in ids or ids & set(mail.thread_ids()):
            break
        run.append(mail)
        senders.add(mail.sender)
        ids.add(mail.message_id)
    return run


@dataclass(slots=True)
class _Looked:
    """One mail as the look-ups before its files found it."""

    mail: ParsedMail
    seen: Any = None
    noise: tuple[str, str] | None = None
    ticket_id: UUID | None = None
    stranger: str | None = None
    received: list[attachments.Received] = field(default_factory=list)


async def _settle(store: EventStore, storages: attachments.Storages, tenant_id: TenantId,
                  mailbox_id: UUID, mails: Sequence[ParsedMail], at: datetime, *,
                  checkpoint: Checkpoint, quarantine_id: UUID | None = None,
                  deferring: bool = False) -> list[TakenIn]:
    """Parsed mails looked up (one read-only transaction), their files stored, and all
    of them written with ``checkpoint`` in one transaction. ``deferring``: the ticket
    commands' writes go with the COMMIT (a lost race fails the whole at commit)."""
    actor = mail_actor(mailbox_id)
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        mailbox = await uow.conn.fetchrow(Q["mailbox_get"], tenant_id, mailbox_id)
        if mailbox is None:
            raise Missing("mailbox_not_found", f"no mailbox {mailbox_id}")
        own = {r["address"] for r in await uow.conn.fetch(Q["mailbox_addresses"], tenant_id)}
        found = await attachments.limits(uow.conn, tenant_id)
        seen = {r["rfc_message_id"]: r for r in await uow.conn.fetch(
            Q["mail_seen"], tenant_id, [m.message_id for m in mails])}
        recent = {r["address"]: r["n"] for r in await uow.conn.fetch(
            Q["mail_sender_recent"], tenant_id, sorted({m.sender for m in mails}),
            at - timedelta(hours=1))}
        looked = [await _look(uow.conn, tenant_id, mailbox["address"], m,
                              seen.get(m.message_id), _noise(m, own, recent.get(m.sender, 0)))
                  for m in mails]
    chosen = [_chosen_files(m.mail.files, found) if m.seen is None and m.noise is None
              else [] for m in looked]
    received = await attachments.receive_all(store, storages, tenant_id, actor,
                                             [f for files in chosen for f in files], at)
    try:
        for m, files in zip(looked, chosen, strict=True):
            m.received, received = received[:len(files)], received[len(files):]
        async with store.unit_of_work(tenant_id, actor) as uow:
            uow.deferring = deferring
            openings = await _openings(uow, mailbox_id, looked, at)
            rows = _MailRows() if deferring else None
            out = [await _write_looked(uow, mailbox_id, m, at, openings.get(i), rows)
                   for i, m in enumerate(looked)]
            held = next((o.held for o in openings.values() if o.held is not None), None)
            if held is not None and held.openings is not None:
                # The run's new tickets, one statement a table, deferred with the
                # rest: they go in the COMMIT's message ahead of the appends (the
                # versions' stamps find their rows).
                await write_new_tickets(uow.conn, tenant_id, held.openings, write=uow.write)
            if rows is not None:
                await rows.write(uow, mailbox_id, at)
            await _unquarantine(uow, mailbox_id, quarantine_id)
            await checkpoint(uow)
            return out
    except BaseException:
        for m in looked:
            for r in m.received:
                await attachments.discard(store, tenant_id, r)
        for r in received:
            await attachments.discard(store, tenant_id, r)
        raise


async def _look(conn: asyncpg.Connection, tenant_id: TenantId, mailbox_address: str,
                mail: ParsedMail, seen: Any, noise: tuple[str, str] | None) -> _Looked:
    """What the mail is: seen before, noise, or where it goes (module docstring)."""
    looked = _Looked(mail, seen, None if seen is not None else noise)
    if looked.seen is not None or looked.noise is not None:
        return looked
    ticket_id = await thread_of(conn, tenant_id, mailbox_address, mail)
    if ticket_id is not None and await _stranger(conn, tenant_id, ticket_id, mail):
        settings = await load_settings(conn, tenant_id)
        if settings.stranger_replies == "ticket":
            looked.stranger = (f"{mail.sender} is neither the requester nor a CC of "
                               f"ticket {ticket_id}: a ticket of its own")
            ticket_id = None
    looked.ticket_id = ticket_id
    return looked


@dataclass(frozen=True, slots=True)
class _Opening:
    """What a mail that opens a ticket was given before the mails were written, with
    those of the other openings of its unit of work (``_openings``)."""

    ticket_id: TicketId
    requester: Requester
    contact_events: list[tuple[UUID, Any]]
    claimed: attaching.Claimed | None
    held: HeldStates | None


async def _openings(uow: UnitOfWork, mailbox_id: UUID, looked: Sequence[_Looked],
                    at: datetime) -> dict[int, _Opening]:
    """For the mails that open tickets (by index in ``looked``), what each opening would
    look up on its own, looked up for all of them at once: their uploads recorded, their
    requesters resolved to contacts (``requesters.resolve_requesters``: the uploads'
    rows go with the requester locks), the uploads claimed, the blobs the requesters
    hold already, and the state new tickets decide on (the tenant's settings, field
    definitions and SLA policies), kept in the unit of work's ``HeldStates``. A run of
    25 openings costs about five round trips here, where each opening cost six of its
    own (docs/performance.md, "Mail")."""
    chosen = {i: m for i, m in enumerate(looked)
              if m.seen is None and m.noise is None and m.ticket_id is None}
    if not chosen:
        return {}
    files = [r for m in chosen.values() for r in m.received]
    every = await attachments.record_uploads(uow, files, mail_actor(mailbox_id),
                                             [at] * len(files))
    uploads: dict[int, list[UUID]] = {}
    for i, m in chosen.items():
        uploads[i], every = every[:len(m.received)], every[len(m.received):]
    resolved = await resolve_requesters(uow, [
        Requester(email=m.mail.sender, name=m.mail.sender_name) for m in chosen.values()], at)
    by_index = dict(zip(chosen, resolved, strict=True))
    created = {c for _, events in resolved for c, _ in events}
    with_files = [i for i in chosen if uploads[i]]
    claims: dict[int, attaching.Claimed] = {}
    if with_files:
        owners = []
        for i, c in zip(with_files, await attaching.claim_openings(
                uow, [uploads[i] for i in with_files]), strict=True):
            contact = by_index[i][0].contact_id
            assert contact is not None
            owners.append((c, contact, contact in created))
        claims = dict(zip(with_files, await attaching.for_owners(uow, owners), strict=True))
    ticket_ids = {i: TicketId(uuid.uuid4()) for i in chosen}
    held = None
    if uow.deferring:
        # New tickets: no row to lock or read, so one read serves them all (deferred
        # writes go with the COMMIT, so nothing is retried on a state held here).
        state = await load_for_command(uow.conn, uow.tenant_id, next(iter(ticket_ids.values())),
                                       with_catalog=True, memo=uow.memo)
        # Their rows are written together at the run's end (``_settle``).
        held = HeldStates({t: (state, True) for t in ticket_ids.values()},
                          openings=NewTickets())
    return {i: _Opening(ticket_ids[i], requester, events, claims.get(i), held)
            for i, (requester, events) in by_index.items()}


@dataclass(slots=True)
class _MailRows:
    """The mail rows and new threads of a run whose writes are deferred, written at its
    end by one statement each rather than one a mail (``_settle``)."""

    mails: list[dict[str, Any]] = field(default_factory=list)
    threads: list[tuple[UUID, str]] = field(default_factory=list)

    async def write(self, uow: UnitOfWork, mailbox_id: UUID, at: datetime) -> None:
        if self.threads:
            await uow.write(Q["mail_threads_insert"], uow.tenant_id, mailbox_id,
                            [t for t, _ in self.threads], [k for _, k in self.threads], at)
        if self.mails:
            # One JSON text for every row: arrays of arrays (the addresses) and NULLs
            # have no array literal of their own (eventstore/literal.py).
            await uow.write(Q["mail_insert_many"], uow.tenant_id, mailbox_id, at,
                            orjson.dumps(self.mails).decode())


async def _thread(uow: UnitOfWork, mailbox_id: UUID, ticket_id: UUID, at: datetime,
                  rows: _MailRows | None) -> None:
    """A new mail thread for ``ticket_id``, with a token of its own."""
    if rows is not None:
        rows.threads.append((ticket_id, new_token()))
        return
    await uow.write(Q["mail_thread_insert"], uow.tenant_id, ticket_id, mailbox_id,
                    new_token(), at)


async def _write_looked(uow: UnitOfWork, mailbox_id: UUID, looked: _Looked, at: datetime,
                        opening: _Opening | None, rows: _MailRows | None = None) -> TakenIn:
    mail = looked.mail
    if looked.seen is not None:
        return TakenIn("duplicate", "this Message-ID was taken in before",
                       looked.seen["ticket_id"], mail_id=looked.seen["id"])
    if looked.noise is not None:
        outcome, reason = looked.noise
        for b in mail.bounces:
            if b.hard:
                await uow.conn.execute(Q["mail_bounce_put"], uow.tenant_id, b.recipient,
                                       b.status, (b.diagnostic or "")[:500] or None, at)
        mail_id = await _record(uow, mailbox_id, mail, None, None, outcome, reason, at, rows)
        return TakenIn(outcome if mail_id else "duplicate", reason, mail_id=mail_id)
    return await _write(uow, mailbox_id, mail, looked.ticket_id, looked.received, at,
                        looked.stranger, opening, rows)


def _noise(mail: ParsedMail, own: set[str], recent: int) -> tuple[str, str] | None:
    """Why the mail goes no further (its outcome and reason), or None; ``recent``: the
    mail taken in from its sender within the hour. A bounce's hard failures are
    written with its record (``_write_looked``)."""
    if is_own_address(mail.sender, own):
        return "ignored", "from one of the desk's own addresses"
    if mail.bounces:
        said = ", ".join(f"{b.recipient} {b.status}" for b in mail.bounces)
        return "bounce", f"a delivery status notification: {said}"[:500]
    if mail.automatic is not None:
        return "ignored", f"automatic mail ({mail.automatic}); never answered"[:500]
    if recent >= SENDER_HOURLY_CAP:
        return "ignored", (f"{mail.sender} sent more than {SENDER_HOURLY_CAP} mails "
                           "within an hour")
    return None


async def thread_of(conn: asyncpg.Connection, tenant_id: TenantId, mailbox_address: str,
                    mail: ParsedMail) -> UUID | None:
    """The ticket a mail answers (module docstring, step 4), or None."""
    ids = mail.thread_ids()
    if ids:
        found = await conn.fetchval(Q["mail_thread_of_ids"], tenant_id, list(ids))
        if found is not None:
            return UUID(str(found))
    recipients = (*mail.to, *mail.cc, *(v.strip().lower() for v in mail.headers.values()))
    for token in (plus_token(mailbox_address, recipients), subject_ref(mail.subject)):
        if token is not None:
            found = await conn.fetchval(Q["mail_thread_of_token"], tenant_id, token)
            if found is not None:
                return UUID(str(found))
    return None


async def _stranger(conn: asyncpg.Connection, tenant_id: TenantId, ticket_id: UUID,
                    mail: ParsedMail) -> bool:
    """Whether the mail's sender is neither the ticket's requester nor one of its CCs."""
    ticket = await load_ticket(conn, tenant_id, ticket_id)
    if ticket is None or ticket.requester.email.lower() == mail.sender:
        return False
    return not await conn.fetchval(Q["mail_ticket_copied"], tenant_id, ticket_id, mail.sender)


def _chosen_files(files: tuple[MailFile, ...], found: FileLimits
                  ) -> list[attachments.WholeFile]:
    """The mail's files to keep, within the tenant's limits: the original message
    always (it is the last), the others while the per-message limit allows; a file over
    the size limit or with a name the desk refuses is left out (the original still
    holds it)."""
    *others, original = files
    chosen = []
    for f in [*others[:max(found.per_message - 1, 0)], original]:
        # The type the mail declares, unless the bytes contradict it.
        for declared in (f.content_type, None):
            try:
                chosen.append(attachments.check_whole(f.name, declared, f.data, found))
                break
            except HandlerError:
                continue
    return chosen


async def _write(uow: UnitOfWork, mailbox_id: UUID, mail: ParsedMail, ticket_id: UUID | None,
                 received: list[attachments.Received], at: datetime,
                 reason: str | None = None, opening: _Opening | None = None,
                 rows: _MailRows | None = None) -> TakenIn:
    author = Actor(kind=ActorKind.CUSTOMER, id=mail.sender)
    if ticket_id is not None:
        actor = mail_actor(mailbox_id)
        uploads = []
        for r in received:
            doc = await attachments.record_upload(uow, r, attachments.ReceiveFile(
                name=r.name, declared_type=r.content_type, uploader=actor, at=at))
            uploads.append(doc["id"])
        # A reply to a merged ticket's mail lands where its thread went (its sender is
        # copied there by the merge), not in the quarantine as a refused command.
        ticket_id = await merged_target(uow.conn, uow.tenant_id, ticket_id)
        message_id = MessageId(uuid.uuid4())
        result = await post_message(uow, PostMessage(
            ticket_id=TicketId(ticket_id), message_id=message_id, body=mail.body,
            visibility=Visibility.PUBLIC, at=at, author=author, attachments=tuple(uploads)))
        outcome, landed = "reply", ticket_id
        if result.follow_up is not None:
            outcome, landed = "follow_up", result.follow_up.id
            await _thread(uow, mailbox_id, landed, at, rows)
    else:
        # Its uploads, contact, claim and state were looked up with the other openings
        # of the unit of work (``_openings``).
        assert opening is not None
        landed = opening.ticket_id
        command = OpenTicket(ticket_id=landed, subject=mail.subject, body=mail.body,
                             requester=opening.requester, source=Source.EMAIL, actor=author,
                             at=at)
        message_id = command.opening_message_id()
        # The contact the requester created goes first: the ticket's events refer to it.
        await stage_contact_events(uow, opening.contact_events)
        claimed = opening.claimed if opening.claimed and opening.claimed.refs else None
        await run_command(uow, landed, command, claimed=claimed, held=opening.held)
        await _thread(uow, mailbox_id, landed, at, rows)
        outcome = "ticket"
    mail_id = await _record(uow, mailbox_id, mail, landed, message_id, outcome, reason, at,
                            rows)
    if mail_id is None:
        raise _Duplicate()
    return TakenIn(outcome, reason, landed, message_id, mail_id)


async def _record(uow: UnitOfWork, mailbox_id: UUID, mail: ParsedMail,
                  ticket_id: UUID | None, message_id: UUID | None, outcome: str,
                  reason: str | None, at: datetime, rows: _MailRows | None = None
                  ) -> UUID | None:
    """The mail's row (with ``rows``, kept there for the run's one statement); None
    when its Message-ID was written first by another."""
    if uow.deferring:
        # In a run (``_settle``), with the COMMIT: a Message-ID written first by another
        # fails the run, whose mails are then taken in one by one.
        mail_id = uuid.uuid4()
        if rows is not None:
            rows.mails.append({"id": mail_id, "rfc_message_id": mail.message_id,
                               "ticket_id": ticket_id, "message_id": message_id,
                               "from_address": mail.sender, "to_addresses": list(mail.to),
                               "cc_addresses": list(mail.cc), "outcome": outcome,
                               "reason": reason})
            return mail_id
        await uow.write(Q["mail_insert_strict"], uow.tenant_id, mail_id, mailbox_id, "in",
                        mail.message_id, ticket_id, message_id, mail.sender, list(mail.to),
                        list(mail.cc), outcome, reason, at)
        return mail_id
    found = await uow.conn.fetchval(
        Q["mail_insert"], uow.tenant_id, uuid.uuid4(), mailbox_id, "in", mail.message_id,
        ticket_id, message_id, mail.sender, list(mail.to), list(mail.cc), outcome, reason, at)
    return None if found is None else UUID(str(found))


async def _quarantine(store: EventStore, tenant_id: TenantId, mailbox_id: UUID, raw: bytes,
                      reason: str, at: datetime, quarantine_id: UUID | None,
                      checkpoint: Checkpoint) -> TakenIn:
    async with store.unit_of_work(tenant_id, mail_actor(mailbox_id)) as uow:
        await checkpoint(uow)
        if quarantine_id is not None:
            row = await uow.conn.fetchrow(Q["quarantine_failed_again"], tenant_id,
                                          quarantine_id, reason[:500], at)
            return TakenIn("quarantined", reason, mail_id=None if row is None else row["id"])
        if await uow.conn.fetchrow(Q["mailbox_get"], tenant_id, mailbox_id) is None:
            raise Missing("mailbox_not_found", f"no mailbox {mailbox_id}")
        assert store.keyring is not None
        kept = uuid.uuid4()
        sender, subject = headline(raw)
        await uow.conn.execute(Q["quarantine_insert"], tenant_id, kept, mailbox_id,
                               store.keyring.wrap(tenant_id, kept, raw),
                               store.keyring.fingerprint, len(raw), reason[:500], at,
                               store.keyring.wrap(tenant_id, kept, orjson.dumps(
                                   {"from": sender, "subject": subject})),
                               store.keyring.fingerprint)
    return TakenIn("quarantined", reason, mail_id=kept)


async def _unquarantine(uow: UnitOfWork, mailbox_id: UUID, quarantine_id: UUID | None) -> None:
    if quarantine_id is not None:
        await uow.conn.execute(Q["quarantine_delete"], uow.tenant_id, mailbox_id, quarantine_id)


# --- the quarantine ---------------------------------------------------------------------


def quarantine_document(row: Any, tenant_id: TenantId, keyring: Keyring | None
                        ) -> dict[str, Any]:
    """A quarantined mail as the API shows it: with its sender and subject, opened from
    their seal (both None for mail quarantined before they were kept)."""
    told: dict[str, Any] = {}
    if row["headline"] is not None and keyring is not None:
        told = orjson.loads(keyring.unwrap(tenant_id, row["id"], bytes(row["headline"]),
                                           row["headline_kek"]))
    return {"id": row["id"], "mailbox_id": row["mailbox_id"], "size": row["size"],
            "reason": row["reason"], "from": told.get("from"), "subject": told.get("subject"),
            "attempts": row["attempts"], "created_at": row["created_at"],
            "retried_at": row["retried_at"]}


async def list_quarantine(uow: UnitOfWork, mailbox_id: UUID,
                          after: tuple[datetime, UUID] | None, limit: int
                          ) -> list[dict[str, Any]]:
    at, last = after if after is not None else (None, None)
    rows = await uow.conn.fetch(Q["quarantine_page"], uow.tenant_id, mailbox_id, at, last,
                                limit)
    return [quarantine_document(r, uow.tenant_id, uow.keyring) for r in rows]


async def retry_quarantined(store: EventStore, storages: attachments.Storages,
                            tenant_id: TenantId, mailbox_id: UUID, quarantine_id: UUID,
                            at: datetime) -> TakenIn:
    """Take a quarantined mail in again (after a fix of the parser, say)."""
    assert store.keyring is not None
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["quarantine_raw"], tenant_id, mailbox_id,
                                      quarantine_id)
    if row is None:
        raise Missing("not_found", f"no quarantined mail {quarantine_id}")
    raw = store.keyring.unwrap(tenant_id, quarantine_id, bytes(row["raw"]), row["kek"])
    return await take_in(store, storages, tenant_id, mailbox_id, raw, at,
                         quarantine_id=quarantine_id)


async def discard_quarantined(uow: UnitOfWork, mailbox_id: UUID, quarantine_id: UUID
                              ) -> dict[str, Any]:
    """Forget a quarantined mail; what it was."""
    found = await uow.conn.fetchrow(Q["quarantine_delete"], uow.tenant_id, mailbox_id,
                                    quarantine_id)
    if found is None:
        raise Missing("not_found", f"no quarantined mail {quarantine_id}")
    return quarantine_document(found, uow.tenant_id, uow.keyring)


async def mail_of_ticket(uow: UnitOfWork, ticket_id: UUID) -> list[dict[str, Any]] | None:
    """The mail a ticket took in and sent, oldest first, with each one's outcome; None
    for no such ticket."""
    conn, tenant_id = uow.conn, uow.tenant_id
    if await load_ticket(conn, tenant_id, ticket_id) is None:
        return None
    return [{"id": r["id"], "mailbox_id": r["mailbox_id"], "direction": r["direction"],
             "message_id": r["message_id"], "rfc_message_id": r["rfc_message_id"],
             "from": r["from_address"], "to": list(r["to_addresses"]),
             "cc": list(r["cc_addresses"]), "status": r["outcome"], "reason": r["reason"],
             "attempts": r["attempts"], "created_at": r["created_at"],
             "sent_at": r["sent_at"]}
            for r in await conn.fetch(Q["mail_of_ticket"], tenant_id, ticket_id)]


async def forget_contact_mail(uow: UnitOfWork, tickets: Sequence[UUID],
                              emails: Sequence[str]) -> int:
    """An erasure's part here: the addresses on the mail rows of the contact's tickets
    and of its mail that made none, its bounce record, and its address on notification
    mail (with the values of any not yet sent); their bodies and files are on the
    tickets, erased with them. Quarantined mail that names one of ``emails`` anywhere in
    its raw form (sender, recipients, body) is deleted; how many. The quarantine is
    opened whole to find them: it is small by nature (admins tend it), and a mail
    that could not be parsed has no sender to look up by. Without a keyring the
    quarantine, sealed, is left as it is."""
    conn, tenant_id, keyring = uow.conn, uow.tenant_id, uow.keyring
    lowered = [e.lower() for e in emails if e]
    await conn.execute(Q["mail_forget"], tenant_id, list(tickets), lowered)
    await conn.execute(Q["notices_forget"], tenant_id, lowered)
    if keyring is None or not lowered:
        return 0
    wanted = [e.encode() for e in lowered]
    naming = []
    for row in await conn.fetch(Q["quarantine_sealed"], tenant_id):
        raw = keyring.unwrap(tenant_id, row["id"], bytes(row["raw"]), row["kek"]).lower()
        if any(w in raw for w in wanted):
            naming.append(row["id"])
    if naming:
        await conn.execute(Q["quarantine_forget"], tenant_id, naming)
    return len(naming)


__all__ = ["SENDER_HOURLY_CAP", "TakenIn", "discard_quarantined", "forget_contact_mail",
           "list_quarantine", "mail_actor", "mail_of_ticket", "new_token",
           "retry_quarantined", "split_thread", "take_in", "take_in_all", "thread_of"]
