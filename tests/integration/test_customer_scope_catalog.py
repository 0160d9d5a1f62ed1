"""The customer scopes of every tenant table the catalog knows, as the runtime role.

A transaction acting for a portal contact (actor kind ``customer``) or a widget
session (``widget``) must not see another contact's (or session's) ticket, nor any
message of one, nor any internal note, from whichever table carries them. The tables
are not listed: every tenant table is read under the scope, and a row counts as
carrying a ticket or message when its text (``row::text``: every column, JSON and
search vectors included) holds the ticket's or message's id, or the words only
internal notes were written with. Which tables carry them at all is asked of the
same rows under a staff actor, so the scan is proven to find what it looks for.

Tables a scoped actor can read such rows from today are listed in ``UNSCOPED`` with
why; the test holds the list to exactly what the database does, so a new table that
shows them fails by name, and so does a listed one once its scope is added.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg

from domain.ids import MessageId, TenantId, TicketId
from domain.ticket.commands import AddMessage, OpenTicket
from domain.values import Requester, Visibility
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import portal, widget
from handlers.tickets import run_command
from projections.projector import Projector
from tests.support import catalog, files
from tests.support.desk import ACTOR, CUSTOMER, agent

AT = datetime(2026, 6, 1, 9, tzinfo=UTC)
ORIGIN = "https://shop.example.com"
NOTE_WORD = "quixotryx"
"""Written in internal notes only (a word no stemmer shortens: it is found in search
vectors as it is written)."""

UNSCOPED: dict[str, dict[str, str]] = {"customer": {}, "widget": {}}
"""Per scope, the tables from which it reads other tickets' rows or internal notes
today, and why. Row-level security there holds only the service's own queries, which
never read these tables under such an actor: exposures to close, not exceptions to
keep."""


@dataclass
class Scene:
    """One tenant's tickets: whose each is, and the ids of their messages."""

    tenant: TenantId
    tickets: dict[str, TicketId] = field(default_factory=dict)
    messages: dict[str, list[uuid.UUID]] = field(default_factory=dict)
    notes: list[uuid.UUID] = field(default_factory=list)
    contacts: dict[str, uuid.UUID] = field(default_factory=dict)
    sessions: dict[str, uuid.UUID] = field(default_factory=dict)
    blobs: dict[str, list[uuid.UUID]] = field(default_factory=dict)
    """The blobs of the files on each one's tickets (public and internal)."""
    note_blobs: list[uuid.UUID] = field(default_factory=list)


async def _answer(store: EventStore, scene: Scene, owner: str, tid: TicketId) -> None:
    """A public reply and an internal note by staff on the ticket, and the same again
    each with a file."""
    staff = agent(uuid.uuid4())
    async with store.unit_of_work(scene.tenant, ACTOR) as s:
        for visibility, body in ((Visibility.PUBLIC, "We are on it"),
                                 (Visibility.INTERNAL, f"Between us: {NOTE_WORD}")):
            mid = MessageId(uuid.uuid4())
            await run_command(s, tid, AddMessage(message_id=mid, body=body,
                                                 visibility=visibility, actor=staff, at=AT))
            scene.messages.setdefault(owner, []).append(mid)
            if visibility is Visibility.INTERNAL:
                scene.notes.append(mid)
    for visibility, body in ((Visibility.PUBLIC, "The steps attached"),
                             (Visibility.INTERNAL, f"Their log: {NOTE_WORD}")):
        mid = MessageId(uuid.uuid4())
        _, blob = await files.post_file(store, scene.tenant, ACTOR, staff, tid, os.urandom(64),
                                        AT, visibility, body, mid)
        scene.messages[owner].append(mid)
        scene.blobs.setdefault(owner, []).append(blob)
        if visibility is Visibility.INTERNAL:
            scene.notes.append(mid)
            scene.note_blobs.append(blob)


