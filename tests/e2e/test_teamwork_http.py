"""Merging, linking, following and copying customers over HTTP (docs/teamwork.md): the
merge under concurrent replies on both tickets, the refusals that leave nothing
behind, and each change in the ticket answer, its history, as-of and /v1/changes."""

from __future__ import annotations

import asyncio
import uuid

from tests.e2e.conftest import NEW_TICKET, auth, bearer
from tests.support.customers import portal_headers
from tests.support.mail import inbound, make_mailbox, smtp_at
from tests.support.smtp import free_port


async def _open(http, key, email="ann@example.com", subject="Printer on fire"):  # type: ignore[no-untyped-def]
    body = NEW_TICKET | {"subject": subject, "requester": {"email": email}}
    r = await http.post("/v1/tickets", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    return r.json()


async def _auditor(http, key):  # type: ignore[no-untyped-def]
    r = await http.post("/v1/api-keys", json={"name": "audit", "role": "auditor"},
                        headers=auth(key))
    assert r.status_code == 201, r.text
    return bearer(r.json()["secret"])


async def _events(store, tenant_id, ticket_id, type_):  # type: ignore[no-untyped-def]
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        return [e for e in await s.read_stream(uuid.UUID(ticket_id)) if e.type == type_]


async def test_merge_under_concurrent_replies_loses_nothing_and_happens_once(
        http, tenant, store, make_tenant):
    admin = tenant.admin_key
    source = await _open(http, admin, "bob@example.com", "Printer smokes")
    target = await _open(http, admin)
    sid, tid = source["id"], target["id"]
    note = await http.post(f"/v1/tickets/{sid}/messages",
                           json={"body": "internal: toner?", "visibility": "internal"},
                           headers=auth(admin))
    assert note.status_code == 201

    def reply(ticket_id: str, i: int):  # type: ignore[no-untyped-def]
        return http.post(f"/v1/tickets/{ticket_id}/messages", json={"body": f"r{ticket_id[:4]}{i}"},
                         headers=auth(admin))

    merges = [http.post(f"/v1/tickets/{sid}/merge", json={"into": tid}, headers=auth(admin))
              for _ in range(3)]
    back = http.post(f"/v1/tickets/{tid}/merge", json={"into": sid}, headers=auth(admin))
    # Replies to both tickets go out before, among and after the merges.
    answers = await asyncio.gather(*(reply(sid, i) for i in range(3)), *merges,
                                   *(reply(tid, i) for i in range(3)), back,
                                   *(reply(sid, i) for i in range(3, 6)),
                                   *(reply(tid, i) for i in range(3, 6)))
    merged = answers[3:6] + answers[9:10]
    replies = answers[:3] + answers[6:9] + answers[10:]
    won = [r for r in merged if r.status_code == 200]
    assert len(won) == 1, [r.text for r in merged]
    for r in merged:
        assert r.status_code in (200, 409, 422), r.text
    # Exactly one merge in the streams, whichever way it went.
    got = won[0].json()
    into, gone = got["into"]["id"], got["ticket"]["id"]
    assert {into, gone} == {sid, tid}
    assert len(await _events(store, tenant.tenant_id, gone, "TicketMerged")) == 1
    assert await _events(store, tenant.tenant_id, into, "TicketMerged") == []
    assert len(await _events(store, tenant.tenant_id, into, "TicketMergeReceived")) == 1
    assert got["ticket"]["merged_into"] == into and got["ticket"]["state"] == "closed"
    assert got["into"]["merged_from"] == [gone]
    cc = "bob@example.com" if gone == sid else "ann@example.com"
    assert [c["email"] for c in got["into"]["ccs"]] == [cc]

    accepted = []
    for r in replies:
        if r.status_code == 201:
            accepted.append(r.json()["message"]["id"])
        else:  # after the merge, on the merged ticket: refused, naming where it went
            assert r.status_code == 409, r.text
            assert r.json()["code"] in ("ticket_merged", "version_conflict"), r.text
            if r.json()["code"] == "ticket_merged":
                assert r.json()["merged_into"] == into
    # Nothing lost: every accepted reply, both openings and the note are in the thread,
    # in order, with their authors and times, each once.
    thread = (await http.get(f"/v1/tickets/{into}/messages", params={"limit": 100},
                             headers=auth(admin))).json()["data"]
    ids = [m["id"] for m in thread]
    assert len(ids) == len(set(ids)) == len(accepted) + 3
    assert set(accepted) <= set(ids) and note.json()["message"]["id"] in ids
    assert [(m["created_at"], m["id"]) for m in thread] == sorted(
        (m["created_at"], m["id"]) for m in thread)
    assert {m["ticket_id"] for m in thread} == {sid, tid}
    internal = next(m for m in thread if m["visibility"] == "internal")
    assert internal["ticket_id"] == sid and internal["body"] == "internal: toner?"
    [received] = await _events(store, tenant.tenant_id, into, "TicketMergeReceived")
    own = [m["id"] for m in thread if m["ticket_id"] == gone]
    assert received.data["message_ids"] == own

    # Later commands on the merged ticket: 409 naming the target; reads carry the link.
    for path, body in (("tags", {"add": ["x"]}), ("state", {"state": "open"}),
                       ("messages", {"body": "late"}), ("merge", {"into": into})):
        r = await http.post(f"/v1/tickets/{gone}/{path}", json=body, headers=auth(admin))
        assert r.status_code == 409 and r.json()["merged_into"] == into, (path, r.text)
    shown = (await http.get(f"/v1/tickets/{gone}", headers=auth(admin))).json()
    assert shown["merged_into"] == into

    # Bad input: clear 4xx, nothing written.
    other = await _open(http, admin, "carol@example.com")
    foreign = await _open(http, (await make_tenant("Globex")).admin_key)
    before = (await http.get(f"/v1/tickets/{into}", headers=auth(admin))).json()
    for ticket_id, body, status in (
            (into, {"into": into}, 422),  # into itself
            (into, {"into": gone}, 422),  # into a ticket it was merged from
            (into, {"into": foreign["id"]}, 404),  # another tenant's
            (other["id"], {"into": gone}, 409),  # into a merged ticket
            (into, {"into": str(uuid.uuid4())}, 404)):
        r = await http.post(f"/v1/tickets/{ticket_id}/merge", json=body, headers=auth(admin))
        assert r.status_code == status, (body, r.text)
    assert (await http.get(f"/v1/tickets/{into}", headers=auth(admin))).json() == before
    assert (await http.get(f"/v1/tickets/{other['id']}", headers=auth(admin))
            ).json()["version"] == other["version"]

    # History, as-of and the changes feed show the merge.
    audit = await _auditor(http, admin)
    history = (await http.get(f"/v1/tickets/{gone}/history", params={"limit": 100},
                              headers=audit)).json()["data"]
    assert [e["type"] for e in history][-2:] == ["StateChanged", "TicketMerged"]
    last = history[-1]["version"]
    was = (await http.get(f"/v1/tickets/{gone}/as-of", params={"version": last - 2},
                          headers=audit)).json()
    assert "merged_into" not in was and was["state"] != "closed"
    now = (await http.get(f"/v1/tickets/{gone}/as-of", params={"version": last},
                          headers=audit)).json()
    assert now == shown
    changes = (await http.get("/v1/changes", params={"after_seq": 0, "limit": 1000},
                              headers=auth(admin))).json()["data"]
    types = [c["type"] for c in changes if c["stream_id"] in (sid, tid)]
    assert types.count("TicketMerged") == 1 and types.count("TicketMergeReceived") == 1


async def test_links_followers_and_ccs_in_the_answer_history_and_as_of(
        http, tenant, owner, store):
    admin = tenant.admin_key
    h = auth(admin)
    customer = await portal_headers(http, h, "fay@example.com")  # a's requester
    a = await _open(http, admin, "fay@example.com", "A")
    b, c = [await _open(http, admin, subject=s) for s in ("B", "C")]

    async def post(ticket: dict, path: str, body: dict, **headers: str):  # type: ignore[type-arg]
        return await http.post(f"/v1/tickets/{ticket['id']}/{path}", json=body,
                               headers=h | headers)

    # a duplicates b, b duplicates c; c duplicating a would close a cycle: refused, and
    # so is its mirror image, at once from both sides; nothing is written.
    r = await post(a, "links", {"kind": "duplicate_of", "ticket_id": b["id"]},
                   **{"If-Match": f'"{a["version"]}"', "Idempotency-Key": "dup-a"})
    assert r.status_code == 200, r.text
    assert r.json()["links"]["duplicate_of"] == b["id"] and r.headers["etag"] == '"2"'
    again = await post(a, "links", {"kind": "duplicate_of", "ticket_id": b["id"]},
                       **{"Idempotency-Key": "dup-a"})
    assert again.headers["idempotent-replayed"] == "true" and again.json() == r.json()
    stale = await post(a, "links", {"kind": "related", "ticket_id": c["id"]},
                       **{"If-Match": '"1"'})
    assert stale.status_code == 412
    assert (await post(b, "links", {"kind": "duplicate_of", "ticket_id": c["id"]})
            ).status_code == 200
    before = {t["id"]: (await http.get(f"/v1/tickets/{t['id']}", headers=h)).json()
              for t in (a, b, c)}
    assert before[b["id"]]["links"] == {"related": [], "duplicate_of": c["id"],
                                        "duplicates": [a["id"]], "problem": None,
                                        "incidents": []}
    for here, there, kind in ((c, a, "duplicate_of"), (a, c, "duplicates"), (a, a, "related")):
        r = await post(here, "links", {"kind": kind, "ticket_id": there["id"]})
        assert r.status_code == 422, r.text
    # Two links that each look fine alone but close a cycle together: one wins.
    d, e = [await _open(http, admin, subject=s) for s in ("D", "E")]
    both = await asyncio.gather(post(d, "links", {"kind": "duplicate_of", "ticket_id": e["id"]}),
                                post(e, "links", {"kind": "duplicate_of", "ticket_id": d["id"]}))
    assert sorted(r.status_code for r in both) == [200, 422], [r.text for r in both]
    for t in (a, b, c):
        assert (await http.get(f"/v1/tickets/{t['id']}", headers=h)).json() == before[t["id"]]
    # A problem lists its incidents; a link comes off both tickets.
    assert (await post(c, "links", {"kind": "incident", "ticket_id": d["id"]})).status_code == 200
    shown = (await http.get(f"/v1/tickets/{c['id']}", headers=h)).json()
    assert shown["links"]["incidents"] == [d["id"]]
    incident = (await http.get(f"/v1/tickets/{d['id']}", headers=h)).json()
    assert incident["links"]["problem"] == c["id"]
    off = await post(d, "links", {"kind": "problem", "ticket_id": c["id"], "remove": True})
    assert off.status_code == 200 and off.json()["links"]["problem"] is None
    assert (await http.get(f"/v1/tickets/{c['id']}", headers=h)).json()["links"] == {
        "related": [], "duplicate_of": None, "duplicates": [b["id"]], "problem": None,
        "incidents": []}

    # Followers: agents only.
    agent = await owner.agent(tenant.tenant_id)
    intake = await owner.key(tenant.tenant_id, "intake")
    r = await post(a, "followers", {"add": [str(agent)]})
    assert r.status_code == 200 and r.json()["followers"] == [str(agent)]
    for who in (uuid.uuid4(), await owner.agent(tenant.tenant_id, active=False), intake.id):
        r = await post(a, "followers", {"add": [str(who)]})
        assert r.status_code == 422, r.text
    r = await http.post(f"/v1/tickets/{a['id']}/followers", json={"add": [str(agent)]},
                        headers=auth(intake))
    assert r.status_code == 403
    # CCs: e-mails and contacts; the requester reads them in the portal.
    contact = (await http.post("/v1/contacts", headers=h,
                               json={"email": "dan@example.com", "name": "Dan"})).json()
    r = await post(a, "ccs", {"add": [{"email": "Eve@example.com", "name": "Eve"},
                                      {"contact_id": contact["id"]}]})
    assert r.status_code == 200, r.text
    # An e-mail is linked to a contact (here a new one) as a requester's is.
    eve = (await http.get("/v1/contacts", params={"email": "eve@example.com"},
                          headers=h)).json()["data"]
    assert r.json()["ccs"] == [
        {"contact_id": eve[0]["id"], "email": "Eve@example.com", "name": "Eve"},
        {"contact_id": contact["id"], "email": "dan@example.com", "name": "Dan"}]
    for bad in ({"add": [{"email": "fay@example.com"}]}, {"add": [{"email": "nope"}]},
                {"add": [{"contact_id": str(uuid.uuid4())}]}):
        assert (await post(a, "ccs", bad)).status_code == 422, bad
    seen = (await http.get(f"/v1/portal/tickets/{a['id']}", headers=customer)).json()
    assert seen["ccs"] == [{"email": "Eve@example.com", "name": "Eve"},
                           {"email": "dan@example.com", "name": "Dan"}]
    r = await post(a, "ccs", {"remove": ["eve@example.com"]})
    assert [x["email"] for x in r.json()["ccs"]] == ["dan@example.com"]
    unfollow = await post(a, "followers", {"remove": [str(agent)]})
    assert "followers" not in unfollow.json()

    # History and as-of: every change an event, each version replayed as answered.
    audit = await _auditor(http, admin)
    history = (await http.get(f"/v1/tickets/{a['id']}/history", params={"limit": 100},
                              headers=audit)).json()["data"]
    assert [e["type"] for e in history] == [
        "TicketOpened", "TicketLinked", "FollowersChanged", "CcsChanged", "CcsChanged",
        "FollowersChanged"]
    assert history[1]["data"]["kind"] == "duplicate_of"
    as_of = (await http.get(f"/v1/tickets/{a['id']}/as-of", params={"version": 4},
                            headers=audit)).json()
    assert as_of["followers"] == [str(agent)] and len(as_of["ccs"]) == 2
    # The e-mails of CCs are sealed in the stream as personal data.
    async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
        raw = await s.conn.fetchval(
            "SELECT data FROM events WHERE stream_id = $1 AND type = 'CcsChanged' "
            "ORDER BY version LIMIT 1", uuid.UUID(a["id"]))
    assert "Eve@example.com" not in str(raw)
    # Erasing the requester takes the CCs its key sealed off the ticket's answer too.
    erased = await http.post(f"/v1/contacts/{a['requester']['contact_id']}/erase",
                             json={"reason": "asked to be forgotten"}, headers=h)
    assert erased.status_code == 200, erased.text
    after = (await http.get(f"/v1/tickets/{a['id']}", headers=h)).json()
    assert after["ccs"] == [{"contact_id": contact["id"], "email": "", "name": None}]


async def test_a_mail_answering_a_merged_ticket_lands_where_it_went(http, tenant):
    admin = auth(tenant.admin_key)
    box = await make_mailbox(http, admin, smtp=smtp_at(free_port()))
    first = await inbound(http, box, b"From: bob@example.com\nMessage-ID: <m-1@x>\n"
                                     b"Subject: Broken\n\nIt broke.\n")
    target = await _open(http, tenant.admin_key)
    merged = await http.post(f"/v1/tickets/{first['ticket_id']}/merge",
                             json={"into": target["id"]}, headers=admin)
    assert merged.status_code == 200, merged.text
    answer = await inbound(http, box, b"From: bob@example.com\nMessage-ID: <m-2@x>\n"
                                      b"In-Reply-To: <m-1@x>\nSubject: Re: Broken\n\nStill.\n")
    assert (answer["outcome"], answer["ticket_id"]) == ("reply", target["id"]), answer
    thread = (await http.get(f"/v1/tickets/{target['id']}/messages", headers=admin)).json()
    assert [m["body"] for m in thread["data"]][-1] == "Still."


async def test_duplicate_links_on_disjoint_pairs_cannot_close_a_ring(http, tenant, store):
    """P of Q and R of S stand; Q of R and S of P, each decided alone, are fine, and they
    lock disjoint pairs of tickets: the tenant's duplicate-link lock (held here while
    both queue on it) lets the second see the first, and refuse."""
    admin = tenant.admin_key
    p, q, r, s = [await _open(http, admin, subject=n) for n in "PQRS"]

    def dup(a, b):  # type: ignore[no-untyped-def]
        return http.post(f"/v1/tickets/{a['id']}/links",
                         json={"kind": "duplicate_of", "ticket_id": b["id"]}, headers=auth(admin))

    assert (await dup(p, q)).status_code == 200 and (await dup(r, s)).status_code == 200
    async with store.unit_of_work(tenant.tenant_id) as held:
        await held.conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1::uuid::text || "
            "'/duplicate-links', 0))", tenant.tenant_id)
        racing = [asyncio.ensure_future(dup(q, r)), asyncio.ensure_future(dup(s, p))]
        for _ in range(10_000):  # until both wait on the lock (bounded, no timer)
            await asyncio.sleep(0)
            waiting = await held.conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
            if waiting == 2 or any(t.done() for t in racing):
                break
        assert waiting == 2 and not any(t.done() for t in racing)
    answers = await asyncio.gather(*racing)
    assert sorted(a.status_code for a in answers) == [200, 422], [a.text for a in answers]
