"""The history and as-of of macros and saved views, as of other streams
(api/routes/audit.py): every event in version order with its actor, paged; the
document the API showed at each version or instant, its ETag that version; a deleted
one as it was; personal ones too, for auditors and admins only; a stream of another
kind, or of another tenant, is a 404."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from tests.e2e.conftest import Owner, auth


async def _history(http: httpx.AsyncClient, key: Any, url: str) -> list[dict]:
    """Every event, one per page, following the cursors."""
    events, cursor = [], None
    while True:
        r = await http.get(url, params={"limit": 1, **({"cursor": cursor} if cursor else {})},
                           headers=auth(key))
        assert r.status_code == 200, r.text
        assert r.headers["Read-From"] == "primary"
        page = r.json()
        assert len(page["data"]) <= 1
        events += page["data"]
        cursor = page["next_cursor"]
        if cursor is None:
            return events


async def test_macros_and_views_have_their_history_and_their_past(http, tenant, owner: Owner,
                                                                  make_tenant):
    t = tenant.tenant_id
    ann_id = await owner.agent(t)
    ann = await owner.key(t, "agent", agent_id=ann_id)
    auditor = await owner.key(t, "auditor")
    admin = tenant.admin_key

    # Ann's personal macro: made, changed, deleted, each answer the document then.
    made = await http.post("/v1/macros", headers=auth(ann), json={
        "name": "Thanks", "text": "Thanks, {{requester.name}}!",
        "actions": [{"type": "set_priority", "value": "low"}]})
    assert made.status_code == 201, made.text
    macro = made.json()
    changed = await http.patch(f"/v1/macros/{macro['id']}", json={"name": "Thank you"},
                               headers=auth(ann, **{"If-Match": '"1"'}))
    assert changed.status_code == 200, changed.text
    deleted = await http.delete(f"/v1/macros/{macro['id']}",
                                headers=auth(ann, **{"If-Match": '"2"'}))
    assert deleted.status_code == 200, deleted.text
    # A shared view, made and changed by an admin.
    view = (await http.post("/v1/views", headers=auth(admin), json={
        "name": "Urgent", "shared": True, "filters": {"priority": "urgent"}})).json()
    view_v2 = await http.patch(f"/v1/views/{view['id']}", json={
        "filters": {"priority": ["urgent", "high"], "state": "open"}},
        headers=auth(admin, **{"If-Match": '"1"'}))
    assert view_v2.status_code == 200, view_v2.text

    by_ann = {"kind": "api_key", "id": str(ann.id)}  # the key the database stamped
    for key in (auditor, admin):
        events = await _history(http, key, f"/v1/macros/{macro['id']}/history")
        assert [(e["version"], e["type"], e["actor"]) for e in events] == [
            (1, "MacroCreated", by_ann), (2, "MacroChanged", by_ann),
            (3, "MacroDeleted", by_ann)]
        assert {e["stream_id"] for e in events} == {macro["id"]}
        assert events[0]["seq"] < events[1]["seq"] < events[2]["seq"]
        for version, then in ((1, macro), (2, changed.json())):
            r = await http.get(f"/v1/macros/{macro['id']}/as-of", params={"version": version},
                               headers=auth(key))
            assert r.status_code == 200, r.text
            assert r.json() == then and r.headers["ETag"] == f'"{version}"'
        gone = await http.get(f"/v1/macros/{macro['id']}/as-of", params={"version": 3},
                              headers=auth(key))
        assert gone.json() == {**changed.json(), "version": 3,
                               "updated_at": gone.json()["updated_at"]}
        # An instant: the version recorded last at or before it.
        at = await http.get(f"/v1/macros/{macro['id']}/as-of",
                            params={"at": events[1]["recorded_at"]}, headers=auth(key))
        assert at.json()["version"] == 2 and at.json()["name"] == "Thank you"

        views = await _history(http, key, f"/v1/views/{view['id']}/history")
        assert [(e["version"], e["type"]) for e in views] == [(1, "ViewCreated"),
                                                             (2, "ViewChanged")]
        for version, then in ((1, view), (2, view_v2.json())):
            r = await http.get(f"/v1/views/{view['id']}/as-of", params={"version": version},
                               headers=auth(key))
            assert r.json() == then and r.headers["ETag"] == f'"{version}"'

    # What is not there, or not a macro (a view's stream), is a 404; bad asks are 400.
    for url, params in ((f"/v1/macros/{macro['id']}/as-of", {"version": 4}),
                        (f"/v1/macros/{macro['id']}/as-of", {"at": "2000-01-01T00:00:00Z"}),
                        (f"/v1/macros/{view['id']}/as-of", {"version": 1}),
                        (f"/v1/macros/{view['id']}/history", {}),
                        (f"/v1/views/{macro['id']}/history", {}),
                        (f"/v1/views/{uuid.uuid4()}/as-of", {"version": 1})):
        r = await http.get(url, params=params, headers=auth(auditor))
        assert r.status_code == 404 and r.json()["code"] == "not_found", (url, r.text)
    for params in ({}, {"version": 1, "at": "2026-01-01T00:00:00Z"}, {"version": 0}):
        r = await http.get(f"/v1/views/{view['id']}/as-of", params=params,
                           headers=auth(auditor))
        assert r.status_code == 400, (params, r.text)
        assert r.headers["Content-Type"].startswith("application/problem+json")
    bad = await http.get(f"/v1/views/{view['id']}/history", params={"cursor": "x"},
                         headers=auth(auditor))
    assert bad.status_code == 400, bad.text

    # Auditors and admins only: not even the macro's owner reads its history.
    for url in (f"/v1/macros/{macro['id']}/history", f"/v1/views/{view['id']}/as-of?version=1"):
        assert (await http.get(url, headers=auth(ann))).status_code == 403
    # Another tenant's auditor finds neither stream (row-level security).
    other = await make_tenant("Other")
    other_auditor = await owner.key(other.tenant_id, "auditor")
    for url in (f"/v1/macros/{macro['id']}/history", f"/v1/views/{view['id']}/as-of?version=1"):
        assert (await http.get(url, headers=auth(other_auditor))).status_code == 404
