"""Saved views over HTTP: a view's pages equal the ad-hoc list's with the same filters,
page for page; the list's own checks refuse a bad filter (422 naming it); a personal
view is another agent's 404; views of one tenant are not another's."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.conftest import NEW_TICKET, Owner, auth


async def _pages(http: httpx.AsyncClient, key: Any, url: str, sep: str) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        r = await http.get(url + (f"{sep}cursor={cursor}" if cursor else ""),
                           headers=auth(key))
        assert r.status_code == 200, r.text
        pages.append([t["id"] for t in r.json()["data"]])
        assert "total" not in r.json()
        cursor = r.json()["next_cursor"]
        if cursor is None:
            return pages


async def test_a_view_lists_page_for_page_what_the_list_does(http, tenant, owner: Owner):
    admin = tenant.admin_key
    agent_id = await owner.agent(tenant.tenant_id)
    agent = await owner.key(tenant.tenant_id, "agent", agent_id=agent_id)
    for i in range(23):
        body = NEW_TICKET | {"priority": ["high", "low", "urgent"][i % 3],
                             "tags": ["vip"] if i % 2 else []}
        assert (await http.post("/v1/tickets", json=body, headers=auth(admin))).status_code == 201
    filters = {"priority": ["high", "urgent"], "tag": "vip", "state": ["open"]}
    r = await http.post("/v1/views", json={"name": "Hot VIPs", "shared": True,
                                            "filters": filters}, headers=auth(admin))
    assert r.status_code == 201, r.text
    view = r.json()
    query = "priority=high&priority=urgent&tag=vip&state=open&limit=3"
    ad_hoc = await _pages(http, agent, f"/v1/tickets?{query}", "&")
    saved = await _pages(http, agent, f"/v1/views/{view['id']}/tickets?limit=3", "&")
    assert saved == ad_hoc and len(ad_hoc) > 2 and sum(map(len, ad_hoc)) == 7

    listed = (await http.get("/v1/views", headers=auth(agent))).json()["data"]
    assert [v["id"] for v in listed] == [view["id"]]


async def test_bad_filters_and_personal_views(http, tenant, owner: Owner, make_tenant):
    ann_id, bo_id = await owner.agent(tenant.tenant_id), await owner.agent(tenant.tenant_id)
    ann = await owner.key(tenant.tenant_id, "agent", agent_id=ann_id)
    bo = await owner.key(tenant.tenant_id, "agent", agent_id=bo_id)
    for filters, name in (({"colour": "red"}, "colour"), ({"priority": "huge"}, "priority"),
                          ({"cursor": "x"}, "cursor"), ({"fields.nope": "1"}, "fields.nope")):
        r = await http.post("/v1/views", json={"name": "Bad", "filters": filters},
                            headers=auth(ann))
        assert r.status_code == 422, (filters, r.text)
        assert r.json()["errors"][0]["loc"] == ["body", "filters", name], r.json()
    r = await http.post("/v1/views", json={"name": "Shared", "shared": True},
                        headers=auth(ann))
    assert r.status_code == 403
    mine = (await http.post("/v1/views", json={"name": "Mine", "filters": {
        "assignee": str(ann_id)}}, headers=auth(ann))).json()
    assert mine["owner_id"] == str(ann_id)
    assert (await http.get(f"/v1/views/{mine['id']}", headers=auth(bo))).status_code == 404
    assert (await http.get(f"/v1/views/{mine['id']}/tickets",
                           headers=auth(bo))).status_code == 404
    assert (await http.get("/v1/views", headers=auth(bo))).json()["data"] == []
    other = await make_tenant("Other")
    assert (await http.get(f"/v1/views/{mine['id']}",
                           headers=auth(other.admin_key))).status_code == 404
    assert (await http.get(f"/v1/views/{mine['id']}/tickets",
                           headers=auth(ann))).status_code == 200
