"""The ticket list as an agent's inbox: ``assignee=me``, ``group_id=mine``,
``state=active`` and ``sort=sla_due``, each checked, and the two inbox walks paged to
the end while other writes land between the pages: every ticket of the set once, in
the list's order, none repeated, none skipped."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx

from tests.e2e.conftest import NEW_TICKET, auth

PAGES = 40
FOREVER = "9999-12-31T23:59:59.999999+00:00"


async def _open(http: httpx.AsyncClient, key: Any, **extra: Any) -> dict[str, Any]:
    r = await http.post("/v1/tickets", json=NEW_TICKET | extra, headers=auth(key))
    assert r.status_code == 201, r.text
    return dict(r.json())


async def _post(http: httpx.AsyncClient, key: Any, url: str, body: dict[str, Any]
                ) -> dict[str, Any]:
    r = await http.post(url, json=body, headers=auth(key))
    assert r.status_code in (200, 201), r.text
    return dict(r.json())


def _due(ticket: dict[str, Any]) -> str:
    """The ticket's next SLA deadline as the API shows its clocks (the end of time when
    no clock runs), in a form that sorts as instants do."""
    running = [datetime.fromisoformat(c["due_at"]) for c in ticket["sla"].values()
               if c["started_at"] and c["due_at"] and not c["paused"]
               and not c["fulfilled_at"]]
    return min(running).isoformat() if running else FOREVER


async def _walk(http: httpx.AsyncClient, key: Any, between: Any = None, **params: Any
                ) -> list[dict[str, Any]]:
    """Every ticket of the list, two per page; ``between`` runs after each page."""
    seen: list[dict[str, Any]] = []
    cursor = None
    for page_no in range(PAGES):
        r = await http.get("/v1/tickets", params={"limit": 2, **params} | (
            {"cursor": cursor} if cursor else {}), headers=auth(key))
        assert r.status_code == 200, r.text
        seen += r.json()["data"]
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return seen
        if between is not None:
            await between(page_no)
    raise AssertionError(f"more than {PAGES} pages")


async def test_assignee_me_walks_my_tickets_once_each_while_others_write(
        http, tenant, owner):
    admin = tenant.admin_key
    me = await owner.agent(tenant.tenant_id)
    other = await owner.agent(tenant.tenant_id)
    my_key = await owner.key(tenant.tenant_id, "agent", me)
    mine, theirs = [], []
    for i in range(9):
        t = await _open(http, admin, subject=f"Mine {i}")
        mine.append(await _post(http, admin, f"/v1/tickets/{t['id']}/assignee",
                                {"agent_id": str(me)}))
        if i % 3 == 0:
            t = await _open(http, admin, subject=f"Theirs {i}")
            theirs.append(await _post(http, admin, f"/v1/tickets/{t['id']}/assignee",
                                      {"agent_id": str(other)}))

    async def meanwhile(page_no: int) -> None:
        # A new ticket of mine (newer than the walk's start, so before its cursor), a
        # change to one of mine that moves nothing, one to someone else's.
        t = await _open(http, admin, subject=f"Later {page_no}")
        await _post(http, admin, f"/v1/tickets/{t['id']}/assignee", {"agent_id": str(me)})
        await _post(http, my_key, f"/v1/tickets/{mine[page_no]['id']}/tags",
                    {"add": [f"seen{page_no}"]})
        await _post(http, admin, f"/v1/tickets/{theirs[page_no % 3]['id']}/priority",
                    {"priority": "low"})

    walked = [t["id"] for t in await _walk(http, my_key, meanwhile, assignee="me")]
    assert len(walked) == len(set(walked)), f"repeated: {walked}"
    assert walked == [t["id"] for t in reversed(mine)]

    # The same list asked for by the agent's id is the same list, with its own cursors.
    first = (await http.get("/v1/tickets", params={"assignee": "me", "limit": 2},
                            headers=auth(my_key))).json()
    r = await http.get("/v1/tickets", params={"assignee": str(me), "limit": 2,
                                              "cursor": first["next_cursor"]},
                       headers=auth(my_key))
    assert r.status_code == 200, r.text


async def test_sla_due_walks_soonest_first_with_no_clock_last_while_others_write(
        http, tenant, owner):
    admin = tenant.admin_key
    me = await owner.agent(tenant.tenant_id)
    my_key = await owner.key(tenant.tenant_id, "agent", me)
    tickets = []
    for i, priority in enumerate(["low", "urgent", "normal", "high", "low", "urgent",
                                  "normal", "high"]):
        tickets.append(await _open(http, admin, subject=f"Due {i}", priority=priority))
    # Answered and pending: no clock runs, so these come last.
    for t in tickets[:2]:
        await _post(http, my_key, f"/v1/tickets/{t['id']}/messages", {"body": "On it."})
        await _post(http, my_key, f"/v1/tickets/{t['id']}/state", {"state": "pending"})
    # Solved: not active, so not in the walk at all.
    solved = await _post(http, my_key, f"/v1/tickets/{tickets[2]['id']}/state",
                         {"state": "solved"})
    current = {t["id"]: (await http.get(f"/v1/tickets/{t['id']}", headers=auth(admin))
                         ).json() for t in tickets}
    expected = sorted((t for t in current.values() if t["id"] != solved["id"]),
                      key=lambda t: (_due(t), t["id"]))
    assert _due(expected[-1]) == FOREVER and _due(expected[0]) != FOREVER
    later: list[str] = []

    async def meanwhile(page_no: int) -> None:
        # New tickets land among the walked ones (a low one after most, an urgent one
        # before all); a tag and a priority change on tickets outside the set.
        priority = "urgent" if page_no % 2 else "low"
        later.append((await _open(http, admin, subject=f"Late {page_no}",
                                  priority=priority))["id"])
        await _post(http, admin, f"/v1/tickets/{later[0]}/tags", {"add": [f"p{page_no}"]})
        await _post(http, my_key, f"/v1/tickets/{expected[0]['id']}/tags",
                    {"add": [f"p{page_no}"]})

    walked = await _walk(http, my_key, meanwhile, sort="sla_due", state="active")
    ids = [t["id"] for t in walked]
    assert len(ids) == len(set(ids)), f"repeated: {ids}"
    assert [i for i in ids if i not in later] == [t["id"] for t in expected]
    # The order holds for everything the walk saw, the late tickets included, as the
    # documents it was sent show their clocks.
    keys = [(_due(t), t["id"]) for t in walked]
    assert keys == sorted(keys)
    assert solved["id"] not in ids


async def test_group_id_mine_is_the_groups_the_agent_is_a_member_of(http, tenant, owner):
    admin = tenant.admin_key
    me = await owner.agent(tenant.tenant_id)
    my_key = await owner.key(tenant.tenant_id, "agent", me)
    ours = await _post(http, admin, "/v1/groups", {"name": "Billing", "members": [str(me)]})
    other = await _post(http, admin, "/v1/groups", {"name": "Hardware"})
    in_ours = await _open(http, admin, group_id=ours["id"])
    await _open(http, admin, group_id=other["id"])
    await _open(http, admin)
    r = await http.get("/v1/tickets", params={"group_id": "mine"}, headers=auth(my_key))
    assert r.status_code == 200, r.text
    assert [t["id"] for t in r.json()["data"]] == [in_ours["id"]]


async def test_the_inbox_parameters_refuse_in_plain_words(http, tenant):
    admin = tenant.admin_key
    for params in ({"assignee": "nobody"}, {"group_id": "yours"},
                   {"requester_id": "12"}, {"state": "resolved"}, {"sort": "due"}):
        r = await http.get("/v1/tickets", params=params, headers=auth(admin))
        assert r.status_code == 400, (params, r.text)
        detail = r.json()["detail"]
        assert r.json()["code"] == "invalid_parameter"
        assert "^" not in detail and "[0-9" not in detail and "{8}" not in detail, detail
        assert next(iter(params)) in detail
    # An admin key that acts for nobody has no "me".
    r = await http.get("/v1/tickets", params={"assignee": "me"}, headers=auth(admin))
    assert r.status_code == 400 and "agent" in r.json()["detail"], r.text
    # A cursor serves the order it came from.
    for i in range(3):
        await _open(http, admin, subject=f"Cursor {i}")
    first = (await http.get("/v1/tickets", params={"limit": 1},
                            headers=auth(admin))).json()
    r = await http.get("/v1/tickets", params={"limit": 1, "sort": "sla_due",
                                              "cursor": first["next_cursor"]},
                       headers=auth(admin))
    assert r.status_code == 400 and r.json()["code"] == "invalid_cursor", r.text


async def test_openapi_declares_the_inbox_parameters(http):
    spec = (await http.get("/openapi.json")).json()
    params = {p["name"]: p for p in spec["paths"]["/v1/tickets"]["get"]["parameters"]}
    sort = params["sort"]["schema"]
    assert sort.get("enum") == ["created", "sla_due"] and sort.get("default") == "created"
    # Optional parameters are declared without null: absent is not null.
    assert "me" in params["assignee"]["schema"]["pattern"]
    assert "mine" in params["group_id"]["schema"]["pattern"]
    states = params["state"]["schema"]["items"]["enum"]
    assert "active" in states and "solved" in states
