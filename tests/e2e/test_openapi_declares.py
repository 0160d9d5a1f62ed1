"""The OpenAPI document declares every header a route honours and every status it can
answer, found out from what the service does rather than from how it is declared:

- a route honours ``Idempotency-Key`` when a second request with the same key is a
  replay (``Idempotent-Replayed: true``), and ``If-Match`` when a version it cannot
  be at is 412;
- it can answer 429 when a second request over a limit of one is refused;
- it can answer the statuses its endpoint (or a helper of its module) raises as a
  ``Problem``, and 413, 415 and 422 when it takes a body.
"""

from __future__ import annotations

import ast
import inspect
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from api.app import ROUTERS, create_app
from api.http.access import OPEN
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support import pg
from tests.support.contract import header_drift
from tests.support.customers import portal_headers, widget_headers
from tests.support.redis import RedisServer

WRITES = ("post", "put", "patch", "delete")
HOOK = {"url": "https://example.com/hooks", "secret": "s" * 16, "event_types": ["*"]}
MACRO = {"name": "Thanks", "shared": True, "text": "Thanks, {{requester.name}}!"}
RULE = {"name": "Tag it", "actions": [{"type": "add_tags", "value": ["x"]}]}
CALENDAR = {"name": "Office", "hours": {"timezone": "Europe/Berlin",
                                        "weekly": {"0": [["09:00", "17:00"]]}}}
