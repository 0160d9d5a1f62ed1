"""``helpdesk migrate``'s data upgrades bring rows written before a change up to date,
and a second run changes nothing."""

from __future__ import annotations

import asyncpg

from api.app import create_app
from handlers.upgrades import upgrade
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth


async def test_ticket_rows_without_a_document_are_served_then_filled(db, make_tenant):
    t = await make_tenant("Old")
    h = auth(t.admin_key)
    async with asgi_client(create_app(app_settings(db))) as http:
        ids = [(await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()["id"]
               for _ in range(3)]
        before = {tid: (await http.get(f"/v1/tickets/{tid}", headers=h)).content
                  for tid in ids}
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
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 3,
                                                   "tickets indexed for search": 3}
            assert await admin.fetchval("SELECT count(*) FROM tickets WHERE view IS NULL") == 0
            assert await admin.fetchval("SELECT count(*) FROM search_documents") == 3
            assert await upgrade(db.admin_url) == {"ticket documents rendered": 0,
                                                   "tickets indexed for search": 0}
        finally:
            await admin.close()
        for tid in ids:
            assert (await http.get(f"/v1/tickets/{tid}", headers=h)).content == before[tid]
