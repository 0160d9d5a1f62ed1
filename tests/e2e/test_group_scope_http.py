"""Group-scoped access (docs/teamwork.md): with the tenant setting on, an agent sees the
tickets of its groups, those in no group and those assigned to it, and nothing of any
other ticket: not by raw SQL as the runtime role, nor by any route (the ticket, its
messages, a command, the list, search, the changes feed, its files), nor in the live
feed's rooms. Admins and auditors keep the whole tenant; a change of members or of the
setting holds from the next request on."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from api.root import Services
from eventstore.types import StoreActor
from tests.e2e.conftest import NEW_TICKET, Owner, auth
from tests.e2e.ws_support import FIRST, connect_ws, recv, recv_until, send, serve, ws_settings


async def _ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


async def _scoped(http: httpx.AsyncClient, admin: Any, on: bool) -> None:
    doc = await _ok(await http.get("/v1/settings", headers=auth(admin)))
    await _ok(await http.put("/v1/settings", json=doc | {"group_scoped_access": on},
                             headers=auth(admin)))


async def _raw(services: Services, tenant_id: Any, actor: StoreActor, ticket: str
               ) -> dict[str, int]:
    """What a transaction armed as ``actor`` reads of ``ticket`` by raw SQL."""
    tid = uuid.UUID(ticket)
    async with services.store.unit_of_work(tenant_id, actor, readonly=True) as s:
        assert await s.conn.fetchval("SELECT rolbypassrls OR rolsuper FROM pg_roles "
                                     "WHERE rolname = current_user") is False
        return {table: await s.conn.fetchval(f"SELECT count(*) FROM {table} WHERE {col} = $1",
                                             tid)
                for table, col in (("tickets", "id"), ("messages", "ticket_id"),
                                   ("events", "stream_id"), ("uploads", "ticket_id"),
                                   ("search_documents", "id"), ("ticket_versions", "id"))}


async def test_an_agent_outside_a_group_reads_nothing_of_its_tickets(
        http, tenant, owner: Owner, services: Services):
    admin = tenant.admin_key
    ann = await owner.agent(tenant.tenant_id)
    bob = await owner.agent(tenant.tenant_id)
    ann_key = await owner.key(tenant.tenant_id, "agent", agent_id=ann)
    auditor = await owner.key(tenant.tenant_id, "auditor")
    sales = await _ok(await http.post("/v1/groups", json={"name": "Sales",
                                                          "members": [str(bob)]},
                                      headers=auth(admin)), 201)
    billing = await _ok(await http.post("/v1/groups", json={"name": "Billing",
                                                            "members": [str(ann)]},
                                        headers=auth(admin)), 201)
    upload = await _ok(await http.post("/v1/uploads", params={"name": "quote.txt"},
                                       content=b"zanzibar quote",
                                       headers=auth(admin, **{"Content-Type": "text/plain"})),
                       201)
    hidden = await _ok(await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "subject": "Zanzibar invoice", "group_id": sales["id"]}), 201)
    await _ok(await http.post(f"/v1/tickets/{hidden['id']}/messages", headers=auth(admin),
                              json={"body": "zanzibar note", "visibility": "internal",
                                    "attachments": [upload["id"]]}), 201)
    mine = await _ok(await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "subject": "Zanzibar refund", "group_id": billing["id"]}), 201)
    loose = await _ok(await http.post("/v1/tickets", headers=auth(admin), json=NEW_TICKET | {
        "subject": "Zanzibar question"}), 201)
    ann_actor = StoreActor("api_key", str(ann_key.id))

    async def ann_sees() -> dict[str, Any]:
        """Every route's answer on the hidden ticket, as Ann's key."""
        h = auth(ann_key)
        listed = (await http.get("/v1/tickets", headers=h)).json()["data"]
        head = (await http.get("/v1/changes", headers=auth(admin))).json()
        past = (await http.get("/v1/tickets", params={"as_of_seq": head["head_seq"]},
                               headers=h)).json()["data"]
        found = (await http.get("/v1/search", params={"q": "zanzibar"}, headers=h)).json()
        changes = (await http.get("/v1/changes", headers=h)).json()
        return {
            "list": sorted(t["id"] for t in listed),
            "as_of": sorted(t["id"] for t in past),
            "search": sorted(t["id"] for t in found["data"]),
            "changes": any(c.get("stream_id") == hidden["id"]
                           or c.get("ticket_id") == hidden["id"]
                           for c in changes["data"]),
            "get": (await http.get(f"/v1/tickets/{hidden['id']}", headers=h)).status_code,
            "messages": (await http.get(f"/v1/tickets/{hidden['id']}/messages",
                                        headers=h)).status_code,
            "file": (await http.get(f"/v1/attachments/{upload['id']}", headers=h)).status_code,
        }

    everything = sorted([hidden["id"], mine["id"], loose["id"]])
    # Off (the default): Ann sees the whole tenant.
    assert await ann_sees() == {"list": everything, "as_of": everything,
                                "search": everything, "changes": True,
                                "get": 200, "messages": 200, "file": 200}

    await _scoped(http, admin, True)
    assert await ann_sees() == {"list": sorted([mine["id"], loose["id"]]),
                                "as_of": sorted([mine["id"], loose["id"]]),
                                "search": sorted([mine["id"], loose["id"]]),
                                "changes": False, "get": 404, "messages": 404,
                                "file": 404}
    # Signed in (armed as the agent herself) or through her key: the same scope.
    for actor in (ann_actor, StoreActor("agent", str(ann))):
        assert await _raw(services, tenant.tenant_id, actor, hidden["id"]) == {
            "tickets": 0, "messages": 0, "events": 0, "uploads": 0, "search_documents": 0,
            "ticket_versions": 0}
    # The mark a command's state load sets marks only a ticket in scope.
    async with services.store.unit_of_work(tenant.tenant_id, ann_actor, readonly=True) as s:
        assert await s.conn.fetchval("SELECT ticket_loaded($1)", uuid.UUID(hidden["id"])) \
            is False
        assert await s.conn.fetchval("SELECT count(*) FROM tickets WHERE id = $1",
                                     uuid.UUID(hidden["id"])) == 0
    # Acting on it is refused as well, and nothing is written.
    for path, body in (("messages", {"body": "hi"}), ("priority", {"priority": "low"}),
                       ("assignee", {"agent_id": str(ann)})):
        r = await http.post(f"/v1/tickets/{hidden['id']}/{path}", json=body,
                            headers=auth(ann_key))
        assert r.status_code == 404, (path, r.text)
    # Nor can she merge or link it, either way round, from a ticket she sees.
    for source, path, body in ((hidden, "merge", {"into": loose["id"]}),
                               (loose, "merge", {"into": hidden["id"]}),
                               (loose, "links", {"kind": "related", "ticket_id": hidden["id"]})):
        r = await http.post(f"/v1/tickets/{source['id']}/{path}", json=body,
                            headers=auth(ann_key))
        assert r.status_code == 404, (path, r.text)
    assert (await http.get(f"/v1/tickets/{loose['id']}", headers=auth(ann_key))
            ).json()["version"] == loose["version"]
    # Her own ticket and the one in no group are untouched by the scope.
    assert (await _raw(services, tenant.tenant_id, ann_actor, mine["id"]))["events"] >= 1
    # Admins, auditors and the key of an agent who is a member see it all.
    for who in (admin, auditor, await owner.key(tenant.tenant_id, "agent", agent_id=bob)):
        assert (await http.get(f"/v1/tickets/{hidden['id']}",
                               headers=auth(who))).status_code == 200
    assert (await _raw(services, tenant.tenant_id, StoreActor("api_key", str(auditor.id)),
                       hidden["id"]))["tickets"] == 1

    # A member from the next request on; assigned to her, she keeps it after leaving.
    await _ok(await http.patch(f"/v1/groups/{sales['id']}",
                               json={"members": [str(bob), str(ann)]}, headers=auth(admin)))
    assert (await ann_sees())["get"] == 200
    await _ok(await http.post(f"/v1/tickets/{hidden['id']}/assignee",
                              json={"agent_id": str(ann)}, headers=auth(ann_key)))
    await _ok(await http.patch(f"/v1/groups/{sales['id']}", json={"members": [str(bob)]},
                               headers=auth(admin)))
    assert (await ann_sees())["get"] == 200
    await _ok(await http.post(f"/v1/tickets/{hidden['id']}/assignee",
                              json={"agent_id": None}, headers=auth(ann_key)))
    assert (await ann_sees())["get"] == 404
    # She may hand a ticket to a group she is not in, and then no longer sees it.
    await _ok(await http.post(f"/v1/tickets/{mine['id']}/assignee",
                              json={"group_id": sales["id"]}, headers=auth(ann_key)))
    assert (await http.get(f"/v1/tickets/{mine['id']}",
                           headers=auth(ann_key))).status_code == 404

    # Turning the setting off restores everything.
    await _scoped(http, admin, False)
    assert await _raw(services, tenant.tenant_id, ann_actor, hidden["id"]) == {
        "tickets": 1, "messages": 2, "events": 5, "uploads": 1, "search_documents": 1,
        "ticket_versions": 5}
    assert (await ann_sees())["get"] == 200


async def test_the_live_feed_holds_only_rooms_in_scope(db, make_tenant, owner: Owner):
    t = await make_tenant("Acme")
    admin = t.admin_key
    ann = await owner.agent(t.tenant_id)
    ann_key = await owner.key(t.tenant_id, "agent", agent_id=ann)
    async with serve(ws_settings(db.runtime_url, ws_auth_recheck_seconds=0.2)) as srv:
        http_url = srv.url.replace("ws://", "http://").split("/v1/")[0]
        async with httpx.AsyncClient(base_url=http_url) as http:
            sales = await _ok(await http.post("/v1/groups", json={"name": "Sales"},
                                              headers=auth(admin)), 201)
            hidden = await _ok(await http.post("/v1/tickets", headers=auth(admin),
                                               json=NEW_TICKET | {"group_id": sales["id"]}), 201)
            loose = await _ok(await http.post("/v1/tickets", headers=auth(admin),
                                              json=NEW_TICKET), 201)
            await _scoped(http, admin, True)
            ws = await connect_ws(srv.url, ann_key.secret)
            for room in ("tenant", f"ticket:{hidden['id']}"):
                await send(ws, op="subscribe", room=room, after_seq=FIRST)
                refused = await recv(ws)
                assert (refused["type"], refused["code"], refused["room"]) == (
                    "error", "out_of_scope", room)
            await send(ws, op="subscribe", room=f"ticket:{loose['id']}", after_seq=FIRST)
            assert (await recv_until(ws, "subscribed"))[0]["event"]["type"] == "TicketOpened"
            # Moved into a group she is not in: the room is dropped at the next check.
            await _ok(await http.post(f"/v1/tickets/{loose['id']}/assignee",
                                      json={"group_id": sales["id"]}, headers=auth(admin)))
            dropped = (await recv_until(ws, "unsubscribed"))[-1]
            assert dropped == {"type": "unsubscribed", "room": f"ticket:{loose['id']}",
                               "reason": "out_of_scope"}
            # Off again: the tenant room is hers.
            await _scoped(http, admin, False)
            await send(ws, op="subscribe", room="tenant", after_seq=FIRST)
            assert (await recv_until(ws, "subscribed"))[-1]["room"] == "tenant"
            await ws.close()
