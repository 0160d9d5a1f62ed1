"""syrupy snapshots of representative responses. (The OpenAPI document's is
``docs/openapi.json``, held to the served one by tests/e2e/test_contract.py.)

Ids, times and cursors are replaced by stable placeholders (numbered in order of
appearance, so "the same id twice" still shows) before snapshotting.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from domain.clock import ManualClock
from tests.e2e.conftest import NEW_TICKET, auth

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def normalise(value: Any, ids: dict[str, str] | None = None, *, times: bool = True) -> Any:
    """Placeholders for ids and cursors, and for times unless ``times`` is False (the
    test ran on a manual clock, so they are exact)."""
    ids = {} if ids is None else ids
    if isinstance(value, dict):
        return {k: ("<cursor>" if k == "next_cursor" and v else normalise(v, ids, times=times))
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, ids, times=times) for v in value]
    if isinstance(value, str):
        if times and _TIME.match(value):
            return "<time>"
        return _UUID.sub(lambda m: ids.setdefault(m.group(0), f"<id{len(ids) + 1}>"), value)
    return value


async def test_representative_responses(http, services, tenant, owner, snapshot):
    clock = ManualClock(datetime(2026, 6, 1, 9, 0, tzinfo=UTC))
    services.clock = clock  # fixed times: SLA budgets in the bodies are exact
    admin = tenant.admin_key
    intake = await owner.key(tenant.tenant_id, "intake")
    ids: dict[str, str] = {}
    created = await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(intake))
    tid = created.json()["id"]
    clock.advance(minutes=10)
    await http.post("/v1/tickets", json=NEW_TICKET | {"priority": "low"}, headers=auth(admin))
    clock.advance(minutes=10)
    reply = await http.post(f"/v1/tickets/{tid}/messages", json={"body": "On it."},
                            headers=auth(admin))
    pending = await http.post(f"/v1/tickets/{tid}/state", json={"state": "pending"},
                              headers=auth(admin))
    page = await http.get("/v1/tickets", params={"limit": 1}, headers=auth(admin))
    messages = await http.get(f"/v1/tickets/{tid}/messages", headers=auth(admin))
    illegal = await http.post(f"/v1/tickets/{tid}/state", json={"state": "closed"},
                              headers=auth(admin))
    unknown = await http.get("/v1/tickets", params={"order": "x"}, headers=auth(admin))
    responses = {
        "open": created, "reply": reply, "pending": pending, "page": page,
        "messages": messages, "illegal": illegal, "unknown_parameter": unknown,
    }
    shown = {
        name: {"status": r.status_code, "etag": r.headers.get("etag"),
               "content_type": r.headers["content-type"],
               "body": normalise(r.json(), ids, times=False)}
        for name, r in responses.items()
    }
    assert shown == snapshot
