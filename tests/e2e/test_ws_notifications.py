"""Follower notifications on a real socket (docs/websocket.md): an agent following a
ticket is told of its messages, state changes and assignments, never of its own
actions; a ticket it does not follow tells it nothing; the room is an agent's, and
replays what was missed after a seq (the Python client resumes it across reconnects,
missing nothing sent while it was away); and under group-scoped
access a ticket it may no longer see is not announced."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from client.stream import StreamClient
from tests.e2e.conftest import NEW_TICKET, auth
from tests.e2e.ws_support import connect_ws, recv, send, serve, ws_settings
from tests.support.wait import until


async def notification(ws: Any, timeout: float = 10.0) -> dict[str, Any]:
    """The next notification (the only messages of the room after its marker)."""
    while True:
        message = await recv(ws, timeout)
        if message["type"] == "notification":
            return message
        assert message["type"] in ("subscribed",), message


async def nothing_more(ws: Any) -> None:
    with pytest.raises(TimeoutError):
        await notification(ws, timeout=1.0)


async def test_followers_are_notified_of_others_actions_only(db, make_tenant, owner) -> None:
    t = await make_tenant("Acme")
    ann, bob = await owner.agent(t.tenant_id), await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", ann)
    ann_other_key = await owner.key(t.tenant_id, "agent", ann)
    bob_key = await owner.key(t.tenant_id, "agent", bob)
    async with serve(ws_settings(db.runtime_url)) as srv:
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        async with httpx.AsyncClient(base_url=base) as http:
            async def post(key: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
                r = await http.post(path, json=body, headers=auth(key))
                assert r.status_code in (200, 201), r.text
                answer: dict[str, Any] = r.json()
                return answer

            followed = await post(bob_key, "/v1/tickets", NEW_TICKET)
            other = await post(bob_key, "/v1/tickets", NEW_TICKET)
            tid = followed["id"]
            await post(ann_key, f"/v1/tickets/{tid}/followers", {"add": [str(ann)]})

            ws = await connect_ws(srv.url, ann_key.secret)
            await send(ws, op="subscribe", room="notifications")
            marker = await recv(ws)
            assert marker["type"] == "subscribed" and marker["room"] == "notifications"

            # Ann's own reply (by another of her keys) and a reply on a ticket she does
            # not follow say nothing; Bob's reply, state change and assignment do.
            await post(ann_other_key, f"/v1/tickets/{tid}/messages", {"body": "Mine"})
            await post(bob_key, f"/v1/tickets/{other['id']}/messages", {"body": "Elsewhere"})
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "On it"})
            got = await notification(ws)
            assert (got["room"], got["ticket_id"], got["reason"]) == (
                "notifications", tid, "message")
            assert got["event"]["type"] == "MessageAdded"
            assert got["event"]["data"]["body"] == "On it"
            assert isinstance(got["seq"], int)
            await post(bob_key, f"/v1/tickets/{tid}/state", {"state": "pending"})
            got = await notification(ws)
            assert (got["reason"], got["event"]["type"]) == ("state", "StateChanged")
            await post(bob_key, f"/v1/tickets/{tid}/assignee", {"agent_id": str(bob)})
            got = await notification(ws)
            assert (got["reason"], got["event"]["data"]["assignee"]) == ("assigned", str(bob))
            last_seen = got["seq"]
            # Her own state change (by the key she is connected with) says nothing.
            await post(ann_key, f"/v1/tickets/{tid}/state", {"state": "open"})
            await nothing_more(ws)

            # Away and back: resubscribed after the last seq she saw, what she missed is
            # replayed (not her own action), then the room is live again.
            await ws.close()
            await post(ann_other_key, f"/v1/tickets/{tid}/messages", {"body": "Mine again"})
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "While away"})
            ws = await connect_ws(srv.url, ann_key.secret)
            await send(ws, op="subscribe", room="notifications", after_seq=last_seen)
            missed = await recv(ws)
            assert (missed["type"], missed["event"]["data"]["body"]) == (
                "notification", "While away"), missed
            marker = await recv(ws)
            assert (marker["type"], marker["replayed"]) == ("subscribed", 1), marker
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "Live again"})
            assert (await notification(ws))["event"]["data"]["body"] == "Live again"

            # She stops following: nothing more of the ticket reaches her.
            await post(ann_key, f"/v1/tickets/{tid}/followers", {"remove": [str(ann)]})
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "Still here"})
            await nothing_more(ws)

            # A seq ahead of the head is a gap, as in any room; the room is an agent's:
            # an admin key of no agent is refused.
            await send(ws, op="unsubscribe", room="notifications")
            assert (await recv(ws))["type"] == "unsubscribed"
            await send(ws, op="subscribe", room="notifications", after_seq=10**9)
            assert (await recv(ws))["type"] == "gap"
            await ws.close()

            admin = await connect_ws(srv.url, t.admin_key.secret)
            await send(admin, op="subscribe", room="notifications")
            refused = await recv(admin)
            assert (refused["type"], refused["code"]) == ("error", "not_an_agent")
            await admin.close()


async def test_a_ticket_outside_the_agents_groups_is_not_announced(db, make_tenant,
                                                                   owner) -> None:
    t = await make_tenant("Acme")
    ann, bob = await owner.agent(t.tenant_id), await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", ann)
    bob_key = await owner.key(t.tenant_id, "agent", bob)
    async with serve(ws_settings(db.runtime_url)) as srv:
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        async with httpx.AsyncClient(base_url=base) as http:
            async def post(key: Any, path: str, body: dict[str, Any],
                           method: str = "POST") -> dict[str, Any]:
                r = await http.request(method, path, json=body, headers=auth(key))
                assert r.status_code in (200, 201), r.text
                answer: dict[str, Any] = r.json()
                return answer

            group = await post(t.admin_key, "/v1/groups", {"name": "Billing",
                                                           "members": [str(bob)]})
            ticket = await post(bob_key, "/v1/tickets", NEW_TICKET)
            tid = ticket["id"]
            await post(ann_key, f"/v1/tickets/{tid}/followers", {"add": [str(ann)]})
            ws = await connect_ws(srv.url, ann_key.secret)
            await send(ws, op="subscribe", room="notifications")
            assert (await recv(ws))["type"] == "subscribed"
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "Seen"})
            assert (await notification(ws))["event"]["data"]["body"] == "Seen"

            # Into Bob's group, with group-scoped access on: Ann may no longer see it.
            await post(bob_key, f"/v1/tickets/{tid}/assignee",
                       {"group_id": group["id"], "agent_id": str(bob)})
            await notification(ws)  # the assignment, still hers to see when it came
            settings = (await http.get("/v1/settings", headers=auth(t.admin_key))).json()
            await post(t.admin_key, "/v1/settings", {**settings, "group_scoped_access": True},
                       method="PUT")
            await post(bob_key, f"/v1/tickets/{tid}/messages", {"body": "Hidden"})
            await nothing_more(ws)
            await ws.close()


async def test_the_python_client_misses_no_notification_across_reconnects(db, make_tenant,
                                                                       owner) -> None:
    t = await make_tenant("Acme")
    ann, bob = await owner.agent(t.tenant_id), await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", ann)
    bob_key = await owner.key(t.tenant_id, "agent", bob)
    async with serve(ws_settings(db.runtime_url)) as srv:
        base = srv.url.replace("ws://", "http://").removesuffix("/v1/stream")
        got: list[dict[str, Any]] = []

        async def on_event(room: str, message: dict[str, Any]) -> None:
            got.append(message)

        client = StreamClient(srv.url, ann_key.secret, rooms=["notifications"],
                              on_event=on_event)
        running = asyncio.create_task(client.run())
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(bob_key))
            tid = r.json()["id"]
            r = await http.post(f"/v1/tickets/{tid}/followers", json={"add": [str(ann)]},
                                headers=auth(ann_key))
            assert r.status_code == 200, r.text
            try:
                for n, body in enumerate(("First", "After reconnecting"), start=2):
                    await client.wait_subscribed("notifications")
                    r = await http.post(f"/v1/tickets/{tid}/messages", json={"body": body},
                                        headers=auth(bob_key))
                    assert r.status_code == 201, r.text
                    await until(lambda b=body: bool(got)
                                and got[-1]["event"]["data"]["body"] == b,
                                timeout=10, what=f"the notification of {body!r}")
                    assert client._ws is not None
                    await client._ws.close()  # a dropped connection: it resubscribes
                    # Written while it is away (or just back): told once all the same.
                    r = await http.post(f"/v1/tickets/{tid}/messages",
                                        json={"body": f"Away {n}"}, headers=auth(bob_key))
                    assert r.status_code == 201, r.text
                    await until(lambda k=n: client.connects >= k,
                                timeout=10,
                                what="the client to reconnect")
                    await until(lambda k=n: bool(got)
                                and got[-1]["event"]["data"]["body"] == f"Away {k}",
                                timeout=10, what="the notification sent while away")
            finally:
                await client.close()
                await asyncio.wait_for(running, 10)
    assert [m["event"]["data"]["body"] for m in got] == [
        "First", "Away 2", "After reconnecting", "Away 3"]
