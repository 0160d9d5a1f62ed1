"""``GET /v1/changes``: who may read it, its envelope and cursor, tenant isolation, and
the mirror equality a client relies on: folding every page (read while writers are
still committing) gives every ticket, message, contact and organization exactly as
``GET`` shows them, and every seq from 1 to the head exactly once.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from typing import Any

import httpx

from client.mirror import Mirror
from eventstore.types import NewEvent, StoreActor
from tests.e2e.conftest import NEW_TICKET, auth

# The random workload's size; MIRROR_COMMANDS=2000 runs the full one (about a minute).
COMMANDS = int(os.environ.get("MIRROR_COMMANDS", "400"))
WRITERS = 4


async def _open(http: httpx.AsyncClient, key: Any, **over: Any) -> dict[str, Any]:
    r = await http.post("/v1/tickets", json=NEW_TICKET | over, headers=auth(key))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _changes(http: httpx.AsyncClient, key: Any, **params: Any) -> dict[str, Any]:
    r = await http.get("/v1/changes", params=params, headers=auth(key))
    assert r.status_code == 200, r.text
    assert r.headers["read-from"] == "primary"
    return dict(r.json())


async def test_roles_envelope_and_internal_notes(http, tenant, owner):
    admin = tenant.admin_key
    agent = await owner.key(tenant.tenant_id, "agent",
                            agent_id=await owner.agent(tenant.tenant_id))
    ticket = await _open(http, admin)
    r = await http.post(f"/v1/tickets/{ticket['id']}/messages",
                        json={"body": "only staff see this", "visibility": "internal"},
                        headers=auth(agent))
    assert r.status_code == 201, r.text

    for role in ("intake", "analyst", "auditor"):
        key = await owner.key(tenant.tenant_id, role)
        refused = await http.get("/v1/changes", headers=auth(key))
        assert refused.status_code == 403, (role, refused.text)

    page = await _changes(http, agent, stream_type="ticket")
    assert [c["type"] for c in page["data"]] == ["TicketOpened", "MessageAdded"]
    opened, note = page["data"]
    assert set(opened) == {"seq", "stream_id", "stream_type", "version", "type", "data",
                           "recorded_at", "actor"}
    assert opened["stream_id"] == ticket["id"] and opened["stream_type"] == "ticket"
    assert note["data"]["body"] == "only staff see this"
    assert note["data"]["visibility"] == "internal"
    assert page["next_after_seq"] == page["head_seq"] > note["seq"]  # keys issued since

    everything = await _changes(http, tenant.admin_key)
    assert [c["seq"] for c in everything["data"]] == list(range(1, page["head_seq"] + 1))
    assert {c["stream_type"] for c in everything["data"]} == {"tenant", "ticket", "contact"}
    # An agent does not read the tenant stream (keys, agents, settings, webhooks: what
    # only admins read elsewhere); its cursor moves past those events all the same. It
    # reads the contact the ticket created, as it reads contacts elsewhere.
    for params in ({}, {"stream_type": "tenant"}, {"types": "ApiKeyIssued"}):
        seen = await _changes(http, agent, **params)
        assert {c["stream_type"] for c in seen["data"]} <= {"ticket", "contact"}, params
        assert seen["next_after_seq"] == seen["head_seq"] == page["head_seq"], params
    assert [c["seq"] for c in (await _changes(http, agent))["data"]] == [
        c["seq"] for c in everything["data"] if c["stream_type"] != "tenant"]
    created = [c for c in everything["data"] if c["stream_type"] == "contact"]
    assert [c["type"] for c in created] == ["ContactCreated"]
    assert created[0]["stream_id"] == ticket["requester"]["contact_id"]


async def test_filters_still_move_the_cursor_past_what_they_skip(http, tenant):
    admin = tenant.admin_key
    for _ in range(3):
        await _open(http, admin)
    head = (await _changes(http, admin))["head_seq"]
    none = await _changes(http, admin, types="FollowUpOpened")
    assert none["data"] == [] and none["next_after_seq"] == head

    seen, after = [], 0
    while True:
        page = await _changes(http, admin, types="TicketOpened", limit=1, after_seq=after)
        seen += [c["seq"] for c in page["data"]]
        assert page["next_after_seq"] >= after
        if page["next_after_seq"] == after:
            break
        after = page["next_after_seq"]
    assert len(seen) == 3 and after == head

    nothing = await _changes(http, admin, types="TicketOpened", stream_type="tenant")
    assert nothing["data"] == [] and nothing["next_after_seq"] == head

    for bad in ({"types": "NoSuchEvent"}, {"stream_type": "planet"}, {"after_seq": -1},
                {"limit": 1001}, {"after_seq": "1", "limit": "5", "color": "red"}):
        r = await http.get("/v1/changes", params=bad, headers=auth(admin))
        assert r.status_code == 400, (bad, r.text)
        assert r.headers["content-type"] == "application/problem+json"


async def test_a_tenant_never_sees_another_tenants_changes(http, tenant, make_tenant):
    other = await make_tenant("Other")
    ours = await _open(http, tenant.admin_key, subject="ours")
    await _open(http, other.admin_key, subject="theirs")
    page = await _changes(http, tenant.admin_key, limit=1000)
    streams = {c["stream_id"] for c in page["data"] if c["stream_type"] == "ticket"}
    assert streams == {ours["id"]}
    assert all(c["data"].get("subject") != "theirs" for c in page["data"])


DOMAINS = ["@acme.test", "@globex.test", "@example.com"]


async def _people(http: httpx.AsyncClient, key: Any, rng: random.Random) -> None:
    """A contact or organization command: create, edit, merge; refusals (a taken
    e-mail or name, a merged contact, a lost race) are part of the workload too."""
    contacts = (await http.get("/v1/contacts", params={"limit": 100},
                               headers=auth(key))).json()["data"]
    orgs = (await http.get("/v1/organizations", params={"limit": 100},
                           headers=auth(key))).json()["data"]
    roll = rng.random()
    if roll < 0.2 or not contacts:
        r = await http.post("/v1/contacts", headers=auth(key), json={
            "email": f"c{rng.randrange(40)}{rng.choice(DOMAINS)}", "name": "C",
            "phone": f"+1 555 {rng.randrange(10**4):04}"})
    elif roll < 0.5:
        c = rng.choice(contacts)
        patch: dict[str, Any] = rng.choice([
            {"name": f"Renamed {rng.randrange(99)}"}, {"phone": None},
            {"tags": rng.sample(["vip", "trial", "eu"], 2)},
            {"organization_id": rng.choice([o["id"] for o in orgs] + [None])}])
        r = await http.patch(f"/v1/contacts/{c['id']}", json=patch, headers=auth(key))
    elif roll < 0.7 and len(contacts) > 1:
        a, b = rng.sample(contacts, 2)
        r = await http.post(f"/v1/contacts/{a['id']}/merge", json={"into": b["id"]},
                            headers=auth(key))
    elif roll < 0.85 or not orgs:
        name = rng.choice(["Acme", "Globex", "Initech"])
        r = await http.post("/v1/organizations", headers=auth(key), json={
            "name": name, "domains": [f"{name.lower()}.test"],
            "move_contacts": rng.random() < 0.5})
    else:
        o = rng.choice(orgs)
        r = await http.patch(f"/v1/organizations/{o['id']}", headers=auth(key), json={
            "name": f"{o['name']} {rng.randrange(9)}", "move_contacts": True,
            "domains": rng.choice([[], o["domains"], ["initech.test"]])})
    assert r.status_code in (200, 201, 308, 409, 412, 422), r.text


async def _teamwork(http: httpx.AsyncClient, key: Any, agents: list[str], tid: str,
                    other: str, rng: random.Random, tickets: list[str]) -> None:
    roll = rng.random()
    if roll < 0.3:
        path, body = "merge", {"into": other}
    elif roll < 0.5:
        path, body = "links", {"kind": rng.choice(["related", "duplicate_of", "problem",
                                                   "incident", "duplicates"]),
                               "ticket_id": other, "remove": rng.random() < 0.2}
    elif roll < 0.62:
        # Staff solve the ticket and its requester rates it through a rating link (409
        # when it was closed or merged, or another writer moved it meanwhile).
        solved = await http.post(f"/v1/tickets/{tid}/state", json={"state": "solved"},
                                 headers=auth(key))
        assert solved.status_code in (200, 409), solved.text
        link = await http.post(f"/v1/tickets/{tid}/satisfaction-link", headers=auth(key))
        assert link.status_code in (201, 409), link.text
        if link.status_code == 201:
            r = await http.post(f"/v1/ratings/{link.json()['token']}",
                                json={"rating": rng.choice(["good", "bad"])})
            assert r.status_code in (200, 409), r.text
        return
    elif roll < 0.8:
        path, body = "followers", {"add": rng.sample(agents, 1), "remove": rng.sample(agents, 1)}
        if body["add"] == body["remove"]:
            body["remove"] = []
    elif roll < 0.9:
        # Messages of the ticket's own thread (never its first) move to a new ticket
        # (422 when it would keep no public message, 409 when closed or merged).
        listed = await http.get(f"/v1/tickets/{tid}/messages", params={"limit": 100},
                                headers=auth(key))
        own = [m["id"] for m in listed.json()["data"] if m["ticket_id"] == tid][1:]
        if not own:
            return
        r = await http.post(f"/v1/tickets/{tid}/split", headers=auth(key), json={
            "message_ids": rng.sample(own, rng.randint(1, min(2, len(own))))})
        assert r.status_code in (200, 409, 422), r.text
        if r.status_code == 200:
            tickets.append(r.json()["new_ticket"]["id"])
        return
    else:
        path, body = "ccs", {"add": [{"email": f"cc{rng.randrange(4)}@example.com"}],
                             "remove": [f"cc{rng.randrange(4)}@example.com"]}
        if body["add"][0]["email"] == body["remove"][0]:
            body["remove"] = []
    r = await http.post(f"/v1/tickets/{tid}/{path}", json=body, headers=auth(key))
    assert r.status_code in (200, 409, 422), r.text


async def _workload(http: httpx.AsyncClient, keys: list[Any], intake: Any,
                    agents: list[str], groups: list[str], tickets: list[str],
                    rng: random.Random, commands: int) -> None:
    """Random commands of every kind; refusals (an illegal move, a lost race) are part
    of a real workload and must leave no trace in the changes either."""
    states = ["open", "pending", "on_hold", "solved", "closed"]
    for _ in range(commands):
        key = rng.choice(keys)
        if not tickets or rng.random() < 0.15:
            # A requester of a few known e-mails, or a new one (which creates a contact);
            # some of them of an organization's domain.
            email = (f"r{rng.randrange(8)}" if rng.random() < 0.6
                     else f"new{rng.randrange(10**9)}") + rng.choice(DOMAINS)
            t = await _open(http, key, subject=f"subject {rng.randrange(10**6)}",
                            tags=rng.sample(["a", "b", "c", "d"], rng.randrange(3)),
                            requester={"email": email, "name": f"R {rng.randrange(99)}"})
            tickets.append(t["id"])
            continue
        if rng.random() < 0.15:
            await _people(http, keys[0], rng)
            continue
        tid = rng.choice(tickets)
        if rng.random() < 0.12:  # merges, splits, links, followers and CCs
            await _teamwork(http, key, agents, tid, rng.choice(tickets), rng, tickets)
            continue
        roll = rng.random()
        if roll < 0.15:  # the customer writes (through an intake key)
            r = await http.post(f"/v1/tickets/{tid}/messages", json={"body": "customer"},
                                headers=auth(intake))
            assert r.status_code in (201, 409), r.text
            continue
        if roll < 0.45:
            body = {"body": f"message {rng.randrange(10**6)}",
                    "visibility": rng.choice(["public", "internal"])}
            if rng.random() < 0.2:  # with a file: the mirror lists it as the API does
                up = await http.post("/v1/uploads", params={"name": "f.txt"},
                                     content=str(rng.random()).encode(), headers=auth(key))
                assert up.status_code == 201, up.text
                body["attachments"] = [up.json()["id"]]
            path = "messages"
        elif roll < 0.55:
            body, path = {"agent_id": rng.choice([*agents, None])}, "assignee"
            if groups and rng.random() < 0.5:
                body["group_id"] = rng.choice([*groups, None])
        elif roll < 0.7:
            body = {"priority": rng.choice(["low", "normal", "high", "urgent"])}
            path = "priority"
        elif roll < 0.85:
            body, path = {"state": rng.choice(states)}, "state"
        elif roll < 0.93:
            body = {"add": rng.sample(["a", "c", "d", "x"], 2), "remove": ["b"]}
            path = "tags"
        else:
            body = {"fields": {"plan": rng.choice(["free", "pro", None]),
                               "seats": rng.choice([1, 5, None])}}
            path = "fields"
        r = await http.post(f"/v1/tickets/{tid}/{path}", json=body, headers=auth(key))
        assert r.status_code in (200, 201, 409), r.text


async def test_the_fold_over_changes_equals_get_under_concurrent_writers(http, tenant, owner):
    admin = tenant.admin_key
    agent_ids = [await owner.agent(tenant.tenant_id) for _ in range(2)]
    keys = [admin] + [await owner.key(tenant.tenant_id, "agent", agent_id=a)
                      for a in agent_ids]
    intake = await owner.key(tenant.tenant_id, "intake")
    for field in ({"key": "plan", "title": "Plan", "type": "dropdown", "options": [
                      {"value": "free", "title": "Free"}, {"value": "pro", "title": "Pro"}]},
                  {"key": "seats", "title": "Seats", "type": "number"}):
        r = await http.post("/v1/ticket-fields", json=field, headers=auth(admin))
        assert r.status_code == 201, r.text
    groups = []
    for name in ("Tier 1", "Tier 2"):
        r = await http.post("/v1/groups", json={"name": name, "members": [str(agent_ids[0])]},
                            headers=auth(admin))
        assert r.status_code == 201, r.text
        groups.append(r.json()["id"])
    mirror, seqs = Mirror(), []
    writing = True

    async def follow() -> None:
        # Pages are read while the writers commit, small ones, so a page often ends
        # right at the committed head with an append in flight behind it.
        while True:
            done = not writing
            page = await _changes(http, admin, after_seq=mirror.after_seq,
                                  limit=random.choice([1, 7, 50]))
            seqs.extend(c["seq"] for c in page["data"])
            mirror.apply_page(page)
            if done and mirror.after_seq >= page["head_seq"]:
                return
            await asyncio.sleep(0)

    tickets: list[str] = []
    reader = asyncio.create_task(follow())
    try:
        await asyncio.gather(*(
            _workload(http, keys, intake, [str(a) for a in agent_ids], groups, tickets,
                      random.Random(seed), COMMANDS // WRITERS)
            for seed in range(WRITERS)))
        writing = False
        await asyncio.wait_for(reader, 60)
    finally:
        reader.cancel()

    head = (await _changes(http, admin))["head_seq"]
    assert seqs == list(range(1, head + 1))  # every seq once, in order
    # Every ticket the desk lists (follow-ups that customers' messages opened on closed
    # tickets included), and no other.
    listed_ids, cursor = set(), None
    while True:
        page = (await http.get("/v1/tickets", params={"limit": 100} | (
            {"cursor": cursor} if cursor else {}), headers=auth(admin))).json()
        listed_ids |= {t["id"] for t in page["data"]}
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert set(mirror.tickets) == listed_ids and set(tickets) <= listed_ids
    for tid in listed_ids:
        got = await http.get(f"/v1/tickets/{tid}", headers=auth(admin))
        assert mirror.tickets[tid] == got.json(), tid
        listed = await http.get(f"/v1/tickets/{tid}/messages", params={"limit": 100},
                                headers=auth(admin))
        assert mirror.ticket_messages(tid) == listed.json()["data"], tid
    # Merged tickets (and their targets' threads), splits, links, followers, CCs and
    # ratings among them.
    for key in ("merged_into", "merged_from", "split_into", "split_from", "links",
                "followers", "ccs", "satisfaction"):
        assert any(key in t for t in mirror.tickets.values()), key
    # Every contact and organization as GET shows it; a merged contact redirects to the
    # contact the mirror says it was merged into.
    assert mirror.merged_into and len(mirror.contacts) > len(mirror.merged_into)
    assert mirror.organizations
    for cid in mirror.contacts:
        got = await http.get(f"/v1/contacts/{cid}", headers=auth(admin))
        if cid in mirror.merged_into:
            assert got.status_code == 308, cid
            assert got.headers["location"] == f"/v1/contacts/{mirror.merged_into[cid]}"
        else:
            assert got.status_code == 200 and mirror.contacts[cid] == got.json(), cid
    for oid, org in mirror.organizations.items():
        assert org == (await http.get(f"/v1/organizations/{oid}", headers=auth(admin))).json()
    listed_contacts, cursor = set(), None
    while True:
        page = (await http.get("/v1/contacts", params={"limit": 100} | (
            {"cursor": cursor} if cursor else {}), headers=auth(admin))).json()
        listed_contacts |= {c["id"] for c in page["data"]}
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert listed_contacts == set(mirror.contacts) - set(mirror.merged_into)


async def test_updated_after_lists_the_tickets_changed_since(http, tenant):
    admin = tenant.admin_key
    first = await _open(http, admin, subject="first")
    second = await _open(http, admin, subject="second")

    async def since(at: str) -> list[str]:
        r = await http.get("/v1/tickets", params={"updated_after": at}, headers=auth(admin))
        assert r.status_code == 200, r.text
        return [t["id"] for t in r.json()["data"]]

    assert await since(second["updated_at"]) == [second["id"]]
    moved = await http.post(f"/v1/tickets/{first['id']}/priority", json={"priority": "low"},
                            headers=auth(admin))
    assert await since(second["updated_at"]) == [second["id"], first["id"]]
    assert await since(moved.json()["updated_at"]) == [first["id"]]
    r = await http.get("/v1/tickets", params={"updated_after": "10000-01-01T00:00:00Z"},
                       headers=auth(admin))
    assert r.status_code == 400


async def test_old_payloads_come_in_the_current_shape(http, tenant, store):
    admin = tenant.admin_key
    ticket = await _open(http, admin, requester={"email": "old@example.com", "name": "Old"})
    page = await _changes(http, admin, types="TicketOpened")
    current = page["data"][0]["data"]
    v1 = {k: v for k, v in current.items() if k != "requester"}
    v1 |= {"requester_email": "old@example.com", "requester_name": "Old"}
    stream = uuid.uuid4()
    async with store.unit_of_work(tenant.tenant_id, StoreActor("api_key", "test")) as s:
        await s.append(stream, 0, [NewEvent("TicketOpened", v1 | {"ticket_id": str(stream)},
                                            1)])
        await s.append(uuid.uuid4(), 0, [NewEvent("SomethingNew", {"x": 1})])
    page = await _changes(http, admin, after_seq=page["next_after_seq"])
    old, new = page["data"]
    assert old["stream_id"] == str(stream) and "requester_email" not in old["data"]
    # An event from before contacts names no contact; the rest is as the current one.
    assert old["data"] == current | {"ticket_id": str(stream),
                                     "requester": current["requester"] | {"contact_id": None}}
    assert ticket["requester"] == old["data"]["requester"] | {
        "contact_id": current["requester"]["contact_id"]}
    assert (new["type"], new["stream_type"], new["data"]) == ("SomethingNew", "unknown",
                                                              {"x": 1})
