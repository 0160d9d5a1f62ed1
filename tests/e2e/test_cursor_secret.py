"""Cursors must survive a hop to another process: the key comes from the database
(or CURSOR_SECRET), never from a per-process random value."""

from __future__ import annotations

from api.app import create_app
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth


async def test_a_cursor_from_one_process_works_in_another(db, tenant):
    h = auth(tenant.admin_key)
    configured = app_settings(db, cursor_secret="s3cret")
    async with asgi_client(create_app(app_settings(db))) as one, \
            asgi_client(create_app(app_settings(db))) as two, \
            asgi_client(create_app(configured)) as other:
        for _ in range(3):
            assert (await one.post("/v1/tickets", json=NEW_TICKET, headers=h)).status_code == 201
        cursor = (await one.get("/v1/tickets", params={"limit": 1},
                                headers=h)).json()["next_cursor"]
        page = await two.get("/v1/tickets", params={"limit": 1, "cursor": cursor}, headers=h)
        assert page.status_code == 200 and len(page.json()["data"]) == 1
        # A process signing with another key rejects it.
        foreign = await other.get("/v1/tickets", params={"cursor": cursor}, headers=h)
        assert foreign.status_code == 400 and foreign.json()["code"] == "invalid_cursor"