async def _scene(store: EventStore, pool: asyncpg.Pool, tenant: TenantId) -> Scene:
    """Two contacts' tickets opened by staff, two widget sessions' tickets; each with
    a public reply and an internal note; analytics projected."""
    scene = Scene(tenant)
    for name in ("ann", "bob"):
        tid = TicketId(uuid.uuid4())
        async with store.unit_of_work(tenant, ACTOR) as s:
            opened = await run_command(s, tid, OpenTicket(
                ticket_id=tid, subject=f"{name}'s printer", body="It broke",
                requester=Requester(email=f"{name}@example.com"), actor=CUSTOMER, at=AT))
        contact = opened.ticket.requester.contact_id
        assert contact is not None
        scene.tickets[name], scene.contacts[name] = tid, contact
        await _answer(store, scene, name, tid)
    for name in ("carol", "dave"):
        held = await widget.open_session(store, tenant, f"{name}@example.com", ORIGIN, AT,
                                         timedelta(hours=1))
        tid = TicketId(uuid.uuid4())
        async with store.unit_of_work(tenant, widget.widget_actor(held.session_id)) as s:
            await widget.open_ticket(s, held.session_id, tid, f"{name}'s order", "Where is it",
                                     AT)
        scene.tickets[name], scene.sessions[name] = tid, held.session_id
        await _answer(store, scene, name, tid)
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    return scene


def _pattern(scene: Scene, mine: str) -> str:
    """What a scope acting for ``mine`` must never read: the other tickets and their
    messages, every internal note."""
    ids = [str(t) for who, t in scene.tickets.items() if who != mine]
    ids += [str(m) for who, ms in scene.messages.items() if who != mine for m in ms]
    ids += [str(n) for n in scene.notes]
    ids += [str(b) for who, bs in scene.blobs.items() if who != mine for b in bs]
    ids += [str(b) for b in scene.note_blobs]
    return "|".join([*map(re.escape, ids), NOTE_WORD])


async def _carriers(conn: asyncpg.Connection, tables: dict[str, str], pattern: str
                    ) -> dict[str, int]:
    """Per table, the visible rows whose text matches ``pattern``."""
    found = {}
    for table in tables:
        n = await conn.fetchval(f"SELECT count(*) FROM {table} r WHERE r::text ~ $1", pattern)
        if n:
            found[table] = n
    return found


async def _scoped(pool: asyncpg.Pool, scene: Scene, actor: StoreActor, pattern: str
                  ) -> tuple[dict[str, int], dict[str, int]]:
    """(what staff see matching ``pattern``, what ``actor`` sees), per table."""
    async with pool.acquire() as conn:
        assert await conn.fetchval("SELECT rolsuper OR rolbypassrls FROM pg_roles "
                                   "WHERE rolname = current_user") is False
        tables = await catalog.tenant_tables(conn)
        seen = []
        for kind, actor_id in ((ACTOR.kind, ACTOR.id), (actor.kind, actor.id)):
            async with conn.transaction(readonly=True):
                await conn.execute("SELECT set_config('app.tenant_id', $1::text, true), "
                                   "set_config('app.actor_kind', $2, true), "
                                   "set_config('app.actor_id', $3, true)",
                                   str(scene.tenant), kind, actor_id)
                seen.append(await _carriers(conn, tables, pattern))
    return seen[0], seen[1]


async def test_a_customer_reads_no_other_contacts_ticket_nor_a_note_from_any_table(
        store, pool, make_tenant) -> None:
    scene = await _scene(store, pool, (await make_tenant()).tenant_id)
    staff, ann = await _scoped(pool, scene, portal.customer_actor(scene.contacts["ann"]),
                               _pattern(scene, "ann"))
    assert {"tickets", "messages", "events", "search_documents", "uploads", "file_blobs",
            "file_chunks"} <= set(staff), staff
    assert set(ann) == set(UNSCOPED["customer"]), (
        f"a customer reads other contacts' tickets, their messages or internal notes "
        f"from {sorted(set(ann) - set(UNSCOPED['customer']))} (rows: {ann}); listed but "
        f"no longer read: {sorted(set(UNSCOPED['customer']) - set(ann))}")


async def test_a_widget_session_reads_no_other_ticket_nor_a_note_from_any_table(
        store, pool, make_tenant) -> None:
    scene = await _scene(store, pool, (await make_tenant()).tenant_id)
    staff, carol = await _scoped(pool, scene, widget.widget_actor(scene.sessions["carol"]),
                                 _pattern(scene, "carol"))
    assert {"tickets", "messages", "events", "search_documents", "uploads", "file_blobs",
            "file_chunks"} <= set(staff), staff
    assert set(carol) == set(UNSCOPED["widget"]), (
        f"a widget session reads other tickets, their messages or internal notes from "
        f"{sorted(set(carol) - set(UNSCOPED['widget']))} (rows: {carol}); listed but no "
        f"longer read: {sorted(set(UNSCOPED['widget']) - set(carol))}")