DEFAULT_POLICY = {"name": "Default", "default": True, "targets": {"first_reply_ms": 3_600_000}}
BODIES: dict[str, Callable[[], Any]] = {
    "POST /v1/tickets": lambda: NEW_TICKET,
    "POST /v1/tickets/{ticket_id}/messages": lambda: {"body": "On it."},
    "POST /v1/tickets/{ticket_id}/assignee": lambda: {"agent_id": None},
    "POST /v1/tickets/{ticket_id}/priority": lambda: {"priority": "low"},
    "POST /v1/tickets/{ticket_id}/state": lambda: {"state": "pending"},
    "POST /v1/tickets/{ticket_id}/tags": lambda: {"add": ["x"]},
    "POST /v1/tickets/{ticket_id}/merge": lambda: None,  # into: a ticket made for it
    "POST /v1/tickets/{ticket_id}/links": lambda: None,  # to: a ticket made for it
    "POST /v1/tickets/{ticket_id}/split": lambda: None,  # a message written for it
    "POST /v1/tickets/{ticket_id}/followers": lambda: {"remove": [str(uuid.uuid4())]},
    "POST /v1/tickets/{ticket_id}/satisfaction-link": lambda: None,
    "POST /v1/tickets/{ticket_id}/ccs": lambda: {"add": [{"email": "cc@example.com"}]},
    "POST /v1/agents": lambda: {"email": f"{uuid.uuid4()}@example.com", "name": "A"},
    "POST /v1/agents/invitations": lambda: {"email": f"{uuid.uuid4()}@example.com",
                                            "name": "A"},
    "PATCH /v1/agents/{agent_id}": lambda: {"name": "B"},
    "POST /v1/api-keys": lambda: {"name": "k", "role": "auditor"},
    "DELETE /v1/api-keys/{key_id}": lambda: None,
    "PUT /v1/settings": lambda: None,  # filled from GET /v1/settings
    "PUT /v1/webhooks": lambda: HOOK,
    "PUT /v1/settings/oidc": lambda: {"label": "Example ID", "issuer": "https://id.example.com",
                                      "client_id": "c", "client_secret": "s"},
    "DELETE /v1/settings/oidc": lambda: None,  # after the PUT: the provider it set
    "POST /v1/groups": lambda: {"name": f"g-{uuid.uuid4()}"},
    "PATCH /v1/groups/{group_id}": lambda: {"name": f"g-{uuid.uuid4()}"},
    "POST /v1/tickets/{ticket_id}/fields": lambda: {"fields": {"note": str(uuid.uuid4())}},
    "POST /v1/ticket-fields": lambda: {"key": f"f{uuid.uuid4().hex[:20]}", "title": "F",
                                       "type": "text"},
    "PATCH /v1/ticket-fields/{field_key}": lambda: {"title": "G"},
    "POST /v1/contacts": lambda: {"email": f"{uuid.uuid4()}@example.com", "name": "C"},
    "PATCH /v1/contacts/{contact_id}": lambda: {"name": "D"},
    "POST /v1/contacts/{contact_id}/merge": lambda: None,  # into: a contact made for it
    "POST /v1/contacts/{contact_id}/erase": lambda: {"reason": "asked to be forgotten"},
    "POST /v1/organizations": lambda: {"name": f"Org {uuid.uuid4()}"},
    "PATCH /v1/organizations/{organization_id}": lambda: {"name": f"Org {uuid.uuid4()}"},
    "POST /v1/contacts/{contact_id}/portal-link": lambda: None,
    "POST /v1/portal/tickets": lambda: {"subject": "Help", "body": "It broke"},
    "POST /v1/portal/tickets/{ticket_id}/messages": lambda: {"body": "More"},
    "POST /v1/portal/tickets/{ticket_id}/rating": lambda: {"rating": "good"},
    "POST /v1/widget/{tenant_id}/tickets": lambda: {"subject": "Help", "body": "It broke"},
    "POST /v1/widget/{tenant_id}/tickets/{ticket_id}/messages": lambda: {"body": "More"},
    "POST /v1/widget/{tenant_id}/tickets/{ticket_id}/rating": lambda: {"rating": "bad"},
    # Uploads: the body is the file (JSON will do), its name in ?name= (``_request``).
    "POST /v1/uploads": lambda: {"a": "file"},
    "POST /v1/portal/uploads": lambda: {"a": "file"},
    "POST /v1/widget/{tenant_id}/uploads": lambda: {"a": "file"},
    "POST /v1/rules": lambda: RULE,
    "PATCH /v1/rules/{rule_id}": lambda: {"name": f"r-{uuid.uuid4()}"},
    "POST /v1/macros": lambda: MACRO,
    "POST /v1/calendars": lambda: CALENDAR,
    "PATCH /v1/calendars/{calendar_id}": lambda: {"name": f"c-{uuid.uuid4()}"},
    "POST /v1/sla-policies": lambda: {"name": "Urgent", "targets": {"first_reply_ms": 60_000},
                                      "conditions": [{"field": "priority", "op": "is",
                                                      "value": "urgent"}]},
    "PATCH /v1/sla-policies/{policy_id}": lambda: {"name": f"p-{uuid.uuid4()}"},
    "POST /v1/sla-policies/{policy_id}/apply": lambda: None,
    "DELETE /v1/sla-policies/{policy_id}": lambda: None,
    "PUT /v1/sla-policies/order": lambda: None,  # the tenant's policies, read (_request)
    "DELETE /v1/calendars/{calendar_id}": lambda: None,
    "POST /v1/views": lambda: {"name": "Open", "shared": True, "filters": {"state": "open"}},
    "PATCH /v1/macros/{macro_id}": lambda: {"name": f"m-{uuid.uuid4()}"},
    "DELETE /v1/macros/{macro_id}": lambda: None,
    "PATCH /v1/views/{view_id}": lambda: {"name": f"v-{uuid.uuid4()}"},
    "DELETE /v1/views/{view_id}": lambda: None,
    "POST /v1/tickets/{ticket_id}/macros/{macro_id}": lambda: None,
    "POST /v1/mailboxes": lambda: {"address": f"s{uuid.uuid4().hex[:12]}@acme.test"},
    "PATCH /v1/mailboxes/{mailbox_id}": lambda: {"name": f"m-{uuid.uuid4()}"},
    "DELETE /v1/mailboxes/{mailbox_id}": lambda: None,
    "POST /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}/retry": lambda: None,
    "DELETE /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}": lambda: None,
    "PUT /v1/integrations/slack": lambda: {"channel_id": "C0HELPDESK",
                                           "bot_token": "xoxb-1-2-token",
                                           "signing_secret": "a" * 32},
    "DELETE /v1/integrations/slack": lambda: None,  # after the PUT: the connection it made
    "POST /v1/mail-templates/preview": lambda: {"kind": "acknowledgement"},
    "POST /v1/mailboxes/{mailbox_id}/test": lambda: None,
}
"""A request body each side-effecting operation accepts."""


