"""Outbound webhooks end to end: configured over HTTP, matched in the write path's
transaction, delivered by the scheduler to a real receiver, signed, retried, dead."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

import asyncpg
import orjson
import pytest

from api.app import create_app
from api.config import ProcessSettings
from api.ops.metrics import Metrics, instrument_jobs
from api.root import ProcessRole, Services, running
from domain.clock import ManualClock
from domain.ids import TenantId, TicketId
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester
from eventstore.types import NewEvent, RecordedEvent, StoreActor
from handlers.erasure import EraseContact, erase_contact
from handlers.tickets import execute
from scheduler import webhooks
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.e2e.conftest import asgi_client
from tests.support.pg import TestDatabase as Db
from tests.support.receiver import Receiver
from tests.support.wait import until


def soon() -> datetime:
    """Deliveries are due when their event commits, by the database's clock; the
    tests' schedulers start a little after now, on a clock they move."""
    return datetime.now(UTC) + timedelta(seconds=5)
SECRET = "whsec-0123456789abcdef"
ACTOR = StoreActor("api_key", "test")


@asynccontextmanager
async def service(db: Db, max_attempts: int = 8,
                  allow_private: bool = True) -> AsyncIterator[Services]:
    # The test receivers listen on 127.0.0.1, a private address webhooks refuse by default.
    settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=6,
                               webhook_max_attempts=max_attempts,
                               webhook_allow_private_addresses=allow_private)
    async with running(settings, ProcessRole.CLI, clock=ManualClock(soon())) as services:
        yield services


async def configure(services: Services, secret: str, body: dict[str, object]) -> dict:
    app = create_app(services.settings, services=services)
    async with asgi_client(app) as http:
        r = await http.put("/v1/webhooks", json=body,
                           headers={"Authorization": f"Bearer {secret}"})
        assert r.status_code == 200, r.text
        assert "secret" not in r.json()
        got = await http.get("/v1/webhooks", headers={"Authorization": f"Bearer {secret}"})
        assert got.json() == r.json()
        return r.json()


async def write(services: Services, tenant: TenantId,
                types: list[str]) -> tuple[list[RecordedEvent], int]:
    """Append as any command does; the store's append observer schedules the
    deliveries in the same transaction. Returns the events and the jobs they got."""
    stream = uuid.uuid4()
    async with services.store.unit_of_work(tenant, ACTOR) as session:
        await session.append(stream, 0, [NewEvent(t, {"n": i}) for i, t in enumerate(types)])
    async with services.store.unit_of_work(tenant) as session:
        events = await session.read_stream(stream)
        n = await session.conn.fetchval(
            "SELECT count(*) FROM jobs WHERE kind = 'webhook.deliver' AND dedupe_key = ANY($1)",
            [f"webhook:{e.seq}" for e in events])
    return events, n


def scheduler(services: Services, clock: ManualClock, metrics: Metrics | None = None
              ) -> Scheduler:
    registry = Registry()
    webhooks.register(registry, timeout=2.0,
                      allow_private=services.settings.webhook_allow_private_addresses,
                      max_attempts=services.settings.webhook_max_attempts)
    if metrics is not None:
        instrument_jobs(registry, metrics)
    return Scheduler(services.store, clock, registry,
                     config=LoopConfig(concurrency=2, poll_interval=0.1,
                                       retry_base_seconds=60, retry_cap_seconds=60))


async def job_rows(db: Db) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(db.admin_url)
    try:
        return await conn.fetch("SELECT * FROM jobs WHERE kind = 'webhook.deliver' ORDER BY id")
    finally:
        await conn.close()


