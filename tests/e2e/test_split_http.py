"""Splitting messages off a ticket into a new one over HTTP (docs/teamwork.md): what
the new ticket takes, what the source keeps, search, history, as-of and /v1/changes,
the refusals that leave nothing behind, and a split racing replies."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx

from tests.e2e.conftest import NEW_TICKET, auth, bearer


async def _open(http: httpx.AsyncClient, key: Any, **body: Any) -> dict[str, Any]:
    r = await http.post("/v1/tickets", json=NEW_TICKET | body, headers=auth(key))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _say(http: httpx.AsyncClient, key: Any, tid: str, body: str,
               visibility: str = "public") -> str:
    r = await http.post(f"/v1/tickets/{tid}/messages",
                        json={"body": body, "visibility": visibility}, headers=auth(key))
    assert r.status_code == 201, r.text
    return str(r.json()["message"]["id"])


async def _thread(http: httpx.AsyncClient, key: Any, tid: str) -> list[dict[str, Any]]:
    r = await http.get(f"/v1/tickets/{tid}/messages", params={"limit": 100},
                       headers=auth(key))
    assert r.status_code == 200, r.text
    return list(r.json()["data"])


async def _found(http: httpx.AsyncClient, key: Any, q: str) -> list[str]:
    r = await http.get("/v1/search", params={"q": q}, headers=auth(key))
    assert r.status_code == 200, r.text
    return [hit["id"] for hit in r.json()["data"]]


async def test_split_moves_messages_to_a_new_ticket_that_takes_the_source(
        http, tenant, owner, store):
    admin = tenant.admin_key
    h = auth(admin)
    agent = await owner.agent(tenant.tenant_id)
    group = (await http.post("/v1/groups", json={"name": "Fax", "members": [str(agent)]},
                             headers=h)).json()["id"]
    r = await http.post("/v1/ticket-fields", headers=h, json={
        "key": "plan", "title": "Plan", "type": "dropdown",
        "options": [{"value": "pro", "title": "Pro"}]})
    assert r.status_code == 201, r.text
    source = await _open(http, admin, fields={"plan": "pro"})
    sid = source["id"]
    assert (await http.post(f"/v1/tickets/{sid}/assignee", json={"group_id": group},
                            headers=h)).status_code == 200
    first = await _say(http, admin, sid, "Have you tried unplugging it?")
    up = await http.post("/v1/uploads", params={"name": "fax.txt"}, content=b"jam report",
                         headers=h)
    assert up.status_code == 201, up.text
    said = await http.post(f"/v1/tickets/{sid}/messages", headers=h, json={
        "body": "Also the zanzibar fax is jammed.", "attachments": [up.json()["id"]]})
    assert said.status_code == 201, said.text
    fax = said.json()["message"]["id"]
    note = await _say(http, admin, sid, "zanzibar note for staff", "internal")
    before = (await http.get(f"/v1/tickets/{sid}", headers=h)).json()
    assert await _found(http, admin, "zanzibar") == [sid]

    r = await http.post(f"/v1/tickets/{sid}/split", headers=h,
                        json={"message_ids": [note, fax], "subject": "Fax jam"})
    assert r.status_code == 200, r.text
    answer = r.json()
    src, new = answer["ticket"], answer["new_ticket"]
    nid = new["id"]
    assert r.headers["etag"] == f'"{src["version"]}"'
    assert src["split_into"] == [nid] and new["split_from"] == sid
    assert new["subject"] == "Fax jam" and new["state"] == "open"
    for key in ("requester", "priority", "source", "tags", "fields", "group_id"):
        assert new[key] == before[key], key
    assert new["group_id"] == group
    # SLA clocks start afresh, at the split.
    assert new["sla"]["first_response"]["started_at"] == new["created_at"]
    assert new["sla"]["first_response"]["fulfilled_at"] is None
    assert (await http.get(f"/v1/tickets/{sid}", headers=h)).json() == src
    # The moved message's file goes with it.
    assert [a["message_id"] for a in before["attachments"]] == [fax]
    assert src["attachments"] == [] and new["attachments"] == before["attachments"]
    file_id = new["attachments"][0]["id"]
    got = await http.get(f"/v1/attachments/{file_id}", headers=h)
    assert got.status_code == 200 and got.content == b"jam report", got.text
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        held = await s.conn.fetchval("SELECT ticket_id FROM uploads WHERE id = $1",
                                     uuid.UUID(file_id))
    assert str(held) == nid
    assert (await http.get(f"/v1/tickets/{nid}", headers=h)).json() == new

    # The moved messages, with their authors and times, are the new ticket's thread and
    # no longer the source's.
    was = {m["id"]: m for m in await _thread(http, admin, sid) + await _thread(http, admin, nid)}
    moved = await _thread(http, admin, nid)
    assert [m["id"] for m in moved] == [fax, note]
    assert all(m["ticket_id"] == nid for m in moved)
    assert [m["id"] for m in await _thread(http, admin, sid)] == [
        m for m in was if m not in (fax, note)]
    assert first in [m["id"] for m in await _thread(http, admin, sid)]
    # Search finds them under the new ticket only.
    assert await _found(http, admin, "zanzibar") == [nid]
    assert await _found(http, admin, "unplugging") == [sid]

    # Both tickets take commands as before.
    await _say(http, admin, nid, "Fax fixed.")
    await _say(http, admin, sid, "Printer fixed.")

    # History, as-of and the changes feed show both events.
    audit = bearer((await http.post("/v1/api-keys", json={"name": "a", "role": "auditor"},
                                    headers=h)).json()["secret"])
    history = (await http.get(f"/v1/tickets/{sid}/history", params={"limit": 100},
                              headers=audit)).json()["data"]
    split = next(e for e in history if e["type"] == "TicketSplit")
    assert split["data"]["into"] == nid and split["data"]["message_ids"] == [fax, note]
    earlier = (await http.get(f"/v1/tickets/{sid}/as-of",
                              params={"version": split["version"] - 1}, headers=audit)).json()
    assert "split_into" not in earlier
    at_split = (await http.get(f"/v1/tickets/{sid}/as-of",
                               params={"version": split["version"]}, headers=audit)).json()
    assert at_split["split_into"] == [nid]
    opened = (await http.get(f"/v1/tickets/{nid}/history", headers=audit)).json()["data"]
    assert [e["type"] for e in opened][:2] == ["TicketSplitFrom", "TicketGroupChanged"]
    assert opened[0]["data"]["source_id"] == sid
    first_version = (await http.get(f"/v1/tickets/{nid}/as-of", params={"version": 2},
                                    headers=audit)).json()
    assert first_version["split_from"] == sid and first_version["version"] == 2
    changes = (await http.get("/v1/changes", params={"after_seq": 0, "limit": 1000},
                              headers=h)).json()["data"]
    types = [c["type"] for c in changes if c["stream_id"] in (sid, nid)]
    assert types.count("TicketSplit") == 1 and types.count("TicketSplitFrom") == 1
    verified = await http.get("/v1/audit/verify", headers=audit)
    assert verified.status_code == 200, verified.text


async def test_bad_splits_are_refused_with_nothing_written(http, tenant, make_tenant):
    admin = tenant.admin_key
    h = auth(admin)
    source = await _open(http, admin)
    sid = source["id"]
    reply = await _say(http, admin, sid, "a reply")
    other = await _open(http, admin, subject="Other")
    elsewhere = await _say(http, admin, other["id"], "on the other ticket")
    opening = (await _thread(http, admin, sid))[0]["id"]
    foreign = await _open(http, (await make_tenant("Globex")).admin_key)
    done = await http.post(f"/v1/tickets/{other['id']}/split", headers=h,
                           json={"message_ids": [elsewhere]})
    assert done.status_code == 200, done.text

    before = (await http.get(f"/v1/tickets/{sid}", headers=h)).json()
    listed = (await http.get("/v1/tickets", params={"limit": 100}, headers=h)).json()["data"]
    for ticket_id, body, status in (
            (sid, {"message_ids": []}, 422),
            (sid, {"message_ids": [reply, reply]}, 422),
            (sid, {"message_ids": [str(uuid.uuid4())]}, 422),
            (sid, {"message_ids": [elsewhere]}, 422),  # another ticket's message
            (sid, {"message_ids": [opening, reply]}, 422),  # every public message
            (sid, {"message_ids": [reply], "subject": " "}, 422),
            (sid, {"message_ids": "nope"}, 422),
            (sid, {"message_ids": [reply], "extra": 1}, 422),
            (foreign["id"], {"message_ids": [reply]}, 404),
            (str(uuid.uuid4()), {"message_ids": [reply]}, 404),
            (other["id"], {"message_ids": [elsewhere]}, 422)):  # moved already
        r = await http.post(f"/v1/tickets/{ticket_id}/split", json=body, headers=h)
        assert r.status_code == status, (body, r.text)
        assert r.headers["content-type"].startswith("application/problem+json"), r.text
    moved = await http.post(f"/v1/tickets/{other['id']}/split", headers=h,
                            json={"message_ids": [elsewhere]})
    assert "moved to ticket" in moved.json()["detail"]
    assert (await http.get(f"/v1/tickets/{sid}", headers=h)).json() == before
    assert len((await http.get("/v1/tickets", params={"limit": 100},
                               headers=h)).json()["data"]) == len(listed)

    # A closed ticket and a merged one: 409.
    for state in ("solved", "closed"):
        assert (await http.post(f"/v1/tickets/{sid}/state", json={"state": state},
                                headers=h)).status_code == 200
    r = await http.post(f"/v1/tickets/{sid}/split", json={"message_ids": [reply]}, headers=h)
    assert r.status_code == 409 and r.json()["code"] == "ticket_closed", r.text
    merged = await _open(http, admin, subject="Merged")
    extra = await _say(http, admin, merged["id"], "extra")
    assert (await http.post(f"/v1/tickets/{merged['id']}/merge", json={"into": other["id"]},
                            headers=h)).status_code == 200
    r = await http.post(f"/v1/tickets/{merged['id']}/split", json={"message_ids": [extra]},
                        headers=h)
    assert r.status_code == 409 and r.json()["code"] == "ticket_merged", r.text
    # An auditor may not split.
    audit = bearer((await http.post("/v1/api-keys", json={"name": "a", "role": "auditor"},
                                    headers=h)).json()["secret"])
    r = await http.post(f"/v1/tickets/{other['id']}/split", json={"message_ids": [extra]},
                        headers=audit)
    assert r.status_code == 403, r.text


async def test_split_racing_replies_loses_nothing(http, tenant):
    admin = tenant.admin_key
    h = auth(admin)
    source = await _open(http, admin)
    sid = source["id"]
    moving = [await _say(http, admin, sid, f"to move {i}") for i in range(3)]

    async def reply(i: int) -> httpx.Response:
        return await http.post(f"/v1/tickets/{sid}/messages", json={"body": f"race {i}"},
                               headers=h)

    answers = await asyncio.gather(
        *(reply(i) for i in range(4)),
        http.post(f"/v1/tickets/{sid}/split", json={"message_ids": moving}, headers=h),
        *(reply(i) for i in range(4, 8)))
    split = answers[4]
    assert split.status_code == 200, split.text
    replies = answers[:4] + answers[5:]
    assert all(r.status_code == 201 for r in replies), [r.text for r in replies]
    nid = split.json()["new_ticket"]["id"]
    kept = [m["id"] for m in await _thread(http, admin, sid)]
    moved = [m["id"] for m in await _thread(http, admin, nid)]
    assert moved == moving
    # Every reply is on the source, once, and nothing is on both tickets.
    assert {r.json()["message"]["id"] for r in replies} <= set(kept)
    assert len(kept) == len(set(kept)) == 1 + len(replies) and not set(kept) & set(moved)
    got = (await http.get(f"/v1/tickets/{sid}", headers=h)).json()
    assert got["version"] == source["version"] + 3 + len(replies) + 1


async def test_erasing_the_requester_reaches_the_messages_split_off(http, tenant):
    admin = tenant.admin_key
    h = auth(admin)
    email = "erin.split@example.com"
    source = await _open(http, admin, subject="Forget me too",
                         requester={"email": email, "name": "Erin"})
    sid, contact = source["id"], source["requester"]["contact_id"]
    secret = await _say(http, admin, sid, "erin's secret answer")
    r = await http.post(f"/v1/tickets/{sid}/split", json={"message_ids": [secret]}, headers=h)
    assert r.status_code == 200, r.text
    nid = r.json()["new_ticket"]["id"]
    assert r.json()["new_ticket"]["requester"]["email"] == email

    erased = await http.post(f"/v1/contacts/{contact}/erase", headers=h,
                             json={"reason": "request"})
    assert erased.status_code == 200, erased.text
    assert erased.json()["tickets"] == 2
    for tid in (sid, nid):
        shown = (await http.get(f"/v1/tickets/{tid}", headers=h)).json()
        assert shown["subject"] == "" and email not in str(shown), tid
        assert all(m["body"] == "" for m in await _thread(http, admin, tid)), tid
    assert "secret" not in str(await _thread(http, admin, nid))
    history = str((await http.get(f"/v1/tickets/{nid}/history", headers=h)).json())
    assert email not in history and "Forget me too" not in history
    verify = await http.get("/v1/audit/verify", headers=h)
    assert verify.status_code == 200 and verify.json()["ok"] is True, verify.text
