"""Plain keyset walks over HTTP: a known set, paged two at a time to the end, comes
back exactly, each item once, in the list's own order.

Every list of the desk: tickets (newest first), a ticket's messages (oldest first),
contacts and organizations (newest first), groups (oldest first), ``/v1/changes``
(seq order, by ``after_seq``) and ``/v1/search`` (best first). Five of each, so the
last page is a short one; nothing is filtered, so the walk is the plain one a client's
queue makes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import httpx

from tests.e2e.conftest import NEW_TICKET, auth

COUNT = 5
PAGES = 20
"""A walk longer than this is going round in circles."""
WORD = "sprocketry"


async def _post(http: httpx.AsyncClient, key: Any, url: str, body: dict[str, Any]
                ) -> dict[str, Any]:
    r = await http.post(url, json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _walk(http: httpx.AsyncClient, key: Any, url: str, **params: Any
                ) -> list[dict[str, Any]]:
    """Every item of a cursor list, two per page, in the order the pages give them."""
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(PAGES):
        r = await http.get(url, params={"limit": 2, **params} | (
            {"cursor": cursor} if cursor else {}), headers=auth(key))
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["data"]) <= 2
        seen += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return seen
    raise AssertionError(f"{url}: more than {PAGES} pages of two for {COUNT} items")


def _by_keyset(items: list[dict[str, Any]], newest_first: bool) -> list[str]:
    """Ids in (created_at, id) order, as the lists' keysets run."""
    ordered = sorted(items, key=lambda i: (datetime.fromisoformat(i["created_at"]), i["id"]),
                     reverse=newest_first)
    return [i["id"] for i in ordered]


def _ids(items: list[dict[str, Any]]) -> list[str]:
    return [i["id"] for i in items]


async def _check(walk: Callable[[], Awaitable[list[dict[str, Any]]]], expected: list[str],
                 what: str) -> None:
    seen = _ids(await walk())
    assert len(seen) == len(set(seen)), f"{what}: repeated {seen}"
    assert seen == expected, f"{what}: walked {seen}, expected {expected}"


async def test_every_list_walks_its_set_exactly_once_in_order(http, tenant):
    admin = tenant.admin_key
    tickets = [await _post(http, admin, "/v1/tickets", NEW_TICKET | {
        "subject": f"Chain {i} {WORD}", "body": f"{WORD} " * (i + 1),
        "requester": {"email": f"rider{i}@example.com", "name": f"Rider {i}"}})
        for i in range(COUNT)]
    ticket = tickets[0]
    messages_url = f"/v1/tickets/{ticket['id']}/messages"
    for i in range(COUNT - 1):
        await _post(http, admin, messages_url, {"body": f"reply {i}"})
    organizations = [await _post(http, admin, "/v1/organizations", {
        "name": f"Shop {i}", "domains": [f"shop{i}.test"]}) for i in range(COUNT)]
    groups = [await _post(http, admin, "/v1/groups", {"name": f"Team {i}"})
              for i in range(COUNT)]

    await _check(lambda: _walk(http, admin, "/v1/tickets"),
                 _by_keyset(tickets, newest_first=True), "tickets")
    messages = (await http.get(messages_url, params={"limit": 100},
                               headers=auth(admin))).json()["data"]
    assert len(messages) == COUNT
    await _check(lambda: _walk(http, admin, messages_url),
                 _by_keyset(messages, newest_first=False), "messages")
    contacts = [(await http.get(f"/v1/contacts/{t['requester']['contact_id']}",
                                headers=auth(admin))).json() for t in tickets]
    await _check(lambda: _walk(http, admin, "/v1/contacts"),
                 _by_keyset(contacts, newest_first=True), "contacts")
    await _check(lambda: _walk(http, admin, "/v1/organizations"),
                 _by_keyset(organizations, newest_first=True), "organizations")
    await _check(lambda: _walk(http, admin, "/v1/groups"),
                 _by_keyset(groups, newest_first=False), "groups")

    hits = await _walk(http, admin, "/v1/search", q=WORD, type="ticket")
    found = _ids(hits)
    assert len(found) == len(set(found)), f"search: repeated {found}"
    assert sorted(found) == sorted(_ids(tickets))
    ranks = [h["rank"] for h in hits]
    assert ranks == sorted(ranks, reverse=True), f"search: ranks out of order {ranks}"
    # The more often the word, the better the rank: the last ticket first.
    assert found[0] == tickets[-1]["id"]


async def test_the_changes_feed_walks_every_seq_once_in_order(http, tenant):
    admin = tenant.admin_key
    tickets = [await _post(http, admin, "/v1/tickets", NEW_TICKET | {
        "requester": {"email": f"rider{i}@example.com"}}) for i in range(COUNT)]
    seqs: list[int] = []
    streams: list[tuple[str, int]] = []
    after = 0
    for _ in range(PAGES * COUNT):
        r = await http.get("/v1/changes", params={"after_seq": after, "limit": 2},
                           headers=auth(admin))
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["data"]) <= 2
        seqs += [c["seq"] for c in page["data"]]
        streams += [(c["stream_id"], c["version"]) for c in page["data"]]
        after = page["next_after_seq"]
        if after >= page["head_seq"]:
            break
    else:
        raise AssertionError("the changes feed never reached its head")
    head = page["head_seq"]
    assert seqs == list(range(1, head + 1)), seqs
    assert len(streams) == len(set(streams))
    opened = [sid for sid, version in streams if version == 1]
    assert {t["id"] for t in tickets} <= set(opened)
    assert [sid for sid in opened if sid in {t["id"] for t in tickets}] == _ids(tickets)