@pytest.fixture
async def client(db: pg.TestDatabase) -> AsyncIterator[httpx.AsyncClient]:
    settings = app_settings(db, idempotency_secret="x" * 32,
                            webhook_allow_private_addresses=True)
    async with asgi_client(create_app(settings)) as http:
        yield http


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, ops in document["paths"].items()
            for method, op in ops.items()]


def _headers(op: dict[str, Any]) -> set[str]:
    return {p["name"].lower() for p in op.get("parameters", []) if p["in"] == "header"}


async def _request(http: httpx.AsyncClient, h: dict[str, str], method: str, path: str,
                   extra: dict[str, str], staff: dict[str, str] | None = None
                   ) -> httpx.Response:
    """One fresh request of the operation: new resources for its path ids."""
    url = path
    if "{ticket_id}" in url and path.startswith("/v1/portal/"):
        ticket = (await http.post("/v1/portal/tickets", headers=h,
                                  json=BODIES["POST /v1/portal/tickets"]())).json()
        url = url.replace("{ticket_id}", ticket["id"])
    if "{ticket_id}" in url and path.startswith("/v1/widget/"):
        tickets = url.split("/tickets/")[0] + "/tickets"
        ticket = (await http.post(tickets, headers=h,
                                  json=BODIES["POST /v1/widget/{tenant_id}/tickets"]())).json()
        url = url.replace("{ticket_id}", ticket["id"])
    if "{ticket_id}" in url:
        ticket = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()
        url = url.replace("{ticket_id}", ticket["id"])
    if path.endswith(("/rating", "/satisfaction-link")):  # only a solved ticket is rated
        rated = url.split("/tickets/")[1].split("/")[0]
        solved = await http.post(f"/v1/tickets/{rated}/state",
                                 json={"state": "solved"}, headers=staff or h)
        assert solved.status_code == 200, solved.text
    if "{agent_id}" in url:
        agent = (await http.post("/v1/agents", headers=h, json=BODIES["POST /v1/agents"]()))
        url = url.replace("{agent_id}", agent.json()["id"])
    if "{macro_id}" in url:
        macro = await http.post("/v1/macros", headers=h, json=MACRO)
        url = url.replace("{macro_id}", macro.json()["id"])
    if "{view_id}" in url:
        view = await http.post("/v1/views", headers=h, json=BODIES["POST /v1/views"]())
        url = url.replace("{view_id}", view.json()["id"])
    if "sla-policies" in url:  # the tenant's first policy is its default (422 once made)
        await http.post("/v1/sla-policies", headers=h, json=DEFAULT_POLICY)
    if "{policy_id}" in url:
        policy = await http.post("/v1/sla-policies", headers=h,
                                 json=BODIES["POST /v1/sla-policies"]())
        url = url.replace("{policy_id}", policy.json()["id"])
    if "{calendar_id}" in url:
        calendar = await http.post("/v1/calendars", headers=h, json=CALENDAR)
        url = url.replace("{calendar_id}", calendar.json()["id"])
    if "{rule_id}" in url:
        rule = await http.post("/v1/rules", headers=h, json=RULE)
        url = url.replace("{rule_id}", rule.json()["id"])
    if "{group_id}" in url:
        group = await http.post("/v1/groups", headers=h, json=BODIES["POST /v1/groups"]())
        url = url.replace("{group_id}", group.json()["id"])
    if "{key_id}" in url:
        key = await http.post("/v1/api-keys", json={"name": "r", "role": "intake"}, headers=h)
        url = url.replace("{key_id}", key.json()["id"])
    if "{mailbox_id}" in url:
        box = (await http.post("/v1/mailboxes", headers=h,
                               json=BODIES["POST /v1/mailboxes"]())).json()
        url = url.replace("{mailbox_id}", box["id"])
        if "{quarantined_id}" in url:  # a mail it cannot parse, kept in its quarantine
            kept = (await http.post(box["inbound_url"], content=b"not a mail", headers={
                "Authorization": f"Bearer {box['inbound_secret']}",
                "Content-Type": "message/rfc822"})).json()
            url = url.replace("{quarantined_id}", kept["mail_id"])
    if "{field_key}" in url:
        field = await http.post("/v1/ticket-fields", json=BODIES["POST /v1/ticket-fields"](),
                                headers=h)
        url = url.replace("{field_key}", field.json()["key"])
    if path.endswith("/fields"):  # the text field its body sets, once per tenant
        await http.post("/v1/ticket-fields", json={"key": "note", "title": "Note",
                                                   "type": "text"}, headers=h)
    for name, collection in (("contact_id", "contacts"), ("organization_id", "organizations")):
        if "{" + name + "}" in url:
            made = await http.post(f"/v1/{collection}", headers=h,
                                   json=BODIES[f"POST /v1/{collection}"]())
            url = url.replace("{" + name + "}", made.json()["id"])
    template = path.replace(path.split("/")[3], "{tenant_id}") if path.startswith(
        "/v1/widget/") else path
    body = BODIES[f"{method.upper()} {template}"]()
    if path.endswith("/merge") and path.startswith("/v1/contacts/"):
        into = await http.post("/v1/contacts", headers=h, json=BODIES["POST /v1/contacts"]())
        body = {"into": into.json()["id"]}
    if path.endswith(("/tickets/{ticket_id}/merge", "/tickets/{ticket_id}/links")):
        other = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()["id"]
        body = {"into": other} if path.endswith("/merge") else {"kind": "related",
                                                                "ticket_id": other}
    if path.endswith("/tickets/{ticket_id}/split"):
        split = url.split("/tickets/")[1].split("/")[0]
        said = await http.post(f"/v1/tickets/{split}/messages", json={"body": "to move"},
                               headers=h)
        body = {"message_ids": [said.json()["message"]["id"]]}
    if path == "/v1/settings":
        body = (await http.get("/v1/settings", headers=h)).json()
    if path == "/v1/sla-policies/order":
        listed = (await http.get("/v1/sla-policies", headers=h)).json()["data"]
        body = {"policies": [{"id": p["id"], "version": p["version"]}
                             for p in sorted(listed, key=lambda p: p["default"])]}
    if path.endswith("/uploads"):
        url += "?name=notes.json"
    return await http.request(method.upper(), url, json=body, headers=h | extra)


