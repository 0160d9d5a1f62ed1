"""The OpenAPI document the app serves: FastAPI's, completed from the tables the
service itself runs on, so the document cannot say other than the code does.

- credentials: ``security`` on every operation and ``securitySchemes``, and
  ``x-required-permission`` and ``x-required-role`` (with the catalog as
  ``x-permissions``), from the authorization table (``api.http.access``);
- problems: one schema per status, one body per code, from the problem registry
  (``api.http.problem_docs``, ``api.http.problem_registry``);
- headers: those every route sends because of where it is and what it does
  (``api.http.answer_headers.declare_common``), beside those a route declares;
- parameters: an optional query, header or cookie parameter is absent, never null, so
  its schema is the value's alone;
- tags: every tag an operation has is listed, with its description; every operation
  has a description (its docstring, or one made from its summary and the table);
- tuples (``prefixItems``) say what their ``items`` are, as linters and generators ask.

The document is made once per app. ``docs/openapi.json`` is its committed copy
(``python -m api.cli.openapi`` writes it), held equal to it by tests/e2e/test_contract.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from api.http import access
from api.http.answer_headers import CATALOGUE, declare_common
from api.http.problem_docs import API_PREFIX, WRITE_METHODS, problem_schemas
from api.http.problems import PROBLEM_JSON

TAGS: dict[str, str] = {
    "tickets": "Tickets and the commands that change them",
    "messages": "Replies and internal notes on a ticket",
    "attachments": "Files: uploads, and downloads of the files attached to messages",
    "contacts": "The people who write in, their tickets, merging and erasure",
    "organizations": "Organizations that contacts belong to (by e-mail domain)",
    "agents": "Staff members and their invitations",
    "groups": "Groups of agents that tickets are routed to",
    "ticket fields": "Custom fields of tickets: their definitions",
    "search": "Full-text search over tickets and messages",
    "changes": "A mirroring client's feed of changes, in sequence",
    "audit": "Past states, histories, the event log and its verification",
    "analytics": "Read models of volume, backlog, SLA and agent activity",
    "settings": "The tenant's SLA targets, business hours, sweep and widget settings",
    "api-keys": "API keys of the tenant",
    "webhooks": "The tenant's webhook endpoint",
    "mail": "Mailboxes, inbound mail, the quarantine and a ticket's mail",
    "slack": "The Slack connection, Slack's Events API and a ticket's posts to its thread",
    "auth": "Staff sign-in, refresh and sign-out; who the caller is",
    "portal": "The customer portal: a contact's sign-in and own tickets",
    "widget": "The embeddable widget: anonymous visitors' sessions and tickets",
    "rules": "Rules that act on ticket events and on time, and why one fired or not",
    "sla": "Calendars and SLA policies: which targets a ticket's clocks run on",
    "macros": "Macros and canned replies, applied to a ticket in one command",
    "views": "Saved views: named filters of the ticket list",
    "meta": "What the API itself publishes: its problem codes",
    "health": "Liveness, readiness and metrics",
}
"""Every tag, with its description (tests/unit/test_access.py refuses an operation
without a tag, or with one missing here)."""


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` of an optional parameter: X (absent is not null)."""
    options = schema.get("anyOf")
    if not options:
        return schema
    kept = [o for o in options if o.get("type") != "null"]
    if len(kept) != 1:
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**kept[0], **rest}


def _is_problem(response: dict[str, Any]) -> bool:
    return PROBLEM_JSON in response.get("content", {})


def _close_tuples(node: Any) -> None:
    """A tuple's ``items``: its one item schema when all are alike, else none more."""
    if isinstance(node, dict):
        prefix = node.get("prefixItems")
        if prefix and "items" not in node:
            node["items"] = prefix[0] if all(p == prefix[0] for p in prefix) else False
        for value in node.values():
            _close_tuples(value)
    elif isinstance(node, list):
        for value in node:
            _close_tuples(value)


def _describe(name: str, operation: dict[str, Any]) -> None:
    if operation.get("description"):
        return
    roles = access.roles_for(name) if name in access.ACCESS else None
    who = ("Any caller." if roles is None and name not in access.OPEN
           else "Open: the credential is in the request itself." if not roles
           else "Roles: " + ", ".join(sorted(roles)) + ".")
    summary = operation.get("summary", name).rstrip(".")
    operation["description"] = f"{summary}. {who}"


def complete(document: dict[str, Any]) -> dict[str, Any]:
    """Complete FastAPI's document in place (see the module's docstring)."""
    access.publish(document, protected_prefix=API_PREFIX)
    document["servers"] = [{"url": "/", "description": "This server"}]
    statuses = {int(status) for item in document["paths"].values()
                for operation in item.values() for status in operation["responses"]
                if int(status) >= 400 and _is_problem(operation["responses"][status])}
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.update(problem_schemas(statuses))
    _close_tuples(schemas)
    used: set[str] = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            replayable = (path.startswith(API_PREFIX) and method.upper() in WRITE_METHODS
                          and name not in access.OPEN)
            declare_common(path, method, operation, api_prefix=API_PREFIX,
                           replayable=replayable)
            for parameter in operation.get("parameters", []):
                if not parameter.get("required"):
                    parameter["schema"] = _not_null(parameter["schema"])
            _describe(name, operation)
            used.update(operation.get("tags") or [])
    # A tag missing from TAGS is listed without a description (and refused by
    # tests/unit/test_access.py), rather than breaking the document.
    document["tags"] = [{"name": t, "description": d} for t, d in TAGS.items() if t in used]
    document["tags"] += [{"name": t} for t in sorted(used - TAGS.keys())]
    _share_headers(document)
    return document


def _share_headers(document: dict[str, Any]) -> None:
    """Each header declared the same way on many answers is declared once, under
    ``components.headers`` (``<Name>``, or ``<Name>-required`` where it is always
    sent), and referred to."""
    shared: dict[str, dict[str, Any]] = {}
    forms = {}
    for h in CATALOGUE:
        for required in (False, True):
            key = f"{h.name}-required" if required else h.name
            forms[key] = h.declared(required=required)
    for item in document["paths"].values():
        for operation in item.values():
            for response in operation.get("responses", {}).values():
                for name, header in list(response.get("headers", {}).items()):
                    key = f"{name}-required" if header.get("required") else name
                    if forms.get(key) == header:
                        shared[key] = header
                        response["headers"][name] = {"$ref": f"#/components/headers/{key}"}
    document["components"]["headers"] = dict(sorted(shared.items()))


def install(app: FastAPI) -> None:
    """Serve the completed document (made once) as the app's OpenAPI document."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = complete(build())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


__all__ = ["TAGS", "complete", "install"]
