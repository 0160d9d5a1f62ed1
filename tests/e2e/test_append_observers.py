"""Every append, whatever made it, schedules its webhook deliveries in its own
transaction (a trigger on events) and is counted for /metrics."""

from __future__ import annotations

import asyncpg

from eventstore.pool import connect
from tests.e2e.conftest import NEW_TICKET, asgi_client, auth


async def _deliveries(db) -> list[asyncpg.Record]:
    conn = await connect(db.admin_url)  # with the jsonb codec
    try:
        return await conn.fetch(
            "SELECT e.type, j.dedupe_key, j.payload FROM jobs j "
            "JOIN events e ON e.tenant_id = j.tenant_id AND e.seq = (j.payload->>'seq')::bigint "
            "WHERE j.kind = 'webhook.deliver' ORDER BY j.id")
    finally:
        await conn.close()


async def test_ticket_commands_schedule_webhook_deliveries(db, http, tenant):
    key = tenant.admin_key
    assert (await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(key))).status_code == 201
    assert await _deliveries(db) == []  # no webhook: dormant, nothing scheduled

    put = await http.put("/v1/webhooks", headers=auth(key), json={
        "url": "https://hooks.example.com/helpdesk", "secret": "s" * 32,
        "event_types": ["TicketOpened", "StateChanged"]})
    assert put.status_code == 200, put.text
    opened = await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(key))
    ticket = opened.json()["id"]
    moved = await http.post(f"/v1/tickets/{ticket}/state", json={"state": "pending"},
                            headers=auth(key))
    assert moved.status_code == 200, moved.text
    await http.post(f"/v1/tickets/{ticket}/priority", json={"priority": "low"},
                    headers=auth(key))  # PriorityChanged is not subscribed

    deliveries = await _deliveries(db)
    assert [row["type"] for row in deliveries] == ["TicketOpened", "StateChanged"]
    # One per event, named by its seq, whoever appends it.
    assert all(row["dedupe_key"] == f"webhook:{row['payload']['seq']}" for row in deliveries)


async def test_appends_are_counted(app, tenant):
    async with asgi_client(app) as http:  # with the lifespan: metrics are attached
        await _count_one_append(http, tenant)


async def _count_one_append(http, tenant) -> None:
    before = await http.get("/metrics")
    assert before.status_code == 200

    def appended(text: str) -> float:
        for line in text.splitlines():
            if line.startswith("helpdesk_events_appended_total "):
                return float(line.split()[1])
        raise AssertionError("helpdesk_events_appended_total is missing")

    start = appended(before.text)
    # The first ticket for an e-mail creates its contact too: two events.
    await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(tenant.admin_key))
    assert appended((await http.get("/metrics")).text) == start + 2
    await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(tenant.admin_key))
    assert appended((await http.get("/metrics")).text) == start + 3
