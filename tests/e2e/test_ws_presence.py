"""Presence on the live feed (docs/websocket.md, "Presence"): an agent viewing and
typing on a ticket on one ``helpdesk serve`` process is seen by an agent on another,
a newcomer gets the list, and it lapses by itself or goes with the socket. Presence
on a ticket the agent may not see is refused and reaches nobody; bad presence ops get
an error and the connection stays."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest

from client.stream import StreamClient
from tests.e2e.conftest import NEW_TICKET, Owner, auth
from tests.e2e.ws_support import (
    connect_ws,
    recv,
    recv_until,
    send,
    serve,
    serve_process,
    ws_settings,
)
from tests.support.wait import until

VIEWING = 3.0  # WS_PRESENCE_SECONDS of the processes
TYPING = 1.0  # WS_TYPING_SECONDS


async def _join(url: str, secret: str, ticket: uuid.UUID) -> tuple[Any, list[dict[str, Any]]]:
    """A socket subscribed to the ticket's room, and who it was told is present (a
    ``presence_list`` right behind ``subscribed``, or none when nobody is)."""
    ws = await connect_ws(url, secret)
    await send(ws, op="subscribe", room=f"ticket:{ticket}")
    await send(ws, op="ping", id="joined")
    got = await recv_until(ws, "pong")
    kinds = [m["type"] for m in got if m["type"] != "event"]
    assert kinds in (["subscribed", "pong"], ["subscribed", "presence_list", "pong"]), got
    listed = [m for m in got if m["type"] == "presence_list"]
    assert all(m["room"] == f"ticket:{ticket}" for m in listed)
    return ws, listed[0]["present"] if listed else []


async def _presence(ws: Any, timeout: float = 10.0) -> dict[str, Any]:
    message = await recv(ws, timeout)
    assert message["type"] == "presence", message
    return message


@pytest.mark.slow
async def test_presence_crosses_processes_and_lapses(db, make_tenant, owner: Owner):
    t = await make_tenant("Acme")
    ann = await owner.agent(t.tenant_id)
    bob = await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", agent_id=ann)
    bob_key = await owner.key(t.tenant_id, "agent", agent_id=bob)
    env = {"WS_PRESENCE_SECONDS": str(VIEWING), "WS_TYPING_SECONDS": str(TYPING)}
    async with serve_process(db.runtime_url, **env) as one, \
            serve_process(db.runtime_url, **env) as two:
        async with httpx.AsyncClient(base_url=one.replace("ws://", "http://")
                                     .removesuffix("/v1/stream")) as http:
            ticket = uuid.UUID((await _ok(await http.post(
                "/v1/tickets", json=NEW_TICKET, headers=auth(t.admin_key)), 201))["id"])
        on_one, present = await _join(one, ann_key.secret, ticket)
        assert present == []
        on_two, present = await _join(two, bob_key.secret, ticket)
        assert present == []

        await send(on_one, op="presence", ticket_id=str(ticket), state="viewing")
        seen = await _presence(on_two)
        assert (seen["room"], seen["ticket_id"], seen["agent"]["id"], seen["state"]) == (
            f"ticket:{ticket}", str(ticket), str(ann), "viewing")
        assert seen["agent"]["name"] == "Agent" and seen["expires_at"].endswith("Z")

        # A newcomer on the other process is given who is there.
        later, present = await _join(two, bob_key.secret, ticket)
        assert [(p["agent"]["id"], p["state"]) for p in present] == [(str(ann), "viewing")]
        await later.close()

        # Typing, not refreshed: back to viewing after WS_TYPING_SECONDS, then gone
        # after WS_PRESENCE_SECONDS, each told once, by the other process's own clock.
        await send(on_one, op="presence", ticket_id=str(ticket), state="typing")
        typed = time.monotonic()
        assert (await _presence(on_two))["state"] == "typing"
        assert (await _presence(on_two, timeout=VIEWING))["state"] == "viewing"
        assert time.monotonic() - typed >= TYPING * 0.8
        gone = await _presence(on_two, timeout=VIEWING * 2)
        assert (gone["agent"]["id"], gone["state"]) == (str(ann), "gone")
        assert time.monotonic() - typed >= VIEWING * 0.8
        # Ann is not told of her own presence: nothing came to her but Bob's.
        await send(on_one, op="ping", id=1)
        assert await recv(on_one) == {"type": "pong", "id": 1}

        # A dropped socket clears its presence at once, not after the time to live.
        await send(on_one, op="presence", ticket_id=str(ticket), state="viewing")
        assert (await _presence(on_two))["state"] == "viewing"
        closed = time.monotonic()
        await on_one.close()
        gone = await _presence(on_two, timeout=VIEWING)
        assert gone["state"] == "gone" and time.monotonic() - closed < VIEWING * 0.8
        await on_two.close()


async def _ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


async def test_presence_on_a_ticket_the_agent_may_not_see_is_refused(
        db, make_tenant, owner: Owner):
    t = await make_tenant("Acme")
    other = await make_tenant("Globex")
    admin = t.admin_key
    ann = await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", agent_id=ann)
    async with serve(ws_settings(db.runtime_url, ws_auth_recheck_seconds=0.2)) as srv:
        base = srv.url.replace("ws://", "http://").split("/v1/")[0]
        async with httpx.AsyncClient(base_url=base) as http:
            sales = await _ok(await http.post("/v1/groups", json={"name": "Sales"},
                                              headers=auth(admin)), 201)
            hidden = await _ok(await http.post("/v1/tickets", headers=auth(admin),
                                               json=NEW_TICKET | {"group_id": sales["id"]}),
                               201)
            loose = await _ok(await http.post("/v1/tickets", headers=auth(admin),
                                              json=NEW_TICKET), 201)
            foreign = await _ok(await http.post("/v1/tickets", headers=auth(other.admin_key),
                                                json=NEW_TICKET), 201)
            doc = await _ok(await http.get("/v1/settings", headers=auth(admin)))
            await _ok(await http.put("/v1/settings", json=doc | {"group_scoped_access": True},
                                     headers=auth(admin)))
        # Someone who may watch every room, to see what reaches them.
        watcher = await connect_ws(srv.url, admin.secret)
        for room in (f"ticket:{hidden['id']}", f"ticket:{foreign['id']}",
                     f"ticket:{loose['id']}"):
            await send(watcher, op="subscribe", room=room)
            await recv_until(watcher, "subscribed")
        ws = await connect_ws(srv.url, ann_key.secret)
        for ticket in (hidden["id"], foreign["id"], str(uuid.uuid4())):
            for state in ("viewing", "typing"):
                await send(ws, op="presence", ticket_id=ticket, state=state)
                refused = await recv(ws)
                assert (refused["type"], refused["code"], refused["op"]) == (
                    "error", "unknown_ticket", "presence"), refused
        assert srv.services.presence is not None
        assert srv.services.presence.stats() == {"tickets": 0, "entries": 0}
        await send(watcher, op="ping", id="after")
        assert await recv(watcher) == {"type": "pong", "id": "after"}

        # Bad presence ops: an error each, and the connection goes on.
        for op, code in (
            ({"ticket_id": loose["id"], "state": "dancing"}, "bad_message"),
            ({"ticket_id": "ticket-1", "state": "viewing"}, "bad_message"),
            ({"ticket_id": "x" * 10_000, "state": "viewing"}, "bad_message"),
            ({"ticket_id": 7, "state": "viewing"}, "bad_message"),
            ({"ticket_id": loose["id"], "state": "viewing", "note": "x"}, "bad_message"),
            ({"state": "viewing"}, "bad_message"),
        ):
            await send(ws, op="presence", **op)
            answer = await recv(ws)
            assert (answer["type"], answer["code"]) == ("error", code), (op, answer)
        # A key that acts as no agent has no presence.
        await send(watcher, op="presence", ticket_id=loose["id"], state="viewing")
        assert (await recv(watcher))["code"] == "not_an_agent"

        # Her own ticket in no group: accepted; a flood is cut off, not the socket.
        answers: list[dict[str, Any]] = []
        for _ in range(30):
            await send(ws, op="presence", ticket_id=loose["id"], state="viewing")
        await send(ws, op="ping", id="end")
        while (message := await recv(ws))["type"] != "pong":
            answers.append(message)
        limited = [a for a in answers if a.get("code") == "rate_limited"]
        assert limited and len(limited) == len(answers) and len(limited) < 30
        assert srv.services.presence.stats() == {"tickets": 1, "entries": 1}
        seen = await _presence(watcher)
        assert (seen["ticket_id"], seen["agent"]["id"], seen["state"]) == (
            loose["id"], str(ann), "viewing")

        # Moved into a group she is not in: her presence there is cleared at the next
        # re-check of her credential, and she may not say it again.
        board = srv.services.presence
        async with httpx.AsyncClient(base_url=base) as http:
            await _ok(await http.post(f"/v1/tickets/{loose['id']}/assignee",
                                      json={"group_id": sales["id"]}, headers=auth(admin)))
        gone = await recv_until(watcher, "presence")
        assert (gone[-1]["agent"]["id"], gone[-1]["state"]) == (str(ann), "gone"), gone
        assert board.stats() == {"tickets": 0, "entries": 0}
        await asyncio.sleep(0.6)  # past the rate limit's refill of one op
        await send(ws, op="presence", ticket_id=loose["id"], state="viewing")
        assert (await recv(ws))["code"] == "unknown_ticket"
        await ws.close()
        await watcher.close()


async def test_the_python_client_says_presence_and_says_it_again_after_a_reconnect(
        db, make_tenant, owner: Owner):
    t = await make_tenant("Acme")
    ann = await owner.agent(t.tenant_id)
    bob = await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", agent_id=ann)
    bob_key = await owner.key(t.tenant_id, "agent", agent_id=bob)
    async with serve(ws_settings(db.runtime_url)) as srv:
        base = srv.url.replace("ws://", "http://").split("/v1/")[0]
        async with httpx.AsyncClient(base_url=base) as http:
            ticket = (await _ok(await http.post("/v1/tickets", json=NEW_TICKET,
                                                headers=auth(t.admin_key)), 201))["id"]
        heard: list[dict[str, Any]] = []

        async def on_presence(room: str, message: dict[str, Any]) -> None:
            heard.append(message)

        async def on_event(room: str, message: dict[str, Any]) -> None:
            return None

        client = StreamClient(srv.url, ann_key.secret, rooms=[f"ticket:{ticket}"],
                              on_event=on_event, on_presence=on_presence, max_backoff=0.2)
        runner = asyncio.create_task(client.run())
        await client.wait_subscribed(f"ticket:{ticket}")
        bob_ws, present = await _join(srv.url, bob_key.secret, uuid.UUID(ticket))
        assert present == []
        await client.present(ticket, "typing")
        assert ((await _presence(bob_ws))["state"], heard) == ("typing", [])
        await send(bob_ws, op="presence", ticket_id=ticket, state="viewing")
        await until(lambda: len(heard) == 1, timeout=10, interval=0.01, what="Bob's presence")
        assert (heard[0]["agent"]["id"], heard[0]["state"]) == (str(bob), "viewing")
        # Dropped: gone for Bob; back: said again, and Ann hears who is there.
        await client.drop_connection()
        assert (await _presence(bob_ws))["state"] == "gone"
        assert (await _presence(bob_ws))["state"] == "typing"
        await until(lambda: heard[-1]["type"] == "presence_list", timeout=10, interval=0.01,
                    what="the presence list after the reconnect")
        assert [p["agent"]["id"] for p in heard[-1]["present"]] == [str(bob)]
        await client.present(ticket, "gone")
        assert (await _presence(bob_ws))["state"] == "gone"
        await client.close()
        await asyncio.wait_for(runner, 10)
        await bob_ws.close()