async def test_every_side_effecting_route_declares_the_headers_it_honours(client, tenant):
    http, h = client, auth(tenant.admin_key)
    document = (await http.get("/openapi.json")).json()
    writes = [(m, p, op) for m, p, op in _operations(document)
              if m in WRITES and f"{m.upper()} {p}" not in OPEN]
    assert {f"{m.upper()} {p}" for m, p, _ in writes} == set(BODIES)
    customer = await portal_headers(http, h)
    tenant_id, visitor = await widget_headers(http, h)
    for method, template, op in writes:
        path = template.replace("{tenant_id}", tenant_id)
        h = {"customer": customer, "widget": visitor}.get(
            "".join(op["x-required-role"]), auth(tenant.admin_key))
        # Idempotency-Key: the same key twice, and the second answer is the first's.
        url_key = {"Idempotency-Key": f"k-{uuid.uuid4()}"}
        first = await _request(http, h, method, path, url_key, auth(tenant.admin_key))
        assert first.status_code < 300, (method, path, first.text)
        again = await http.request(method.upper(), first.request.url, content=first.request.content,
                                   headers=h | url_key | {"content-type": "application/json"})
        assert again.headers.get("idempotent-replayed") == "true", (method, path, again.text)
        for answer in (first, again):
            drift = header_drift(document, method, template, answer.status_code,
                                 answer.headers)
            assert not drift, drift
        assert again.content == first.content
        assert "idempotency-key" in _headers(op), f"{method} {path} honours Idempotency-Key"
        # If-Match: a version nothing is at.
        stale = await _request(http, h, method, path, {"If-Match": '"999999"'},
                               auth(tenant.admin_key))
        honours = stale.status_code == 412
        assert ("if-match" in _headers(op)) == honours, (method, path, stale.status_code)
        assert ("412" in op["responses"]) == honours, (method, path)
    for method, path, op in _operations(document):
        if method not in WRITES or f"{method.upper()} {path}" in OPEN:
            # Signing in is never replayed: its answers are fresh credentials.
            assert not {"idempotency-key", "if-match"} & _headers(op), (method, path)


