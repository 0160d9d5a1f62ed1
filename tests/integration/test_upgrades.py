"""``helpdesk migrate``'s data upgrades bring rows written before a change up to date,
and a second run changes nothing."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import orjson

from api.app import create_app
from domain.ids import TicketId
from domain.mapper import to_stored
from domain.sla import SlaPolicy
from domain.ticket.commands import OpenTicket
from domain.ticket.decide import decide
from domain.values import Actor, ActorKind, Requester
from eventstore.types import NewEvent
from handlers.upgrades import upgrade
from projections.inline import PendingEvent, apply_inline
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support.desk import ACTOR

INDEXED = "tickets, contacts and organizations indexed for search"
NOTES = "analytics staff notes counted from ticket events"
CELLS = "analytics summary cells filled from ticket rows"
VERSIONS = "kept ticket versions rendered as their tickets"
POLICIES = "SLA policies made from the settings' targets"


async def _three_tickets(http: httpx.AsyncClient, h: dict[str, str]) -> dict[str, bytes]:
    """Open three tickets; each one's id and the bytes of its answer."""
    ids = [(await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()["id"]
           for _ in range(3)]
    return {tid: (await http.get(f"/v1/tickets/{tid}", headers=h)).content for tid in ids}


async def test_ticket_rows_without_a_document_are_served_then_filled(db, make_tenant):
    t = await make_tenant("Old")
    h = auth(t.admin_key)
    async with asgi_client(create_app(app_settings(db))) as http:
        before = await _three_tickets(http, h)
        ids = list(before)
        page = (await http.get("/v1/tickets", headers=h)).content
        admin = await asyncpg.connect(db.admin_url)
        try:
            # As if the rows were written before tickets.view existed.
            await admin.execute("UPDATE tickets SET view = NULL")
            # Still answered, rendered from the folded state, byte for byte.
            for tid in ids:
                assert (await http.get(f"/v1/tickets/{tid}", headers=h)).content == before[tid]
            assert (await http.get("/v1/tickets", headers=h)).content == page
            # And as if they were written before search existed.
            await admin.execute("DELETE FROM search_documents")
            # Three tickets of one requester: three tickets and one contact to index.
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 3,
                                                   "tickets linked to contacts": 0,
                                                   INDEXED: 4, NOTES: 0, CELLS: 0, VERSIONS: 0,
                                               POLICIES: 4}
            assert await admin.fetchval("SELECT count(*) FROM tickets WHERE view IS NULL") == 0
            assert dict(await admin.fetch("SELECT kind, count(*) FROM search_documents "
                                          "GROUP BY kind")) == {"ticket": 3, "contact": 1}
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 0,
                                                   "tickets linked to contacts": 0,
                                                   INDEXED: 0, NOTES: 0, CELLS: 0, VERSIONS: 0,
                                               POLICIES: 0}
        finally:
            await admin.close()
        for tid in ids:
            assert (await http.get(f"/v1/tickets/{tid}", headers=h)).content == before[tid]


async def test_ticket_documents_from_before_groups_gain_group_id(db, make_tenant):
    t = await make_tenant("Old")
    h = auth(t.admin_key)
    async with asgi_client(create_app(app_settings(db))) as http:
        before = await _three_tickets(http, h)
        ids = list(before)
        admin = await asyncpg.connect(db.admin_url)
        try:
            # As if the documents were rendered before tickets had a group.
            await admin.execute("UPDATE tickets SET view = (view::jsonb - 'group_id')::json")
            assert "group_id" not in (await http.get(f"/v1/tickets/{ids[0]}", headers=h)).json()
            assert (await upgrade(db.admin_url))["ticket documents rendered"] == 3
            assert set((await upgrade(db.admin_url)).values()) == {0}
        finally:
            await admin.close()
        for tid in ids:
            assert (await http.get(f"/v1/tickets/{tid}", headers=h)).content == before[tid]


async def test_ticket_documents_without_fields_are_rendered_again(db, make_tenant):
    t = await make_tenant("Before fields")
    h = auth(t.admin_key)
    async with asgi_client(create_app(app_settings(db))) as http:
        tid = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()["id"]
        before = (await http.get(f"/v1/tickets/{tid}", headers=h)).content
        admin = await asyncpg.connect(db.admin_url)
        try:
            # As if the document had been stored before tickets had fields.
            await admin.execute("UPDATE tickets SET view = (view::jsonb - 'fields')::json")
            # And its kept current version, as migration 0611 copies it from the row.
            await admin.execute("UPDATE ticket_versions SET view = (view::jsonb - 'fields')"
                                "::json WHERE valid_to_seq = 9223372036854775807")
            assert b'"fields"' not in (await http.get(f"/v1/tickets/{tid}", headers=h)).content
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 1,
                                                   "tickets linked to contacts": 0,
                                                   INDEXED: 0, NOTES: 0, CELLS: 0, VERSIONS: 1,
                                               POLICIES: 4}
            assert await admin.fetchval(
                "SELECT v.view::text = t.view::text FROM ticket_versions v JOIN tickets t "
                "ON t.id = v.id AND t.version = v.version") is True
            assert set((await upgrade(db.admin_url)).values()) == {0}
        finally:
            await admin.close()
        after = (await http.get(f"/v1/tickets/{tid}", headers=h))
        assert after.content == before and after.json()["fields"] == {}
