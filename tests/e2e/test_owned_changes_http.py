"""Changing and deleting macros and saved views over HTTP: ``If-Match`` (412 when
stale) and ``ETag``; a personal one by its owner or an admin only (another agent's is
a 404), a shared one by admins only (403); a bad change is a 422 and changes nothing;
each change and the deletion are events of the record's stream."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Owner, auth

KINDS = {
    "macros": ({"name": "Thanks", "text": "Thanks!"},
               {"text": "Thanks, {{requester.name}}!"}, {"text": "{{ticket.colour}}"},
               ["MacroCreated", "MacroChanged", "MacroChanged", "MacroDeleted"]),
    "views": ({"name": "Open", "filters": {"state": "open"}},
              {"filters": {"state": ["open", "pending"]}}, {"filters": {"nope": "x"}},
              ["ViewCreated", "ViewChanged", "ViewChanged", "ViewDeleted"]),
}


@pytest.mark.parametrize("kind", list(KINDS))
async def test_change_and_delete_by_owner_or_admin_with_if_match(http, tenant, owner: Owner,
                                                                 kind: str) -> None:
    new, change, bad, history = KINDS[kind]
    admin = tenant.admin_key
    ann = await owner.key(tenant.tenant_id, "agent",
                          agent_id=await owner.agent(tenant.tenant_id))
    bo = await owner.key(tenant.tenant_id, "agent",
                         agent_id=await owner.agent(tenant.tenant_id))

    async def call(key: Any, method: str, url: str, body: Any = None,
                   **headers: str) -> Any:
        return await http.request(method, url, json=body, headers=auth(key, **headers))

    made = await call(ann, "POST", f"/v1/{kind}", new)
    assert made.status_code == 201 and made.headers["ETag"] == '"1"', made.text
    url = f"/v1/{kind}/{made.json()['id']}"
    assert (await call(bo, "PATCH", url, change)).status_code == 404
    assert (await call(bo, "DELETE", url)).status_code == 404
    stale = await call(ann, "PATCH", url, change, **{"If-Match": '"7"'})
    assert stale.status_code == 412, stale.text
    refused = await call(ann, "PATCH", url, bad)
    assert refused.status_code == 422, refused.text
    assert refused.json()["errors"][0]["loc"][:2] == ["body", next(iter(bad))]
    changed = await call(ann, "PATCH", url, change, **{"If-Match": '"1"'})
    assert changed.status_code == 200 and changed.headers["ETag"] == '"2"', changed.text
    part = next(iter(change))
    assert changed.json()[part] == change[part]
    got = await call(ann, "GET", url)
    assert got.json() == changed.json() and got.headers["ETag"] == '"2"'
    # An admin may change an agent's personal one; an agent may not change a shared one.
    by_admin = await call(admin, "PATCH", url, {"name": "Renamed"})
    assert by_admin.status_code == 200 and by_admin.headers["ETag"] == '"3"'
    shared = await call(admin, "POST", f"/v1/{kind}", new | {"shared": True})
    forbidden = await call(ann, "PATCH", f"/v1/{kind}/{shared.json()['id']}", change)
    assert forbidden.status_code == 403, forbidden.text

    assert (await call(ann, "DELETE", url, **{"If-Match": '"2"'})).status_code == 412
    gone = await call(ann, "DELETE", url, **{"If-Match": '"3"'})
    assert gone.status_code == 200 and gone.json()["name"] == "Renamed", gone.text
    assert (await call(ann, "GET", url)).status_code == 404
    assert (await call(ann, "DELETE", url)).status_code == 404
    listed = (await call(ann, "GET", f"/v1/{kind}")).json()["data"]
    assert made.json()["id"] not in [r["id"] for r in listed]
    events = await call(admin, "GET", f"/v1/events?stream_id={made.json()['id']}")
    assert [e["type"] for e in events.json()["data"]] == history
