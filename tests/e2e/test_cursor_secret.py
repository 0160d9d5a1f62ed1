"""Cursors must survive a hop to another process: the key comes from the database
(or CURSOR_SECRET), never from a per-process random value."""

from __future__ import annotations

import httpx

from api.app import create_app
from api.bootstrap import Services
from api.settings import Settings
from domain.clock import SystemClock
from eventstore.store import EventStore
from tests.e2e.conftest import NEW_TICKET, TEST_SETTINGS, auth, with_services


def client_for(pool, settings: Settings) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    services = Services(settings=settings, pool=pool, store=EventStore(pool), clock=SystemClock())
    app = with_services(create_app(settings, services=services), services)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def test_a_cursor_from_one_process_works_in_another(pool, tenant):
    h = auth(tenant.admin_key)
    configured = TEST_SETTINGS.model_copy(update={"cursor_secret": "s3cret"})
    async with client_for(pool, TEST_SETTINGS) as one, client_for(pool, TEST_SETTINGS) as two, \
            client_for(pool, configured) as other:
        for _ in range(3):
            assert (await one.post("/v1/tickets", json=NEW_TICKET, headers=h)).status_code == 201
        cursor = (await one.get("/v1/tickets", params={"limit": 1},
                                headers=h)).json()["next_cursor"]
        page = await two.get("/v1/tickets", params={"limit": 1, "cursor": cursor}, headers=h)
        assert page.status_code == 200 and len(page.json()["data"]) == 1
        # A process signing with another key rejects it.
        foreign = await other.get("/v1/tickets", params={"cursor": cursor}, headers=h)
        assert foreign.status_code == 400 and foreign.json()["code"] == "invalid_cursor"
