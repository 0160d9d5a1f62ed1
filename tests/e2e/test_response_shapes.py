"""Every answer body is its documented response model, byte for byte.

Bodies are not validated per request: ticket lists and gets pass stored documents
through, and messages, agents, keys and analytics answers are written straight from
their rows. Their shape is checked here instead. Each body validates against its
model, and serialising the validated model again gives the very same bytes, so
nothing is missing, extra, reordered or formatted another way.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from pydantic import BaseModel

from api.routes.agents import AgentOut, AgentPage
from api.routes.api_keys import ApiKeyOut, ApiKeyPage, IssuedKeyOut
from api.schemas import analytics
from api.schemas.tickets import MessagePage, MessagePosted, TicketOut, TicketPage
from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, auth


def same_bytes(model: type[BaseModel], response: httpx.Response) -> dict[str, Any]:
    """Assert the body is ``model``'s own serialisation of itself; return it parsed."""
    assert response.status_code < 300, response.text
    validated = model.model_validate_json(response.content)
    assert response.content == orjson.dumps(validated.model_dump(mode="json", by_alias=True)), model
    parsed: dict[str, Any] = orjson.loads(response.content)
    return parsed


async def test_ticket_message_agent_and_key_answers_are_their_models(http, tenant, owner, pool):
    admin = auth(tenant.admin_key)
    agent_id = await owner.agent(tenant.tenant_id)
    intake = auth(await owner.key(tenant.tenant_id, "intake"))
    opened = same_bytes(TicketOut, await http.post("/v1/tickets", json=NEW_TICKET,
                                                   headers=intake))
    tid = opened["id"]
    same_bytes(TicketOut, await http.post("/v1/tickets", json=NEW_TICKET | {
        "subject": "Ünïcode ✓ \"quoted\"", "tags": ["a", "b"]}, headers=admin))
    same_bytes(MessagePosted, await http.post(f"/v1/tickets/{tid}/messages",
                                              json={"body": "On it."}, headers=admin))
    same_bytes(MessagePosted, await http.post(
        f"/v1/tickets/{tid}/messages", json={"body": "note", "visibility": "internal"},
        headers=admin))
    same_bytes(TicketOut, await http.post(f"/v1/tickets/{tid}/assignee",
                                          json={"agent_id": str(agent_id)}, headers=admin))
    same_bytes(TicketOut, await http.post(f"/v1/tickets/{tid}/priority",
                                          json={"priority": "urgent"}, headers=admin))
    same_bytes(TicketOut, await http.post(f"/v1/tickets/{tid}/tags",
                                          json={"add": ["x"]}, headers=admin))
    same_bytes(TicketOut, await http.post(f"/v1/tickets/{tid}/state",
                                          json={"state": "solved"}, headers=admin))
    page = same_bytes(TicketPage, await http.get("/v1/tickets", params={"limit": 1},
                                                 headers=admin))
    assert page["next_cursor"]
    same_bytes(TicketPage, await http.get("/v1/tickets", headers=admin))
    got = await http.get(f"/v1/tickets/{tid}", headers=admin)
    assert same_bytes(TicketOut, got)["version"] == int(got.headers["etag"].strip('"'))
    same_bytes(MessagePage, await http.get(f"/v1/tickets/{tid}/messages", headers=admin))
    same_bytes(TicketOut, await http.get(f"/v1/tickets/{tid}/as-of", params={"version": 2},
                                         headers=admin))

    same_bytes(AgentPage, await http.get("/v1/agents", headers=admin))
    same_bytes(AgentOut, await http.get(f"/v1/agents/{agent_id}", headers=admin))
    added = same_bytes(AgentOut, await http.post(
        "/v1/agents", json={"email": "new@example.com", "name": "New"}, headers=admin))
    same_bytes(AgentOut, await http.patch(f"/v1/agents/{added['id']}",
                                          json={"name": "Renamed"}, headers=admin))
    issued = same_bytes(IssuedKeyOut, await http.post(
        "/v1/api-keys", json={"name": "k", "role": "auditor"}, headers=admin))
    same_bytes(ApiKeyPage, await http.get("/v1/api-keys", headers=admin))
    same_bytes(ApiKeyOut, await http.delete(f"/v1/api-keys/{issued['id']}", headers=admin))

    analyst = auth(await owner.key(tenant.tenant_id, "analyst"))
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await projector.drain()
    for path, model in (("summary", analytics.Summary), ("volume", analytics.Volume),
                        ("backlog", analytics.Backlog), ("agents", analytics.Agents)):
        body = same_bytes(model, await http.get(f"/v1/analytics/{path}", headers=analyst))
        assert body["as_of_seq"] > 0, path
    for group in ("priority", "source", "assignee", "group", "organization", "day"):
        same_bytes(analytics.Summary, await http.get(
            "/v1/analytics/summary", params={"group_by": group}, headers=analyst))
