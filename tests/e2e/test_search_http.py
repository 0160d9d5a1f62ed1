"""``GET /v1/search`` and ``q`` on the ticket list: what is found, in which order, by
whom, and what bad input answers."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import httpx

from eventstore.types import StoreActor
from handlers.search import rebuild_search_index
from tests.e2e.conftest import NEW_TICKET, auth


async def _open(http: httpx.AsyncClient, key: Any, **over: Any) -> dict[str, Any]:
    r = await http.post("/v1/tickets", json=NEW_TICKET | over, headers=auth(key))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _say(http: httpx.AsyncClient, key: Any, ticket: dict[str, Any], body: str,
               visibility: str = "public") -> None:
    r = await http.post(f"/v1/tickets/{ticket['id']}/messages",
                        json={"body": body, "visibility": visibility}, headers=auth(key))
    assert r.status_code == 201, r.text


async def _search(http: httpx.AsyncClient, key: Any, q: str, **params: Any) -> dict[str, Any]:
    r = await http.get("/v1/search", params={"q": q, **params}, headers=auth(key))
    assert r.status_code == 200, r.text
    return dict(r.json())


def _ids(page: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in page["data"]]


async def test_a_word_only_in_the_third_message_is_found(http, tenant):
    admin = tenant.admin_key
    ticket = await _open(http, admin, subject="Login trouble", body="I cannot sign in.")
    await _open(http, admin, subject="Other", body="Nothing to see here.")
    await _say(http, admin, ticket, "Have you tried resetting the password?")
    await _say(http, admin, ticket, "The reset mail never arrived; perhaps a quarantine?")
    page = await _search(http, admin, "quarantine")
    assert _ids(page) == [ticket["id"]]
    hit = page["data"][0]
    assert hit["type"] == "ticket" and hit["ticket"] == (
        await http.get(f"/v1/tickets/{ticket['id']}", headers=auth(admin))).json()
    assert "<mark>quarantine</mark>" in hit["snippet"]
    assert page["next_cursor"] is None


async def test_phrases_exclusions_or_and_requester_and_tags(http, tenant):
    admin = tenant.admin_key
    in_order = await _open(http, admin, subject="Printer", body="the paper tray jams daily")
    reversed_ = await _open(http, admin, subject="Printer", body="jams the tray with paper")
    other = await _open(http, admin, subject="Scanner", body="paper tray is fine",
                        requester={"email": "zoe@corp.example", "name": "Zoe Quill"},
                        tags=["vip"])

    # Words are all required, in any order.
    assert set(_ids(await _search(http, admin, "tray paper"))) == {
        in_order["id"], reversed_["id"], other["id"]}
    # A quoted phrase: those words, next to each other, in that order.
    assert set(_ids(await _search(http, admin, '"paper tray"'))) == {in_order["id"],
                                                                     other["id"]}
    # -word excludes.
    assert set(_ids(await _search(http, admin, "paper -jams"))) == {other["id"]}
    # or accepts either.
    assert set(_ids(await _search(http, admin, "daily or fine"))) == {in_order["id"],
                                                                     other["id"]}
    # The requester's name and e-mail, and the tags, are searched too.
    for q in ("quill", "zoe@corp.example", "vip"):
        assert _ids(await _search(http, admin, q)) == [other["id"]], q


async def test_a_subject_match_ranks_above_a_body_match(http, tenant):
    admin = tenant.admin_key
    in_body = await _open(http, admin, subject="Question", body="my invoice is wrong")
    in_subject = await _open(http, admin, subject="Invoice", body="please look into it")
    page = await _search(http, admin, "invoice")
    assert _ids(page) == [in_subject["id"], in_body["id"]]
    assert page["data"][0]["rank"] > page["data"][1]["rank"]


async def test_keyset_pages_and_cursors_belong_to_their_query(http, tenant):
    admin = tenant.admin_key
    tickets = [await _open(http, admin, subject=f"Refund {i}", body="refund " * (i + 1))
               for i in range(5)]
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = await _search(http, admin, "refund", **params)
        seen += _ids(page)
        cursor = page["next_cursor"]
        if cursor is None:
            break
        ranks = [h["rank"] for h in page["data"]]
        assert ranks == sorted(ranks, reverse=True)
    assert sorted(seen) == sorted(t["id"] for t in tickets) and len(seen) == 5
    first = await _search(http, admin, "refund", limit=2)
    other = await http.get("/v1/search", params={"q": "refunds", "cursor":
                                                 first["next_cursor"]}, headers=auth(admin))
    assert other.status_code == 400 and other.json()["code"] == "invalid_cursor"


async def test_internal_notes_are_searched_for_agents(http, tenant, owner):
    agent = await owner.key(tenant.tenant_id, "agent",
                            agent_id=await owner.agent(tenant.tenant_id))
    ticket = await _open(http, agent)
    await _say(http, agent, ticket, "suspect the firmware rollback", visibility="internal")
    assert _ids(await _search(http, agent, "firmware rollback")) == [ticket["id"]]
    for role in ("intake", "analyst", "auditor"):
        key = await owner.key(tenant.tenant_id, role)
        r = await http.get("/v1/search", params={"q": "firmware"}, headers=auth(key))
        assert r.status_code == 403, role


async def test_a_tenant_never_finds_another_tenants_tickets(http, tenant, make_tenant):
    other = await make_tenant("Other")
    theirs = await _open(http, other.admin_key, subject="Zeppelin")
    assert _ids(await _search(http, tenant.admin_key, "zeppelin")) == []
    assert _ids(await _search(http, other.admin_key, "zeppelin")) == [theirs["id"]]
    listed = await http.get("/v1/tickets", params={"q": "zeppelin"},
                            headers=auth(tenant.admin_key))
    assert listed.json()["data"] == []


async def test_bad_queries_are_400_saying_why(http, tenant):
    admin = tenant.admin_key
    for q, code in (("", "empty_query"), ("   ", "empty_query"), ('"" - ( )', "empty_query"),
                    ("!!! ???", "empty_query"), ("-printer", "empty_query"),
                    ("-a or -b", "empty_query"), ("x" * 501, "invalid_parameter"),
                    ("nul\x00byte", "invalid_parameter")):
        for path in ("/v1/search", "/v1/tickets"):
            r = await http.get(path, params={"q": q}, headers=auth(admin))
            assert r.status_code == 400, (path, q, r.text)
            assert r.json()["code"] == code, (path, q, r.text)
            assert r.headers["content-type"] == "application/problem+json"
    r = await http.get("/v1/search", headers=auth(admin))
    assert r.status_code == 400
    r = await http.get("/v1/search", params={"q": "x", "type": "planet"}, headers=auth(admin))
    assert r.status_code == 400


async def test_the_list_combines_q_with_its_filters(http, tenant):
    admin = tenant.admin_key
    high = await _open(http, admin, subject="Broken keyboard", priority="high")
    await _open(http, admin, subject="Broken mouse", priority="low")
    await _open(http, admin, subject="Keyboard wish", priority="high")
    r = await http.get("/v1/tickets", params={"q": "broken keyboard", "priority": "high"},
                       headers=auth(admin))
    assert r.status_code == 200, r.text
    assert [t["id"] for t in r.json()["data"]] == [high["id"]]


async def test_the_tenants_configuration_stems_and_rebuilds_the_index(http, tenant):
    admin = tenant.admin_key
    ticket = await _open(http, admin, subject="Connection", body="the servers are rebooting")
    assert _ids(await _search(http, admin, "reboot")) == []  # simple: words as written
    settings = (await http.get("/v1/settings", headers=auth(admin))).json()
    document = {k: v for k, v in settings.items() if k not in ("version",)}
    document = settings.get("settings", document) | {"text_search": "english"}
    r = await http.put("/v1/settings", json=document, headers=auth(admin))
    assert r.status_code == 200, r.text
    assert _ids(await _search(http, admin, "reboot")) == [ticket["id"]]
    bad = await http.put("/v1/settings", json=document | {"text_search": "klingon"},
                         headers=auth(admin))
    assert bad.status_code == 422


async def test_contacts_by_name_email_and_phone_organizations_by_name_and_domain(
        http, tenant, make_tenant):
    admin = tenant.admin_key
    r = await http.post("/v1/organizations", json={"name": "Wonka Industries",
                                                   "domains": ["wonka.test"]},
                        headers=auth(admin))
    assert r.status_code == 201, r.text
    org = r.json()
    r = await http.post("/v1/contacts", headers=auth(admin), json={
        "email": "charlie.bucket@wonka.test", "name": "Charlie Bucket",
        "phone": "+44 20 7946 0958"})
    assert r.status_code == 201, r.text
    charlie = r.json()
    # A requester's contact is made by opening a ticket, and found too.
    ticket = await _open(http, admin, requester={"email": "veruca@salt.test",
                                                 "name": "Veruca Salt"})
    veruca = ticket["requester"]["contact_id"]

    for q, found in (("charlie", [charlie["id"]]), ("bucket wonka", [charlie["id"]]),
                     ("charlie.bucket@wonka.test", [charlie["id"]]),
                     ("442079460958", [charlie["id"]]), ("7946", [charlie["id"]]),
                     ("veruca", [veruca]), ("salt -veruca", [])):
        page = await _search(http, admin, q, type="contact")
        assert _ids(page) == found, q
    hit = (await _search(http, admin, "charlie", type="contact"))["data"][0]
    assert hit["type"] == "contact" and "<mark>Charlie</mark>" in hit["snippet"]
    got = await http.get(f"/v1/contacts/{charlie['id']}", headers=auth(admin))
    assert hit["contact"] == got.json() and hit["contact"]["organization_id"] == org["id"]
    # The ticket is still found by its requester's name; contacts are not tickets.
    assert _ids(await _search(http, admin, "veruca")) == [ticket["id"]]

    for q in ("wonka", "industries", "wonka.test"):
        page = await _search(http, admin, q, type="organization")
        assert _ids(page) == [org["id"]], q
        assert page["data"][0]["organization"] == (await http.get(
            f"/v1/organizations/{org['id']}", headers=auth(admin))).json()

    # Edits are found at once; the old name is not.
    r = await http.patch(f"/v1/organizations/{org['id']}", headers=auth(admin),
                         json={"name": "Slugworth", "domains": ["slugworth.test"]})
    assert r.status_code == 200, r.text
    assert _ids(await _search(http, admin, "wonka", type="organization")) == []
    assert _ids(await _search(http, admin, "slugworth", type="organization")) == [org["id"]]
    r = await http.patch(f"/v1/contacts/{charlie['id']}", json={"name": "Grandpa Joe"},
                         headers=auth(admin))
    assert r.status_code == 200, r.text
    assert _ids(await _search(http, admin, "grandpa", type="contact")) == [charlie["id"]]
    assert _ids(await _search(http, admin, "charlie bucket", type="contact")) == [
        charlie["id"]]  # still by the e-mail
    # A merged contact is found no more: its reads redirect to the survivor.
    r = await http.post(f"/v1/contacts/{veruca}/merge", json={"into": charlie["id"]},
                        headers=auth(admin))
    assert r.status_code == 200, r.text
    assert _ids(await _search(http, admin, "veruca", type="contact")) == []

    other = await make_tenant("Other")
    assert _ids(await _search(http, other.admin_key, "grandpa", type="contact")) == []
    assert _ids(await _search(http, other.admin_key, "slugworth", type="organization")) == []
    r = await http.get("/v1/search", params={"q": "x", "type": "agent"}, headers=auth(admin))
    assert r.status_code == 400


async def test_snippets_escape_the_text_and_mark_only_outside_what_is_escaped(http, tenant):
    # Marks are put on the raw text, which is escaped after: a match next to & < > and
    # quotes, or a word spelled like an escape (amp, lt, quot), is marked whole and
    # never inside an entity; the text comes back as written (tags aside: like the
    # index, the snippet reads <b> and <y> as markup, not words).
    admin = tenant.admin_key
    body = 'Tom & Jerry <b>said</b> "amp" isn\'t lt; x<y>z &amp; &lt;gadget&gt; a&b'
    ticket = await _open(http, admin, subject="Escapes", body=body)
    for q, marked in (("gadget", "&amp;lt;<mark>gadget</mark>&amp;gt;"),
                      ("amp", "&quot;<mark>amp</mark>&quot;"),
                      ("jerry", "<mark>Jerry</mark>"),
                      ("isn", "<mark>isn</mark>&#x27;t")):
        (hit,) = (await _search(http, admin, q))["data"]
        assert hit["id"] == ticket["id"]
        snippet = hit["snippet"]
        assert marked in snippet, (q, snippet)
        # Nothing but the marks is markup, and every & starts a whole entity.
        bare = snippet.replace("<mark>", "").replace("</mark>", "")
        assert "<" not in bare and ">" not in bare and '"' not in bare, (q, snippet)
        assert all(m.group(1) in ("amp", "lt", "gt", "quot", "#x27")
                   for m in re.finditer(r"&([^;&]*)(?:;|$)", bare)), (q, snippet)
        assert "isn&#x27;t lt; x" in bare and "&amp;amp; &amp;lt;" in bare, (q, snippet)
        assert html.unescape(bare).endswith("&lt;gadget&gt; a&b … hardware … Ann … "
                                            "ann@example.com"), (q, snippet)

    r = await http.post("/v1/contacts", headers=auth(admin), json={
        "email": "ob@sons.test", "name": 'O\'Brien & "Sons" <Ltd>'})
    assert r.status_code == 201, r.text
    (hit,) = (await _search(http, admin, "sons", type="contact"))["data"]
    assert hit["snippet"].startswith(
        "O&#x27;Brien &amp; &quot;<mark>Sons</mark>&quot; &lt;Ltd&gt;"), hit["snippet"]


async def test_a_merged_tickets_words_find_its_target_and_itself_merged(
        http, tenant, owner, store):
    admin = tenant.admin_key
    h = auth(admin)
    ann, bob = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    ann_key = await owner.key(tenant.tenant_id, "agent", agent_id=ann)
    bob_key = await owner.key(tenant.tenant_id, "agent", agent_id=bob)
    sales = (await http.post("/v1/groups", json={"name": "Sales", "members": [str(bob)]},
                             headers=h)).json()["id"]
    target = await _open(http, admin, subject="Printer", body="The tray is stuck.",
                         group_id=sales)
    source = await _open(http, admin, subject="Again", body="kumquat printer broken")
    await _say(http, admin, source, "Any marmalade on the rollers?")
    await _say(http, admin, source, "quince note for staff", "internal")
    await _say(http, admin, target, "Tray freed.")
    assert _ids(await _search(http, admin, "marmalade")) == [source["id"]]

    r = await http.post(f"/v1/tickets/{source['id']}/merge", json={"into": target["id"]},
                        headers=h)
    assert r.status_code == 200, r.text
    both = sorted([source["id"], target["id"]])
    for word in ("kumquat", "marmalade", "quince"):
        assert sorted(_ids(await _search(http, admin, word))) == both, word
    page = await _search(http, admin, "marmalade")
    hits = {hit["id"]: hit for hit in page["data"]}
    # The merged ticket is still found, its answer pointing at the target.
    assert hits[source["id"]]["ticket"]["merged_into"] == target["id"]
    assert "<mark>marmalade</mark>" in hits[target["id"]]["snippet"]
    # A reply after the merge is appended; the merged words stay; a re-index of the
    # tenant computes the same vectors.
    await _say(http, admin, target, "Tangerine toner ordered.")
    for word in ("tangerine", "marmalade", "stuck"):
        assert target["id"] in _ids(await _search(http, admin, word)), word

    async def vectors() -> list[Any]:
        async with store.unit_of_work(tenant.tenant_id, readonly=True) as s:
            return [tuple(r) for r in await s.conn.fetch(
                "SELECT id, document::text, staff_document::text FROM search_documents "
                "WHERE kind = 'ticket' ORDER BY id")]

    before = await vectors()
    async with store.unit_of_work(tenant.tenant_id, StoreActor("system", "test")) as s:
        await rebuild_search_index(s)
    assert await vectors() == before
    assert "'marmalade'" in {i: d for i, d, _ in before}[uuid.UUID(target["id"])]

    # Group-scoped access: Ann, outside the target's group, finds the merged ticket (in
    # no group) by its words, never the target; Bob, in it, finds both.
    doc = (await http.get("/v1/settings", headers=h)).json()
    assert (await http.put("/v1/settings", json=doc | {"group_scoped_access": True},
                           headers=h)).status_code == 200
    assert _ids(await _search(http, ann_key, "marmalade")) == [source["id"]]
    assert _ids(await _search(http, ann_key, "tangerine")) == []
    assert sorted(_ids(await _search(http, bob_key, "marmalade"))) == both


async def test_a_scoped_agent_finds_a_target_only_by_the_merged_words_it_may_read(
        http, tenant, owner):
    # Under group-scoped access a merge's target shows an agent only the merged tickets
    # it may see; the target is found, and ranked, by those words, never by a hidden
    # merged ticket's (migration 0912).
    h = auth(tenant.admin_key)
    bob, carol, dave = [await owner.agent(tenant.tenant_id) for _ in range(3)]
    bob_key, carol_key, dave_key = [await owner.key(tenant.tenant_id, "agent", agent_id=a)
                                    for a in (bob, carol, dave)]
    groups = {}
    for name, members in (("Support", [bob, dave]), ("Sales", [carol, dave])):
        r = await http.post("/v1/groups", json={"name": name, "members": [
            str(m) for m in members]}, headers=h)
        assert r.status_code == 201, r.text
        groups[name] = r.json()["id"]
    target = await _open(http, tenant.admin_key, subject="Printer", body="The tray is stuck.",
                         group_id=groups["Support"])
    source = await _open(http, tenant.admin_key, subject="Again",
                         body="kumquat printer printer broken", group_id=groups["Sales"])
    await _say(http, tenant.admin_key, source, "quince note for staff", "internal")
    r = await http.post(f"/v1/tickets/{source['id']}/merge", json={"into": target["id"]},
                        headers=h)
    assert r.status_code == 200, r.text
    doc = (await http.get("/v1/settings", headers=h)).json()
    assert (await http.put("/v1/settings", json=doc | {"group_scoped_access": True},
                           headers=h)).status_code == 200

    # Bob sees the target and not the merged ticket: its thread shows him none of it.
    thread = (await http.get(f"/v1/tickets/{target['id']}/messages",
                             headers=auth(bob_key))).json()["data"]
    assert [m["body"] for m in thread] == ["The tray is stuck."]
    for q in ("kumquat", "quince", "stuck kumquat", "broken"):
        assert _ids(await _search(http, bob_key, q)) == [], q
        listed = await http.get("/v1/tickets", params={"q": q}, headers=auth(bob_key))
        assert listed.status_code == 200 and listed.json()["data"] == [], q
    assert _ids(await _search(http, bob_key, "stuck")) == [target["id"]]
    listed = await http.get("/v1/tickets", params={"q": "stuck"}, headers=auth(bob_key))
    assert [t["id"] for t in listed.json()["data"]] == [target["id"]]
    # Carol sees the merged ticket only; Dave sees both, and so does an admin.
    assert _ids(await _search(http, carol_key, "kumquat")) == [source["id"]]
    both = sorted([source["id"], target["id"]])
    for key in (dave_key, tenant.admin_key):
        assert sorted(_ids(await _search(http, key, "kumquat"))) == both
        assert sorted(_ids(await _search(http, key, "quince"))) == both
    hit = next(x for x in (await _search(http, dave_key, "kumquat"))["data"]
               if x["id"] == target["id"])
    assert "<mark>kumquat</mark>" in hit["snippet"]
    # Ranked by what each reads: the hidden "printer printer" lifts Dave's rank of the
    # target, never Bob's, whose rank is the one of the target's own words.
    [bobs] = (await _search(http, bob_key, "printer"))["data"]
    daves = next(x for x in (await _search(http, dave_key, "printer"))["data"]
                 if x["id"] == target["id"])
    assert bobs["id"] == target["id"] and bobs["rank"] < daves["rank"]
    lone = await _open(http, tenant.admin_key, subject="Printer", body="The tray is stuck.",
                       group_id=groups["Support"])
    ranks = {x["id"]: x["rank"] for x in (await _search(http, bob_key, "printer"))["data"]}
    assert ranks[target["id"]] == ranks[lone["id"]]
