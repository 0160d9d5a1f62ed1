"""The authorization table in code (api/http/access.py) against the documented one.

docs/api.md's endpoint table must match the code in both directions (every route is
documented, every documented role is what the service enforces). When the design
document the project started from is next to the repository, its table is checked
too, row by row, for the operations it names.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.routing import APIRoute, APIWebSocketRoute

from api.app import ROUTERS
from api.http.access import (
    ACCESS,
    BEARER,
    CUSTOMER,
    OPEN,
    PORTAL_TOKEN,
    SECURITY_SCHEMES,
    STAFF_COOKIE,
    WHOLE_LOG,
    WIDGET,
    WIDGET_TOKEN,
    credentials_for,
    event_types_for,
)
from domain.events import STREAM_KINDS, STREAM_TYPES

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "api.md"
PUBLIC = {"GET /health/live", "GET /health/ready", "GET /metrics"}
_ROW = re.compile(r"^\|\s*(`[^|]+)\|\s*([^|]+?)\s*\|")


def _normal(operation: str) -> str:
    """Path parameters named alike, so `{id}` in a document matches `{ticket_id}`."""
    return re.sub(r"\{[^}]+\}", "{}", operation)


def documented(text: str) -> dict[str, frozenset[str]]:
    """The operations and roles of the "Endpoints (v1)" table of a markdown text."""
    section = text.split("## Endpoints (v1)", 1)[1].split("\n## ", 1)[0]
    out: dict[str, frozenset[str]] = {}
    for line in section.splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        specs, who = match.groups()
        readers = frozenset()
        if "(agents may list)" in who:
            readers = frozenset({"agent"})
            who = who.replace("(agents may list)", "")
        roles = frozenset(r.strip() for r in who.split(",") if r.strip())
        previous = ""
        for spec in re.findall(r"`([^`]+)`", specs):
            if spec.startswith("/"):  # "/backlog" after "GET /v1/analytics/volume"
                methods = previous.split(" ")[0]
                path = previous.split(" ")[1].rsplit("/", 1)[0] + spec
            else:
                methods, path = spec.split(" ", 1)
            previous = f"{methods} {path}"
            for method in methods.split("/"):
                out[_normal(f"{method} {path}")] = roles | (readers if method == "GET" else
                                                            frozenset())
    return out


ANYONE = frozenset({"anyone"})
"""How the documented table names an operation that takes no bearer credential."""


def enforced() -> dict[str, frozenset[str]]:
    return {_normal(op): roles for op, roles in ACCESS.items()} | {
        _normal(op): ANYONE for op in OPEN}


def test_every_route_of_the_app_is_in_the_table_and_nothing_else() -> None:
    routes = set()
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute):
                routes |= {f"{m} {route.path}" for m in route.methods}
            elif isinstance(route, APIWebSocketRoute):
                routes.add(f"WS {route.path}")
    assert routes >= PUBLIC
    assert routes - PUBLIC == set(ACCESS) | set(OPEN)
    assert not set(ACCESS) & set(OPEN)


def test_the_documented_table_is_the_enforced_one() -> None:
    docs = documented(DOCS.read_text())
    assert len(docs) == len(ACCESS) + len(OPEN)
    assert docs == enforced()


def test_the_parser_reads_shorthand_rows() -> None:
    text = ("## Endpoints (v1)\n\n| method and path | who | what |\n|---|---|---|\n"
            "| `GET /v1/a/x`, `/y` | analyst, admin | . |\n"
            "| `GET/POST /v1/b`, `PATCH /v1/b/{id}` | admin (agents may list) | . |\n")
    assert documented(text) == {
        "GET /v1/a/x": {"analyst", "admin"}, "GET /v1/a/y": {"analyst", "admin"},
        "GET /v1/b": {"admin", "agent"}, "POST /v1/b": {"admin"},
        "PATCH /v1/b/{}": {"admin"},
    }


def test_the_openapi_document_publishes_the_table_on_every_operation() -> None:
    from api.app import create_app
    from api.config import ProcessSettings

    document = create_app(ProcessSettings(_env_file=None)).openapi()  # type: ignore[call-arg]
    published = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            if name in ACCESS or name in OPEN:
                published[name] = frozenset(operation["x-required-role"])
                assert operation["x-required-role"] == sorted(operation["x-required-role"])
            else:
                assert "x-required-role" not in operation, name
    assert published == {**{op: roles for op, roles in ACCESS.items() if not op.startswith("WS")},
                         **{op: frozenset() for op in OPEN}}


def test_the_changes_feed_and_the_live_feed_withhold_the_tenant_stream_by_one_rule() -> None:
    # Roles that read the whole log get every event; others all but the tenant stream's
    # and the configuration streams' (rules, macros, views, calendars, SLA policies).
    tenant_types = {cls.TYPE for kind in ("tenant", "rule", "macro", "view",
                                                 "calendar", "sla_policy")
                    for cls in STREAM_KINDS[kind]}
    for role in ACCESS[WHOLE_LOG]:
        assert event_types_for(role) is None, role
    readable = event_types_for("agent")
    assert readable is not None
    assert readable == set(STREAM_TYPES) - tenant_types
    assert "TicketOpened" in readable and "ApiKeyIssued" not in readable
    assert "RuleCreated" not in readable


def test_the_openapi_document_declares_every_operations_credentials() -> None:
    from api.app import create_app
    from api.config import ProcessSettings
    from api.http.openapi import TAGS

    document = create_app(ProcessSettings(_env_file=None)).openapi()  # type: ignore[call-arg]
    schemes = document["components"]["securitySchemes"]
    assert schemes == dict(SECURITY_SCHEMES)
    used: set[str] = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            security = operation["security"]
            alternatives = [tuple(sorted(a)) for a in security]
            assert alternatives == [tuple(sorted(a)) for a in credentials_for(name)], name
            used |= {scheme for a in security for scheme in a}
            roles = ACCESS.get(name, frozenset())
            if CUSTOMER in roles:
                assert security == [{PORTAL_TOKEN: []}], name
            elif WIDGET in roles:
                assert security == [{WIDGET_TOKEN: []}], name
            elif roles:
                assert security == [{BEARER: []}], name
            else:
                assert name in OPEN or not path.startswith("/v1/"), name
            assert operation["description"], name
            assert operation["tags"] and set(operation["tags"]) <= TAGS.keys(), name
    assert used == set(schemes)
    assert document["paths"]["/v1/auth/refresh"]["post"]["security"] == [{STAFF_COOKIE: []}]
    assert document["paths"]["/health/ready"]["get"]["security"] == []