async def test_each_matching_event_is_delivered_once_with_a_valid_signature(
    db: Db, make_tenant
) -> None:
    t = await make_tenant("A")
    with Receiver(204) as receiver:
        async with service(db) as services:
            out = await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET,
                "event_types": ["TicketOpened", "StateChanged"]})
            assert out["event_types"] == ["StateChanged", "TicketOpened"]
            assert out["enabled"] is True and out["version"] == 1
            async with services.store.unit_of_work(t.tenant_id, readonly=True) as s:
                configured = await s.read_stream(t.tenant_id)
            # The tenant stream opens with the first admin key being issued.
            assert [e.type for e in configured] == ["ApiKeyIssued", "WebhookConfigured"]
            assert configured[-1].data["url"] == receiver.url

            events, n = await write(services, t.tenant_id,
                                    ["TicketOpened", "TagsChanged", "StateChanged"])
            assert n == 2
            clock = ManualClock(soon())
            loop = scheduler(services, clock)
            task = asyncio.create_task(loop.run())
            try:
                async def delivered() -> bool:
                    rows = await job_rows(db)
                    return len(rows) == 2 and all(r["status"] == "done" for r in rows)

                await until(delivered)
            finally:
                await loop.stop()
                await task

    assert len(receiver.requests) == 2
    by_type = {orjson.loads(r.body)["type"]: r for r in receiver.requests}
    assert set(by_type) == {"TicketOpened", "StateChanged"}
    for event in (events[0], events[2]):
        req = by_type[event.type]
        body = orjson.loads(req.body)
        assert body["seq"] == event.seq and body["data"] == event.data
        assert req.headers["webhook-id"] == f"{t.tenant_id}.{event.seq}"
        assert webhooks.verify(SECRET, req.headers["webhook-timestamp"], req.body,
                               req.headers["webhook-signature"])
        assert not webhooks.verify("another-secret-000", req.headers["webhook-timestamp"],
                                   req.body, req.headers["webhook-signature"])


async def test_a_failing_receiver_gets_retries_and_then_a_dead_job(db: Db, make_tenant) -> None:
    t = await make_tenant("A")
    with Receiver(500) as receiver:
        async with service(db, max_attempts=3) as services:
            await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET, "event_types": ["TicketOpened"]})
            _, n = await write(services, t.tenant_id, ["TicketOpened"])
            assert n == 1
            clock = ManualClock(soon())
            metrics = Metrics()
            loop = scheduler(services, clock, metrics)
            task = asyncio.create_task(loop.run())
            try:
                async def dead() -> bool:
                    rows = await job_rows(db)
                    if rows[0]["status"] == "dead":
                        return True
                    # Retries wait out their backoff on the injected clock.
                    clock.advance(timedelta(minutes=2))
                    loop.wake()
                    return False

                await until(dead)
            finally:
                await loop.stop()
                await task
    rows = await job_rows(db)
    assert rows[0]["attempts"] == 3
    assert "500" in rows[0]["last_error"]
    assert len(receiver.requests) == 3
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 1
    text = metrics.render().decode()
    assert 'helpdesk_job_claims_total{kind="webhook.deliver"} 3.0' in text
    assert 'helpdesk_job_outcomes_total{kind="webhook.deliver",outcome="retry"} 2.0' in text
    assert 'helpdesk_job_outcomes_total{kind="webhook.deliver",outcome="dead"} 1.0' in text


async def test_without_a_webhook_nothing_is_enqueued(db: Db, make_tenant) -> None:
    t = await make_tenant("A")
    async with service(db) as services:
        _, n = await write(services, t.tenant_id, ["TicketOpened", "StateChanged"])
        assert n == 0
        await configure(services, t.admin_key.secret, {
            "url": "http://127.0.0.1:9/none", "secret": SECRET,
            "event_types": ["TicketOpened"], "enabled": False})
        _, n = await write(services, t.tenant_id, ["TicketOpened"])
        assert n == 0
    assert await job_rows(db) == []