async def _open_as_before_contacts(store, tenant_id, email, name, at):  # type: ignore[no-untyped-def]
    """A ticket as the code before contacts wrote it: no contact, a requester of e-mail
    and name only in its event, its row and its document."""
    tid = TicketId(uuid.uuid4())
    [event] = decide(OpenTicket(ticket_id=tid, subject="Old", body="b",
                                requester=Requester(email=email, name=name),
                                actor=Actor(kind=ActorKind.CUSTOMER, id=email), at=at),
                     None, SlaPolicy())
    type_, version, data = to_stored(event)
    del data["requester"]["contact_id"]
    async with store.unit_of_work(tenant_id, ACTOR) as s:
        await apply_inline(s.conn, tenant_id, [PendingEvent(tid, 1, type_, version, data)])
        await s.conn.execute("UPDATE tickets SET view = NULL, requester = requester - "
                             "'contact_id' WHERE id = $1", tid)
        await s.append(tid, 0, [NewEvent(type_, data, version)])
    return tid


async def test_tickets_from_before_contacts_are_linked_by_the_system_once(db, store,
                                                                          make_tenant):
    t = await make_tenant("Old")
    t0 = datetime(2026, 5, 1, 9, tzinfo=UTC)
    old = [await _open_as_before_contacts(store, t.tenant_id, email, name,
                                          t0 + timedelta(minutes=i))
           for i, (email, name) in enumerate([("ann@example.com", "Ann"),
                                              ("ANN@example.com", None),
                                              ("bo@example.com", "Bo")])]
    h = auth(t.admin_key)
    async with asgi_client(create_app(app_settings(db))) as http:
        # A contact made since the upgrade: an old ticket of its e-mail links to it.
        bo = (await http.post("/v1/contacts", headers=h,
                              json={"email": "Bo@Example.com", "name": "Bo"})).json()
        unlinked = (await http.get("/v1/tickets?requester_id=none", headers=h)).json()
        assert {x["id"] for x in unlinked["data"]} == {str(tid) for tid in old}
        assert await upgrade(db.admin_url) == {"ticket documents rendered": 3,
                                               "tickets linked to contacts": 3,
                                               INDEXED: 0, NOTES: 0, CELLS: 0, VERSIONS: 0,
                                               POLICIES: 4}
        tickets = [(await http.get(f"/v1/tickets/{tid}", headers=h)).json() for tid in old]
        ann = tickets[0]["requester"]["contact_id"]
        assert ann is not None
        assert [x["requester"] for x in tickets] == [
            {"contact_id": ann, "email": "ann@example.com", "name": "Ann"},
            {"contact_id": ann, "email": "ANN@example.com", "name": "Ann"},
            {"contact_id": bo["id"], "email": "bo@example.com", "name": "Bo"}]
        listed = (await http.get(f"/v1/tickets?requester_id={ann}", headers=h)).json()
        assert {x["id"] for x in listed["data"]} == {str(old[0]), str(old[1])}
        assert (await http.get("/v1/tickets?requester_id=none", headers=h)).json()["data"] == []

    admin = await asyncpg.connect(db.admin_url)
    try:
        await admin.execute("SELECT set_config('app.tenant_id', $1, false)", str(t.tenant_id))
        appended = await admin.fetch(
            "SELECT type, actor_kind, actor_id FROM events WHERE tenant_id = $1 "
            "AND type IN ('ContactCreated', 'RequesterChanged') ORDER BY seq", t.tenant_id)
        # Bo's contact came over the API; Ann's and the links came from the upgrade.
        assert [(r["type"], r["actor_kind"]) for r in appended] == [
            ("ContactCreated", "api_key"), ("ContactCreated", "system"),
            ("RequesterChanged", "system"), ("RequesterChanged", "system"),
            ("RequesterChanged", "system")]
        head = await admin.fetchval("SELECT seq FROM tenant_heads WHERE tenant_id = $1",
                                    t.tenant_id)
        views = await admin.fetch("SELECT view FROM tickets WHERE tenant_id = $1", t.tenant_id)
        assert all("contact_id" in orjson.loads(v["view"])["requester"] for v in views)
        assert await upgrade(db.admin_url) == {"ticket documents rendered": 0,
                                               "tickets linked to contacts": 0,
                                               INDEXED: 0, NOTES: 0, CELLS: 0, VERSIONS: 0,
                                               POLICIES: 0}
        assert await admin.fetchval("SELECT seq FROM tenant_heads WHERE tenant_id = $1",
                                    t.tenant_id) == head
    finally:
        await admin.close()
