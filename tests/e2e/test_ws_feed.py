"""The WebSocket feed over a real socket: auth, rooms, replay, gaps, isolation, revocation."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import httpx
import orjson
import pytest
import websockets
from websockets.exceptions import ConnectionClosed

from domain.contact import ContactFields
from domain.event_types import STREAM_TYPES
from domain.ids import TenantId
from domain.values import Role
from eventstore.pool import connect
from eventstore.store import EventStore
from eventstore.types import importer
from handlers import agents, api_keys, contacts, organizations, sessions
from handlers.credentials import Passwords
from handlers.tenants import operator_unit_of_work
from tests.e2e.ws_support import (
    FIRST,
    append_notes,
    connect_ws,
    recv,
    recv_events,
    recv_until,
    revoke_key,
    send,
    serve,
    ws_settings,
)
from tests.support.desk import ACTOR


async def closed_with(ws: websockets.ClientConnection, timeout: float = 10.0) -> tuple[int, str]:
    try:
        while True:
            await asyncio.wait_for(ws.recv(), timeout)
    except ConnectionClosed as exc:
        assert exc.rcvd is not None
        return exc.rcvd.code, exc.rcvd.reason


async def issue_key(owner_dsn: str, tenant: uuid.UUID, role: str,
                    scopes: frozenset[str] | None = None) -> str:
    async with operator_unit_of_work(owner_dsn, TenantId(tenant)) as uow:
        key = await api_keys.issue_key(uow, api_keys.IssueKey(
            name=f"{role} key", role=Role(role), at=datetime.now(UTC), scopes=scopes))
    return key.secret


async def test_auth_by_header_or_first_message_and_refusals(db, make_tenant) -> None:
    t = await make_tenant("Acme")
    intake = await issue_key(db.admin_url, t.tenant_id, "intake")
    analyst = await issue_key(db.admin_url, t.tenant_id, "analyst")
    scoped = await issue_key(db.admin_url, t.tenant_id, "auditor", frozenset({"ticket:read"}))
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="ping", id=7)
        assert await recv(ws) == {"type": "pong", "id": 7}
        await ws.close()

        async with websockets.connect(srv.url) as ws:
            await send(ws, op="auth", token=t.admin_key.secret)
            hello = await recv(ws)
            assert hello["type"] == "authenticated"
            assert hello["tenant_id"] == str(t.tenant_id) and hello["role"] == "admin"

        async with websockets.connect(srv.url) as ws:
            await send(ws, op="subscribe", room="tenant")
            assert (await closed_with(ws))[0] == 4400

        async with websockets.connect(srv.url) as ws:
            await ws.send("not json")
            assert (await closed_with(ws))[0] == 4400

        async with websockets.connect(srv.url) as ws:
            await send(ws, op="auth", token="hd_nope")
            assert (await closed_with(ws))[0] == 4401

        async with websockets.connect(
                srv.url, additional_headers={"Authorization": "Bearer hd_wrong"}) as ws:
            assert (await closed_with(ws))[0] == 4401

        async with websockets.connect(
                srv.url, additional_headers={"Authorization": f"Bearer {intake}"}) as ws:
            code, reason = await closed_with(ws)
            assert code == 4403 and "intake" in reason

        # Analysts see analytics only: the feed carries message bodies and notes.
        async with websockets.connect(srv.url) as ws:
            await send(ws, op="auth", token=analyst)
            code, reason = await closed_with(ws)
            assert code == 4403 and "analyst" in reason

        # A key whose scopes leave out the feed's permission, though its role holds it.
        async with websockets.connect(srv.url) as ws:
            await send(ws, op="auth", token=scoped)
            code, reason = await closed_with(ws)
            assert code == 4403 and "stream:read" in reason


async def test_malformed_ops_get_errors_and_the_connection_lives_on(db, make_tenant) -> None:
    t = await make_tenant("Acme")
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        bad: list[tuple[object, str]] = [
            ("{nope", "bad_message"),
            ("[1, 2]", "bad_message"),
            ({"op": "dance"}, "unknown_op"),
            ({"no": "op"}, "unknown_op"),
            ({"op": "subscribe", "room": "everything"}, "bad_room"),
            ({"op": "subscribe", "room": "ticket:not-a-uuid"}, "bad_room"),
            ({"op": "subscribe", "room": "tenant", "after_seq": -1}, "bad_after_seq"),
            ({"op": "subscribe", "room": "tenant", "after_seq": "3"}, "bad_after_seq"),
            ({"op": "subscribe", "room": "tenant", "after_seq": True}, "bad_after_seq"),
            ({"op": "unsubscribe", "room": "tenant"}, "not_subscribed"),
            ({"op": "auth", "token": "x"}, "already_authenticated"),
            # A ping id is echoed back: a scalar of bounded size only.
            ('{"op": "ping", "id": ' + "[" * 1000 + "]" * 1000 + "}", "bad_message"),
            ({"op": "ping", "id": {"a": 1}}, "bad_message"),
            ({"op": "ping", "id": "x" * 129}, "bad_message"),
            ({"op": "ping", "id": 1.5}, "bad_message"),
            ({"op": "ping", "id": True}, "bad_message"),
        ]
        for payload, code in bad:
            await ws.send(payload if isinstance(payload, str) else orjson.dumps(payload).decode())
            reply = await recv(ws)
            assert reply["type"] == "error" and reply["code"] == code, (payload, reply)
        await ws.send(b"\x00binary")
        assert (await recv(ws))["code"] == "bad_message"
        await send(ws, op="subscribe", room="tenant")
        assert (await recv(ws))["type"] == "subscribed"
        await send(ws, op="subscribe", room="tenant")
        assert (await recv(ws))["code"] == "already_subscribed"
        await send(ws, op="unsubscribe", room="tenant")
        assert await recv(ws) == {"type": "unsubscribed", "room": "tenant"}
        await send(ws, op="ping")
        assert await recv(ws) == {"type": "pong"}
        await send(ws, op="ping", id="x" * 128)
        assert await recv(ws) == {"type": "pong", "id": "x" * 128}
        await ws.close()


async def test_heartbeats_are_sent(db, make_tenant) -> None:
    t = await make_tenant("Acme")
    async with serve(ws_settings(db.runtime_url, ws_heartbeat_seconds=0.05)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        message = await recv(ws, timeout=5, skip_heartbeats=False)
        assert message == {"type": "heartbeat"}
        http_url = srv.url.replace("ws://", "http://").split("/v1/")[0]
        async with httpx.AsyncClient() as client:
            scraped = (await client.get(f"{http_url}/metrics")).text
        assert "helpdesk_websocket_connections 1.0" in scraped
        await ws.close()


async def test_resume_after_disconnect_replays_exactly_the_missed_events_then_live(
        db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws)) == {"type": "subscribed", "room": "tenant",
                                    "head_seq": FIRST, "replayed": 0}
        seqs = await append_notes(store, t.tenant_id, ticket, 4)
        live = await recv_events(ws, 5)
        assert [m["seq"] for m in live] == seqs == [FIRST + n for n in range(1, 6)]
        first = live[0]
        assert first["room"] == "tenant"
        assert first["event"]["type"] == "TicketOpened"
        assert first["event"]["stream_id"] == str(ticket)
        assert first["event"]["version"] == 1
        assert first["event"]["actor"] == {"kind": "system", "id": "ws-test"}
        assert first["event"]["data"]["subject"] == "Printer on fire"
        assert first["event"]["recorded_at"].endswith("Z")
        k = live[-1]["seq"]
        await ws.close()

        missed = await append_notes(store, t.tenant_id, ticket, 6, per_tx=2)
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=k)
        replay = await recv_until(ws, "subscribed")
        assert [m["seq"] for m in replay[:-1]] == missed
        assert replay[-1] == {"type": "subscribed", "room": "tenant", "head_seq": missed[-1],
                              "replayed": len(missed)}
        more = await append_notes(store, t.tenant_id, ticket, 3)
        assert [m["seq"] for m in await recv_events(ws, 3)] == more
        await ws.close()

    # A new process: nothing in memory, the replay comes from the event store.
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=k)
        replay = await recv_until(ws, "subscribed")
        assert [m["seq"] for m in replay[:-1]] == missed + more
        assert replay[-1]["replayed"] == len(missed + more)
        after = await append_notes(store, t.tenant_id, ticket, 2)
        assert [m["seq"] for m in await recv_events(ws, 2)] == after
        with pytest.raises(TimeoutError):
            await recv(ws, timeout=0.3)
        await ws.close()


async def test_imported_events_are_withheld_live_and_in_replays(db, make_tenant,
                                                               store) -> None:
    """An importer's events (actor ``import:<source>``, docs/import.md) are history: the
    tenant room carries ``withheld`` in their place, live and replayed (from memory and
    from the store), so it stays contiguous; a ticket room leaves them out."""
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()

    def seen(messages: list[dict]) -> list[tuple[str, int]]:
        return [(m["type"], m["seq"]) for m in messages]

    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        await recv_until(ws, "subscribed")
        imported = await append_notes(store, t.tenant_id, ticket, 2, writer=importer("zd"))
        live = await append_notes(store, t.tenant_id, ticket, 1)
        want = [("withheld", s) for s in imported] + [("event", s) for s in live]
        assert seen([await recv(ws) for _ in want]) == want
        room = await connect_ws(srv.url, t.admin_key.secret)
        await send(room, op="subscribe", room=f"ticket:{ticket}", after_seq=0)
        assert seen((await recv_until(room, "subscribed"))[:-1]) == [("event", s) for s in live]
        again = await connect_ws(srv.url, t.admin_key.secret)
        await send(again, op="subscribe", room="tenant", after_seq=FIRST)
        assert seen((await recv_until(again, "subscribed"))[:-1]) == want
        for s in (ws, room, again):
            await s.close()
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert seen((await recv_until(ws, "subscribed"))[:-1]) == want
        await ws.close()


async def test_resume_older_than_the_window_gets_a_gap(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    await append_notes(store, t.tenant_id, ticket, 11, per_tx=12)
    async with serve(ws_settings(db.runtime_url, ws_replay_window=5)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        head = FIRST + 12
        await send(ws, op="subscribe", room="tenant", after_seq=head - 6)
        assert await recv(ws) == {"type": "gap", "room": "tenant", "head_seq": head}
        await send(ws, op="subscribe", room="tenant", after_seq=head - 5)
        replay = await recv_until(ws, "subscribed")
        assert [m["seq"] for m in replay[:-1]] == list(range(head - 4, head + 1))
        await send(ws, op="subscribe", room=f"ticket:{ticket}", after_seq=99)
        assert await recv(ws) == {"type": "gap", "room": f"ticket:{ticket}", "head_seq": head}
        await ws.close()


async def test_tenants_are_isolated_and_ticket_rooms_filter(db, make_tenant, store) -> None:
    a, b = await make_tenant("A"), await make_tenant("B")
    ticket_a1, ticket_a2, ticket_b = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws_a = await connect_ws(srv.url, a.admin_key.secret)
        ws_ticket = await connect_ws(srv.url, a.admin_key.secret)
        await send(ws_a, op="subscribe", room="tenant", after_seq=FIRST)
        await send(ws_ticket, op="subscribe", room=f"ticket:{ticket_a2}", after_seq=0)
        assert (await recv(ws_a))["type"] == "subscribed"
        assert (await recv(ws_ticket))["type"] == "subscribed"
        # B's events come first and in bulk: none may reach A's sockets.
        await append_notes(store, b.tenant_id, ticket_b, 5)
        a1 = await append_notes(store, a.tenant_id, ticket_a1, 2)
        a2 = await append_notes(store, a.tenant_id, ticket_a2, 2)
        await append_notes(store, b.tenant_id, ticket_b, 3)
        got = await recv_events(ws_a, len(a1 + a2))
        assert [m["seq"] for m in got] == a1 + a2 == [FIRST + n for n in range(1, 7)]
        assert {m["event"]["stream_id"] for m in got} == {str(ticket_a1), str(ticket_a2)}
        ticket_only = await recv_events(ws_ticket, len(a2))
        assert [m["seq"] for m in ticket_only] == a2
        assert all(m["room"] == f"ticket:{ticket_a2}" for m in ticket_only)
        assert all(m["event"]["stream_id"] == str(ticket_a2) for m in ticket_only)
        # Replay of a ticket room filters too, and A's room asks for nothing of B's.
        await send(ws_ticket, op="subscribe", room=f"ticket:{ticket_a1}", after_seq=0)
        replay = await recv_until(ws_ticket, "subscribed")
        assert [m["seq"] for m in replay[:-1]] == a1
        for ws in (ws_a, ws_ticket):
            with pytest.raises(TimeoutError):
                await recv(ws, timeout=0.3)
            await ws.close()


async def test_a_revoked_key_is_disconnected(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    async with serve(ws_settings(db.runtime_url, ws_auth_recheck_seconds=0.05)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant")
        assert (await recv(ws))["type"] == "subscribed"
        await send(ws, op="ping")
        assert (await recv(ws))["type"] == "pong"
        await revoke_key(db.admin_url, t.tenant_id, t.admin_key.id)
        code, reason = await closed_with(ws, timeout=5)
        assert (code, reason) == (4401, "api key revoked")
        assert srv.hub.stats()["connections"] == 0
        async with websockets.connect(
                srv.url, additional_headers={"Authorization": f"Bearer {t.admin_key.secret}"}
        ) as again:
            assert (await closed_with(again))[0] == 4401


async def test_a_deactivated_agents_key_is_disconnected_and_refused(db, make_tenant,
                                                                    owner) -> None:
    t = await make_tenant("Acme")
    ann = await owner.agent(t.tenant_id)
    key = await owner.key(t.tenant_id, "agent", ann)
    async with serve(ws_settings(db.runtime_url, ws_auth_recheck_seconds=0.05)) as srv:
        ws = await connect_ws(srv.url, key.secret)
        await owner.set_active(t.tenant_id, ann, False)
        code, reason = await closed_with(ws, timeout=5)
        assert code == 4403 and "deactivated" in reason
        async with websockets.connect(
                srv.url, additional_headers={"Authorization": f"Bearer {key.secret}"}) as again:
            assert (await closed_with(again))[0] == 4403
        await owner.set_active(t.tenant_id, ann, True)
        ws = await connect_ws(srv.url, key.secret)
        await ws.close()


async def test_a_signed_in_person_follows_the_feed_until_they_sign_out(db, make_tenant
                                                                       ) -> None:
    t = await make_tenant("Acme")
    passwords = Passwords(memory_kib=1024, time_cost=1)
    async with operator_unit_of_work(db.admin_url, t.tenant_id) as uow:
        row = await agents.add_agent(uow, agents.AddAgent(
            email="ann@example.com", name="Ann", role=Role.AGENT, at=datetime.now(UTC)))
        await sessions.store_password(uow, row["id"], passwords.hash("p" * 12),
                                      datetime.now(UTC))
    async with serve(ws_settings(db.runtime_url, ws_auth_recheck_seconds=0.05)) as srv:
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        async with httpx.AsyncClient(base_url=base) as http:
            signed = await http.post("/v1/auth/sign-in", json={
                "tenant": str(t.tenant_id), "email": "ann@example.com", "password": "p" * 12})
            assert signed.status_code == 200, signed.text
            ws = await connect_ws(srv.url, signed.json()["access_token"])
            await send(ws, op="subscribe", room="tenant")
            assert (await recv(ws))["type"] == "subscribed"
            out = await http.post("/v1/auth/sign-out")  # the client kept the cookie
            assert out.status_code == 204
        code, reason = await closed_with(ws, timeout=5)
        assert (code, reason) == (4401, "session ended")


async def test_the_listener_reconnects_and_catches_up(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws))["type"] == "subscribed"
        listener = srv.hub.listener
        assert listener is not None and listener.connects == 1
        admin = await connect(db.admin_url)
        try:
            killed = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN%helpdesk_events%'")
        finally:
            await admin.close()
        assert killed == 1
        # Appended while no one listens: the reconnect must catch these up.
        seqs = await append_notes(store, t.tenant_id, ticket, 3)
        got = await recv_events(ws, len(seqs))
        assert [m["seq"] for m in got] == seqs
        assert listener.connects == 2
        more = await append_notes(store, t.tenant_id, ticket, 1)
        assert [m["seq"] for m in await recv_events(ws, 1)] == more
        await ws.close()


async def test_events_without_a_notification_arrive_by_polling(db, make_tenant, pool) -> None:
    """A writer that died between commit and notify: the poll still delivers."""
    t = await make_tenant("Acme")
    silent = EventStore(pool)
    silent.notifier.committed = lambda tenant_id: None  # type: ignore[method-assign]
    async with serve(ws_settings(db.runtime_url, ws_poll_seconds=0.1)) as srv:
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        assert (await recv(ws))["type"] == "subscribed"
        seqs = await append_notes(silent, t.tenant_id, uuid.uuid4(), 2)
        assert [m["seq"] for m in await recv_events(ws, len(seqs), timeout=5)] == seqs
        await ws.close()


async def test_an_auditor_cannot_subscribe_to_another_tenant(db, make_tenant, store, owner
                                                             ) -> None:
    a, b = await make_tenant("A"), await make_tenant("B")
    auditor = await owner.key(a.tenant_id, "auditor")
    ticket_b = uuid.uuid4()
    await append_notes(store, b.tenant_id, ticket_b, 3)
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, auditor.secret)
        # B's ticket by id, from the start: nothing of it exists in A's context.
        await send(ws, op="subscribe", room=f"ticket:{ticket_b}", after_seq=0)
        # A's head: its first admin key and the auditor's key, both on its audit trail.
        assert await recv(ws) == {"type": "subscribed", "room": f"ticket:{ticket_b}",
                                  "head_seq": FIRST + 1, "replayed": 0}
        # The tenant room is always the key's own tenant.
        await send(ws, op="subscribe", room="tenant", after_seq=0)
        replay = await recv_until(ws, "subscribed")
        assert [(m["event"]["type"], m["event"]["data"]["key_id"]) for m in replay[:-1]] == [
            ("ApiKeyIssued", str(a.admin_key.id)), ("ApiKeyIssued", str(auditor.id))]
        await append_notes(store, b.tenant_id, ticket_b, 2)
        with pytest.raises(TimeoutError):
            await recv(ws, timeout=0.5)
        await ws.close()


async def test_contact_and_organization_rooms_carry_their_streams(db, make_tenant,
                                                                  store) -> None:
    t = (await make_tenant("A")).tenant_id
    key = await issue_key(db.admin_url, t, "auditor")
    at = datetime(2026, 6, 1, 9, tzinfo=UTC)
    async with store.unit_of_work(t, ACTOR) as s:
        org = (await organizations.create_organization(s, organizations.NewOrganization(
            name="Acme", domains=("acme.test",), at=at))).organization
        ann = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="ann@acme.test"), at=at))
        bo = await contacts.create_contact(s, contacts.NewContact(
            fields=ContactFields(email="bo@acme.test"), at=at))
    async with serve(ws_settings(db.runtime_url)) as srv:
        ws = await connect_ws(srv.url, key)
        await send(ws, op="subscribe", room=f"contact:{ann.id}", after_seq=0)
        replay = await recv_until(ws, "subscribed")
        assert [m["event"]["type"] for m in replay[:-1]] == ["ContactCreated"]
        await send(ws, op="subscribe", room=f"organization:{org.id}")
        assert (await recv(ws))["type"] == "subscribed"
        async with store.unit_of_work(t, ACTOR) as s:
            await contacts.update_contact(s, contacts.ChangeContact(
                contact_id=bo.id, changes={"name": "Bo"}, at=at))
            await contacts.update_contact(s, contacts.ChangeContact(
                contact_id=ann.id, changes={"name": "Ann"}, at=at))
            await organizations.update_organization(s, organizations.ChangeOrganization(
                organization_id=org.id, name="Acme Ltd", at=at))
        got = await recv_events(ws, 2)
        assert [(m["room"], m["event"]["type"]) for m in got] == [
            (f"contact:{ann.id}", "ContactUpdated"),
            (f"organization:{org.id}", "OrganizationUpdated")]
        with pytest.raises(TimeoutError):
            await recv(ws, timeout=0.3)
        await send(ws, op="subscribe", room="contact:nope")
        bad = await recv(ws)
        assert bad["type"] == "error" and bad["code"] == "bad_room"
        await ws.close()


async def test_after_an_erasure_the_feed_shows_what_the_event_feed_shows(db, make_tenant
                                                                          ) -> None:
    """Events of an erased contact, replayed on the socket (from the process's memory
    and from the store), read as the event feed reads them: ``{"erased": true}``, never
    the text sent live before the erasure, nor an empty text."""
    t = await make_tenant("Acme")
    admin = {"Authorization": f"Bearer {t.admin_key.secret}"}
    secrets = ("Please forget me", "my account 991", "erin.erased@example.com", "a reply")
    async with serve(ws_settings(db.runtime_url)) as srv:
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        ws = await connect_ws(srv.url, t.admin_key.secret)
        await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
        await recv_until(ws, "subscribed")
        async with httpx.AsyncClient(base_url=base) as http:
            opened = await http.post("/v1/tickets", headers=admin, json={
                "subject": secrets[0], "body": secrets[1], "priority": "normal",
                "requester": {"email": secrets[2], "name": "Erin"}})
            assert opened.status_code == 201, opened.text
            ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
            up = await http.post("/v1/uploads", params={"name": "erin-id.png"},
                                 content=b"\x89PNG\r\n\x1a\n" + b"erin" * 64,
                                 headers=admin | {"Content-Type": "image/png"})
            assert up.status_code == 201, up.text
            reply = await http.post(f"/v1/tickets/{ticket}/messages", headers=admin,
                                    json={"body": secrets[3], "visibility": "public",
                                          "attachments": [up.json()["id"]]})
            assert reply.status_code == 201, reply.text
            live = await recv_events(ws, 3)  # ContactCreated, TicketOpened, MessageAdded
            assert secrets[0] in orjson.dumps(live).decode()  # open while the key exists
            # The live feed carries the file's identity, as the message answer does.
            assert live[-1]["event"]["data"]["attachments"] == reply.json()["message"][
                "attachments"] == [{k: up.json()[k] for k in ("id", "name", "size", "type",
                                                               "sha256")}]
            erased = await http.post(f"/v1/contacts/{contact}/erase", headers=admin,
                                     json={"reason": "request"})
            assert erased.status_code == 200, erased.text
            [erasure] = await recv_events(ws, 1)
            assert erasure["event"]["type"] == "ContactErased"
            # This socket stays subscribed: the process keeps the tenant's recent events.
            feed = (await http.get("/v1/events", headers=admin,
                                   params={"after_seq": FIRST})).json()["data"]
        expected = {e["seq"]: e["data"] for e in feed}
        by_type = {e["type"]: e["data"] for e in feed}
        assert by_type["TicketOpened"]["subject"] == {"erased": True}
        assert by_type["MessageAdded"]["body"] == {"erased": True}
        assert by_type["MessageAdded"]["attachments"][0]["name"] == {"erased": True}

        async def replayed() -> dict[int, object]:
            ws = await connect_ws(srv.url, t.admin_key.secret)
            try:
                for room in ("tenant", f"ticket:{ticket}"):
                    await send(ws, op="subscribe", room=room, after_seq=FIRST)
                    got = {m["seq"]: m["event"]["data"]
                           for m in (await recv_until(ws, "subscribed"))[:-1]}
                    if room == "tenant":
                        tenant_room = got
                    else:
                        assert got == {s: d for s, d in tenant_room.items() if s in got}
                        assert len(got) == 2
            finally:
                await ws.close()
            return tenant_room

        # From the process's memory of recent events, then as a new process reads them.
        assert await replayed() == expected
        await ws.close()
    async with serve(ws_settings(db.runtime_url)) as srv:
        assert await replayed() == expected
    for secret in (*secrets, "erin-id"):
        assert secret not in orjson.dumps(list(expected.values())).decode()


async def test_a_role_is_sent_what_the_changes_feed_gives_it(db, make_tenant, owner,
                                                            store) -> None:
    """One rule for both: an agent's tenant room carries the events ``/v1/changes``
    gives the agent, and ``withheld`` (its seq only) for the tenant stream's (keys,
    agents, webhooks), so the room stays contiguous; admins and auditors get them."""
    t = await make_tenant("Acme")
    agent = await owner.key(t.tenant_id, "agent", await owner.agent(t.tenant_id))
    auditor = await issue_key(db.admin_url, t.tenant_id, "auditor")
    ticket = uuid.uuid4()
    keys = {"admin": t.admin_key.secret, "agent": agent.secret, "auditor": auditor}
    async with serve(ws_settings(db.runtime_url)) as srv:
        sockets = {role: await connect_ws(srv.url, key) for role, key in keys.items()}
        for ws in sockets.values():  # a replay of everything so far, then live
            await send(ws, op="subscribe", room="tenant", after_seq=0)
        replayed = {role: await recv_until(ws, "subscribed") for role, ws in sockets.items()}
        notes = await append_notes(store, t.tenant_id, ticket, 2)
        await issue_key(db.admin_url, t.tenant_id, "intake")  # live, in the tenant stream
        notes += await append_notes(store, t.tenant_id, ticket, 1)
        head = notes[-1]
        got = {role: replayed[role][:-1] + [await recv(ws) for _ in range(
            head - replayed[role][-1]["head_seq"])] for role, ws in sockets.items()}

        for role in ("admin", "auditor"):
            assert [m["type"] for m in got[role]] == ["event"] * head, role
            assert [m["seq"] for m in got[role]] == list(range(1, head + 1)), role
        tenant_seqs = [m["seq"] for m in got["admin"]
                       if STREAM_TYPES[m["event"]["type"]] == "tenant"]
        assert len(tenant_seqs) >= 4  # created, agent added, keys issued (one live)
        mine = got["agent"]
        assert [m["seq"] for m in mine] == list(range(1, head + 1))  # contiguous
        assert [m["seq"] for m in mine if m["type"] == "withheld"] == tenant_seqs
        assert all(set(m) == {"type", "room", "seq"} for m in mine if m["type"] == "withheld")
        sent = [m for m in mine if m["type"] == "event"]
        assert set(notes) <= {m["seq"] for m in sent}

        # The same events as the changes feed gives the agent, the same skipped.
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        async with httpx.AsyncClient(base_url=base) as http:
            page = (await http.get("/v1/changes", params={"limit": 1000}, headers={
                "Authorization": f"Bearer {agent.secret}"})).json()
        assert page["next_after_seq"] == page["head_seq"] == head
        assert [(c["seq"], c["type"], c["stream_id"]) for c in page["data"]] == [
            (m["seq"], m["event"]["type"], m["event"]["stream_id"]) for m in sent]

        # A stream's room leaves out what the role may not read, even named directly.
        tenant_stream = next(m["event"]["stream_id"] for m in got["admin"]
                             if m["seq"] == tenant_seqs[0])
        for role, ws in sockets.items():
            await send(ws, op="subscribe", room=f"ticket:{tenant_stream}", after_seq=0)
            done = await recv_until(ws, "subscribed")
            assert done[-1]["replayed"] == (0 if role == "agent" else len(tenant_seqs)), role
            await ws.close()