async def test_webhook_input_is_checked(db: Db, make_tenant) -> None:
    t = await make_tenant("A")
    async with service(db) as services:
        app = create_app(services.settings, services=services)
        h = {"Authorization": f"Bearer {t.admin_key.secret}"}
        async with asgi_client(app) as http:
            r = await http.put("/v1/webhooks", headers=h, json={
                "url": "http://127.0.0.1/x", "event_types": ["TicketOpened"]})
            assert r.status_code == 422 and r.json()["code"] == "validation_failed"
            r = await http.put("/v1/webhooks", headers=h, json={
                "url": "ftp://x", "secret": SECRET, "event_types": ["Nope"]})
            assert r.status_code == 422
            assert {tuple(e["loc"]) for e in r.json()["errors"]} == {
                ("body", "url"), ("body", "event_types")}
            r = await http.put("/v1/webhooks", headers=h, json={
                "url": "https://example.com/x", "secret": SECRET, "event_types": ["", "Nope"]})
            assert r.status_code == 422
            assert r.json()["errors"][0]["msg"].endswith("unknown event types: '', 'Nope'")
            for enabled in (0, "yes", None):
                r = await http.put("/v1/webhooks", headers=h, json={
                    "url": "https://example.com/x", "secret": SECRET,
                    "event_types": ["*"], "enabled": enabled})
                assert r.status_code == 422, (enabled, r.text)
                assert r.json()["errors"][0]["loc"] == ["body", "enabled"]
            r = await http.get("/v1/webhooks", headers=h)
            assert r.status_code == 404 and r.json()["code"] == "webhook_not_configured"


async def test_private_destinations_are_refused_unless_allowed(db: Db, make_tenant) -> None:
    t = await make_tenant("A")
    h = {"Authorization": f"Bearer {t.admin_key.secret}"}
    async with service(db, allow_private=False) as services:
        app = create_app(services.settings, services=services)
        async with asgi_client(app) as http:
            for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://10.1.2.3/x",
                        "http://169.254.169.254/latest/meta-data", "http://[::1]/x"):
                r = await http.put("/v1/webhooks", headers=h, json={
                    "url": url, "secret": SECRET, "event_types": ["TicketOpened"]})
                assert r.status_code == 422, (url, r.text)
                assert "private" in r.json()["detail"]
    with Receiver(204) as receiver:
        async with service(db, allow_private=True) as services:
            await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET, "event_types": ["TicketOpened"]})
            events, n = await write(services, t.tenant_id, ["TicketOpened"])
            assert n == 1
            job = {"tenant_id": t.tenant_id, "payload": {"seq": events[0].seq}}
            # Checked again when delivering, after resolving the name: a receiver that
            # moved to a private address since it was configured is refused.
            with pytest.raises(webhooks.WebhookDeliveryFailed, match="private address"):
                await webhooks.deliver(services, job, allow_private=False)
            await webhooks.deliver(services, job, allow_private=True)
    assert len(receiver.requests) == 1


async def test_a_put_without_a_secret_keeps_the_current_one(db: Db, make_tenant) -> None:
    t = await make_tenant("A")
    with Receiver(204) as receiver:
        async with service(db) as services:
            await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET, "event_types": ["TicketOpened"]})
            changed = await configure(services, t.admin_key.secret, {
                "url": receiver.url, "event_types": ["StateChanged", "TicketOpened"]})
            assert changed["version"] == 2
            assert changed["event_types"] == ["StateChanged", "TicketOpened"]
            events, n = await write(services, t.tenant_id, ["StateChanged"])
            assert n == 1
            await webhooks.deliver(services, {"tenant_id": t.tenant_id, "payload": {
                "seq": events[0].seq}}, allow_private=True)
    [req] = receiver.requests
    assert webhooks.verify(SECRET, req.headers["webhook-timestamp"], req.body,
                           req.headers["webhook-signature"])