@pytest.mark.slow  # starts a redis-server
async def test_every_v1_route_documents_429_with_its_headers(
        db: pg.TestDatabase, redis_server: RedisServer, tenant):
    # Redis's own timeouts generous: on a loaded machine a call past the 0.1 s default
    # fails open (by design) and lets the second request through.
    # The made-up keys all fail authentication from one address: that address's gate
    # for failed authentications (rate_limit_per_address) set out of reach, so each
    # first request is the key's own and only the per-key limit answers the second.
    settings = app_settings(db, redis_url=redis_server.url, rate_limit_per_key=1,
                            rate_limit_per_address=1_000_000,
                            redis_socket_timeout=5.0, redis_connect_timeout=5.0)
    async with asgi_client(create_app(settings)) as http:
        document = (await http.get("/openapi.json")).json()
        checked = 0
        for method, path, op in _operations(document):
            if not path.startswith("/v1/"):
                continue
            # A made-up key of its own: one request allowed, the next one refused.
            h = {"Authorization": f"Bearer hd_{uuid.uuid4().hex}"}
            url = path.replace("{", "").replace("}", "")
            first = await http.request(method.upper(), url, headers=h)
            refused = await http.request(method.upper(), url, headers=h)
            assert refused.status_code == 429, (method, path, first.status_code,
                                                 dict(first.headers), refused.text)
            documented = op["responses"].get("429")
            assert documented, f"{method} {path} can answer 429"
            assert {"Retry-After", "RateLimit-Policy", "RateLimit"} <= set(
                documented.get("headers", {})), (method, path)
            checked += 1
        assert checked >= 25


def _raised_statuses(route: APIRoute) -> set[int]:
    """Statuses of ``Problem(<literal>, ...)`` in the endpoint and in the functions of
    its module that it calls, directly or through one another."""
    module = inspect.getmodule(route.endpoint)
    assert module is not None
    tree = ast.parse(inspect.getsource(module))
    functions = {f.name: f for f in ast.walk(tree)
                 if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)}
    seen, todo, statuses = set(), [route.endpoint.__name__], set()
    while todo:
        name = todo.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        for node in ast.walk(functions[name]):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                todo.append(node.func.id)
                if node.func.id == "Problem" and isinstance(node.args[0], ast.Constant):
                    statuses.add(int(node.args[0].value))
    return statuses


async def test_every_route_documents_what_it_raises_and_what_its_body_can_cause(http):
    document = (await http.get("/openapi.json")).json()
    checked = 0
    for route in (r for router in ROUTERS for r in router.routes):
        if not isinstance(route, APIRoute) or not route.path.startswith("/v1/"):
            continue
        for method in route.methods:
            op = document["paths"][route.path][method.lower()]
            expected = _raised_statuses(route) | {400, 401, 403, 500, 503}
            if route.body_field is not None:
                expected |= {413, 415, 422}
            missing = expected - {int(s) for s in op["responses"] if s.isdigit()}
            assert not missing, f"{method} {route.path} does not document {sorted(missing)}"
            checked += 1
    assert checked >= 25
