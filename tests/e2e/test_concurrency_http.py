"""Concurrency over HTTP: idempotency keys, many commands on one ticket, paging while
tickets are being opened."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

from domain.ids import TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.types import StoreActor
from handlers.tickets import execute
from tests.e2e.conftest import NEW_TICKET, auth


async def count_tickets(store, tenant_id):  # type: ignore[no-untyped-def]
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        return await s.conn.fetchval("SELECT count(*) FROM tickets")


async def test_twenty_concurrent_requests_with_one_idempotency_key(http, tenant, store):
    headers = auth(tenant.admin_key, **{"Idempotency-Key": "open-once"})
    responses = await asyncio.gather(*(
        http.post("/v1/tickets", json=NEW_TICKET, headers=headers) for _ in range(20)))
    statuses = [r.status_code for r in responses]
    assert set(statuses) <= {201, 409}, statuses
    for r in responses:
        if r.status_code == 409:
            assert r.json()["code"] == "idempotency_in_flight"
    ids = {r.json()["id"] for r in responses if r.status_code != 409}
    assert len(ids) == 1
    assert await count_tickets(store, tenant.tenant_id) == 1

    replay = await http.post("/v1/tickets", json=NEW_TICKET, headers=headers)
    assert replay.status_code == 201
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json()["id"] in ids and replay.headers["etag"] == '"1"'
    assert replay.headers["location"] == f"/v1/tickets/{replay.json()['id']}"

    changed = await http.post("/v1/tickets", json=NEW_TICKET | {"subject": "Other"},
                              headers=headers)
    assert changed.status_code == 422 and changed.json()["code"] == "idempotency_key_reused"
    assert await count_tickets(store, tenant.tenant_id) == 1

    # The same key on another route is another record; expired records are ignored.
    async with store.unit_of_work(tenant.tenant_id) as s:
        await s.conn.execute("UPDATE idempotency_keys SET expires_at = now() - interval '1s'")
    again = await http.post("/v1/tickets", json=NEW_TICKET, headers=headers)
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers
    assert await count_tickets(store, tenant.tenant_id) == 2


async def test_thirty_concurrent_commands_on_one_ticket(http, tenant, store):
    admin = tenant.admin_key
    created = (await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(admin))).json()
    url = f"/v1/tickets/{created['id']}/messages"
    responses = await asyncio.gather(*(
        http.post(url, json={"body": f"m{i}"}, headers=auth(admin)) for i in range(30)))
    ok = [r for r in responses if r.status_code == 201]
    for r in responses:
        assert r.status_code in (201, 409), r.text
        if r.status_code == 409:
            assert r.json()["code"] == "version_conflict"
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        versions = [e.version for e in await s.read_stream(uuid.UUID(created["id"]))]
    assert versions == list(range(1, len(ok) + 2))  # gapless: one event per success
    assert sorted(r.headers["etag"] for r in ok) == sorted(f'"{v}"' for v in versions[1:])
    # No update lost: every accepted message is there, exactly once.
    listed = (await http.get(url, params={"limit": 100}, headers=auth(admin))).json()["data"]
    assert sorted(m["body"] for m in listed[1:]) == sorted(r.json()["message"]["body"] for r in ok)

    # With If-Match, exactly one of many writers at one version wins; the rest get 412.
    version = len(ok) + 1
    responses = await asyncio.gather(*(
        http.post(f"/v1/tickets/{created['id']}/tags", json={"add": [f"t{i}"]},
                  headers=auth(admin, **{"If-Match": f'"{version}"'})) for i in range(10)))
    assert sorted(r.status_code for r in responses) == [200] + [412] * 9


async def test_paging_500_tickets_while_new_ones_arrive(http, tenant, store):
    t0 = datetime.now(UTC) - timedelta(hours=1)
    existing: set[str] = set()
    async with store.unit_of_work(tenant.tenant_id, StoreActor("api_key", "seed")) as s:
        for i in range(500):
            tid = TicketId(uuid.uuid4())
            # Many share a created_at, so the id breaks ties inside the keyset.
            await execute(s, tid, OpenTicket(
                ticket_id=tid, subject=f"seed {i}", body="b",
                requester=Requester(email="a@example.com"),
                actor=Actor(kind=ActorKind.CUSTOMER, id="a@example.com"),
                at=t0 + timedelta(seconds=i // 3)))
            existing.add(str(tid))

    stop = asyncio.Event()

    async def keep_opening() -> int:
        opened = 0
        while not stop.is_set() and opened < 200:
            r = await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(tenant.admin_key))
            assert r.status_code == 201
            opened += 1
        return opened

    writer = asyncio.create_task(keep_opening())
    seen: list[str] = []
    cursor = None
    for _ in range(100):
        params = {"limit": 37} | ({"cursor": cursor} if cursor else {})
        page = await http.get("/v1/tickets", params=params, headers=auth(tenant.admin_key))
        assert page.status_code == 200, page.text
        seen += [t["id"] for t in page.json()["data"]]
        cursor = page.json()["next_cursor"]
        await asyncio.sleep(0)  # a yield: let the writer open tickets between pages
        if cursor is None:
            break
    stop.set()
    opened = await writer
    assert opened > 0
    assert len(seen) == len(set(seen)), "a ticket was seen twice"
    assert existing <= set(seen), "a ticket that existed when paging began was skipped"