async def test_a_retry_after_the_contacts_erasure_carries_the_redacted_form(
    db: Db, make_tenant
) -> None:
    """A delivery is opened when it is sent: tried while the contact's key exists, the
    receiver gets the personal fields; retried after the contact's erasure, it gets
    them as ``{"erased": true}``, and none of the text."""
    t = await make_tenant("A")
    secrets = ("Forget this subject", "a body with account 5521", "erin@example.com", "Erin")
    with Receiver(500) as receiver:
        async with service(db, max_attempts=5) as services:
            await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET, "event_types": ["TicketOpened"]})
            ticket = TicketId(uuid.uuid4())
            async with services.store.unit_of_work(t.tenant_id, ACTOR) as s:
                await execute(s, ticket, OpenTicket(
                    ticket_id=ticket, subject=secrets[0], body=secrets[1],
                    requester=Requester(email=secrets[2], name=secrets[3]),
                    actor=Actor(kind=ActorKind.AGENT, id="agent"), at=soon()))
            clock = ManualClock(soon())

            async def attempts(n: int) -> None:
                loop = scheduler(services, clock)
                task = asyncio.create_task(loop.run())
                try:
                    async def tried() -> bool:
                        if len(receiver.requests) >= n:
                            return True
                        clock.advance(timedelta(minutes=2))  # past the retry's backoff
                        loop.wake()
                        return False

                    await until(tried)
                finally:
                    await loop.stop()
                    await task

            await attempts(1)  # refused by the receiver: queued for a retry
            first = orjson.loads(receiver.requests[0].body)
            assert first["data"]["subject"] == secrets[0]
            assert first["data"]["requester"]["email"] == secrets[2]
            assert (await job_rows(db))[0]["status"] == "ready"  # for its retry

            async with services.store.unit_of_work(t.tenant_id, ACTOR) as s:
                contact = await s.conn.fetchval("SELECT contact_id FROM tickets")
                await erase_contact(s, EraseContact(
                    contact_id=contact, reason="asked", at=soon(),
                    by=Actor(kind=ActorKind.AGENT, id="admin")))
            receiver.status = 204
            await attempts(2)
    rows = await job_rows(db)
    assert [r["status"] for r in rows] == ["done"] and rows[0]["attempts"] == 2
    retry = receiver.requests[1]
    assert retry.headers["webhook-id"] == receiver.requests[0].headers["webhook-id"]
    assert webhooks.verify(SECRET, retry.headers["webhook-timestamp"], retry.body,
                           retry.headers["webhook-signature"])
    data = orjson.loads(retry.body)["data"]
    assert data["subject"] == data["body"] == {"erased": True}
    assert data["requester"] == {"contact_id": str(contact), "email": {"erased": True},
                                 "name": {"erased": True}}
    for secret in secrets:
        assert secret.encode() not in retry.body


async def test_a_message_with_a_file_is_delivered_with_the_files_identity(
    db: Db, make_tenant
) -> None:
    """A webhook for ``MessageAdded`` carries each file's id, name, size, type and hash,
    as the message answer lists them, never the bytes."""
    t = await make_tenant("A")
    h = {"Authorization": f"Bearer {t.admin_key.secret}"}
    data = b"\x89PNG\r\n\x1a\n" + b"pixels" * 100
    with Receiver(204) as receiver:
        async with service(db) as services:
            await configure(services, t.admin_key.secret, {
                "url": receiver.url, "secret": SECRET, "event_types": ["MessageAdded"]})
            async with asgi_client(create_app(services.settings, services=services)) as http:
                up = await http.post("/v1/uploads", params={"name": "shot.png"}, content=data,
                                     headers=h | {"Content-Type": "image/png"})
                assert up.status_code == 201, up.text
                opened = await http.post("/v1/tickets", headers=h, json={
                    "subject": "s", "body": "b", "requester": {"email": "c@example.com"}})
                posted = await http.post(f"/v1/tickets/{opened.json()['id']}/messages",
                                         headers=h, json={"body": "see",
                                                          "attachments": [up.json()["id"]]})
                assert posted.status_code == 201, posted.text
            loop = scheduler(services, ManualClock(soon()))
            task = asyncio.create_task(loop.run())
            try:
                await until(lambda: len(receiver.requests) == 1, what="the delivery")
            finally:
                await loop.stop()
                await task
    [delivered] = receiver.requests
    body = orjson.loads(delivered.body)
    assert body["type"] == "MessageAdded"
    assert body["data"]["attachments"] == posted.json()["message"]["attachments"] == [
        {k: up.json()[k] for k in ("id", "name", "size", "type", "sha256")}]
    assert data not in delivered.body
