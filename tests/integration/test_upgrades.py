"""``helpdesk migrate``'s data upgrades bring rows written before a change up to date,
and a second run changes nothing."""

from __future__ import annotations

import asyncpg
import httpx

from api.app import create_app
from handlers.upgrades import upgrade
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth


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
            assert (await upgrade(db.admin_url))["ticket documents rendered"] == 3
            assert await admin.fetchval("SELECT count(*) FROM tickets WHERE view IS NULL") == 0
            assert set((await upgrade(db.admin_url)).values()) == {0}
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
            assert b'"fields"' not in (await http.get(f"/v1/tickets/{tid}", headers=h)).content
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 1}
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 0}
        finally:
            await admin.close()
        after = (await http.get(f"/v1/tickets/{tid}", headers=h))
        assert after.content == before and after.json()["fields"] == {}
