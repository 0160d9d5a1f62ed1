"""The authorization table in code (api/http/access.py) against the documented one.

docs/api.md's endpoint table must match the code in both directions (every route is
documented, every documented role and permission is what the service enforces), and
its permission catalog must be the code's. Roles became sets of permissions without
changing what any of them may run: tests/unit/present_powers.py keeps the table as it
was, operation by operation.
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
    PERMISSIONS,
    PORTAL_TOKEN,
    ROLE_PERMISSIONS,
    ROLES_HOLDING,
    SECURITY_SCHEMES,
    STAFF_COOKIE,
    WHOLE_LOG,
    WIDGET,
    WIDGET_TOKEN,
    credentials_for,
    event_types_for,
    permissions_of,
    roles_for,
)
from domain.event_types import STREAM_KINDS, STREAM_TYPES
from domain.values import Role
from tests.unit.present_powers import PRESENT_POWERS

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs" / "api.md"
PUBLIC = {"GET /health/live", "GET /health/ready", "GET /metrics"}
_ROW = re.compile(r"^\|\s*(`[^|]+)\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|")


def _normal(operation: str) -> str:
    """Path parameters named alike, so `{id}` in a document matches `{ticket_id}`."""
    return re.sub(r"\{[^}]+\}", "{}", operation)


def _rows(text: str) -> list[tuple[str, str, str]]:
    """The (specs, who, permission) cells of the "Endpoints (v1)" table."""
    section = text.split("## Endpoints (v1)", 1)[1].split("\n## ", 1)[0]
    return [match.groups() for line in section.splitlines()  # type: ignore[misc]
            if (match := _ROW.match(line)) is not None]


def _operations(specs: str) -> list[str]:
    """The operations a row's first cell names, in order (shorthand expanded)."""
    out = []
    previous = ""
    for spec in re.findall(r"`([^`]+)`", specs):
        if spec.startswith("/"):  # "/backlog" after "GET /v1/analytics/volume"
            methods = previous.split(" ")[0]
            path = previous.split(" ")[1].rsplit("/", 1)[0] + spec
        else:
            methods, path = spec.split(" ", 1)
        previous = f"{methods} {path}"
        out += [_normal(f"{method} {path}") for method in methods.split("/")]
    return out


def documented(text: str) -> dict[str, frozenset[str]]:
    """The operations and roles of the "Endpoints (v1)" table of a markdown text."""
    out: dict[str, frozenset[str]] = {}
    for specs, who, _permission in _rows(text):
        readers = frozenset()
        if "(agents may list)" in who:
            readers = frozenset({"agent"})
            who = who.replace("(agents may list)", "")
        roles = frozenset(r.strip() for r in who.split(",") if r.strip())
        for operation in _operations(specs):
            out[operation] = roles | (readers if operation.startswith("GET ") else
                                      frozenset())
    return out


def documented_permissions(text: str) -> dict[str, list[str]]:
    """Each row's operations (joined) and the permissions its third cell names."""
    return {" ; ".join(_operations(specs)): re.findall(r"`([^`]+)`", permission)
            for specs, _who, permission in _rows(text)}


def documented_catalog(text: str) -> dict[str, tuple[frozenset[str], str]]:
    """The "Permissions" table: each permission's roles and description."""
    section = text.split("## Permissions", 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        match = re.match(r"^\| `([^`]+)` \| ([^|]+?) \| (.+) \|$", line)
        if match is not None:
            name, who, description = match.groups()
            out[name] = (frozenset(r.strip() for r in who.split(",")), description)
    return out


ANYONE = frozenset({"anyone"})
"""How the documented table names an operation that takes no bearer credential."""


def enforced() -> dict[str, frozenset[str]]:
    return {_normal(op): roles_for(op) for op in ACCESS} | {
        _normal(op): ANYONE for op in OPEN}


def test_every_role_keeps_its_present_powers_operation_by_operation() -> None:
    # The table as it was before roles were sets of permissions, against what each
    # role's permission set lets it run now: the same, for every operation and role.
    assert set(ACCESS) == set(PRESENT_POWERS)
    for operation, before in PRESENT_POWERS.items():
        now = frozenset(role for role, held in ROLE_PERMISSIONS.items()
                        if ACCESS[operation] in held)
        assert now == before, operation
    assert set(ROLE_PERMISSIONS) == {r.value for r in Role} | {CUSTOMER, WIDGET}


def test_the_catalog_names_every_permission_once_and_each_is_needed() -> None:
    # Every operation needs a permission of the catalog; every permission of the
    # catalog is needed by some operation and held by some role; each is described.
    assert set(ACCESS.values()) == set(PERMISSIONS)
    assert all(ROLES_HOLDING[p] for p in PERMISSIONS)
    assert all(held <= set(PERMISSIONS) for held in ROLE_PERMISSIONS.values())
    assert all(re.fullmatch(r"[a-z-]+:[a-z-]+", p) and d.endswith(".")
               for p, d in PERMISSIONS.items())
    # A scope narrows a role, never widens it; no scopes: the role's.
    assert permissions_of("analyst", ["analytics:read", "ticket:read"]) == {"analytics:read"}
    assert permissions_of("agent") == ROLE_PERMISSIONS["agent"]
    assert permissions_of("nobody") == frozenset()


def test_the_documented_permissions_are_the_enforced_ones() -> None:
    text = DOCS.read_text()
    normal = {_normal(op): permission for op, permission in ACCESS.items()}
    rows = documented_permissions(text)
    for operations, named in rows.items():
        wanted: list[str] = []
        for op in operations.split(" ; "):
            if op in normal and normal[op] not in wanted:
                wanted.append(normal[op])
        assert named == wanted, operations
    catalog = documented_catalog(text)
    assert list(catalog) == list(PERMISSIONS)
    assert catalog == {p: (ROLES_HOLDING[p], d) for p, d in PERMISSIONS.items()}


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
    text = ("## Endpoints (v1)\n\n| method and path | who | permission | what |\n"
            "|---|---|---|---|\n"
            "| `GET /v1/a/x`, `/y` | analyst, admin | `a:read` | . |\n"
            "| `GET/POST /v1/b`, `PATCH /v1/b/{id}` | admin (agents may list) | `b:read`, "
            "`b:write` | . |\n")
    assert documented(text) == {
        "GET /v1/a/x": {"analyst", "admin"}, "GET /v1/a/y": {"analyst", "admin"},
        "GET /v1/b": {"admin", "agent"}, "POST /v1/b": {"admin"},
        "PATCH /v1/b/{}": {"admin"},
    }
    assert documented_permissions(text) == {
        "GET /v1/a/x ; GET /v1/a/y": ["a:read"],
        "GET /v1/b ; POST /v1/b ; PATCH /v1/b/{}": ["b:read", "b:write"]}


def test_the_openapi_document_publishes_the_table_on_every_operation() -> None:
    from api.app import create_app
    from api.config import ProcessSettings

    document = create_app(ProcessSettings(_env_file=None)).openapi()  # type: ignore[call-arg]
    published = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            if name in ACCESS or name in OPEN:
                published[name] = (frozenset(operation["x-required-role"]),
                                   operation["x-required-permission"])
                assert operation["x-required-role"] == sorted(operation["x-required-role"])
            else:
                assert "x-required-role" not in operation, name
                assert "x-required-permission" not in operation, name
    assert published == {
        **{op: (roles_for(op), permission) for op, permission in ACCESS.items()
           if not op.startswith("WS")},
        **{op: (frozenset(), None) for op in OPEN}}
    assert document["x-permissions"] == {
        p: {"description": d, "roles": sorted(ROLES_HOLDING[p])} for p, d in PERMISSIONS.items()}


def test_the_changes_feed_and_the_live_feed_withhold_the_tenant_stream_by_one_rule() -> None:
    # Roles that read the whole log get every event; others all but the tenant stream's
    # and the configuration streams' (rules, macros, views, calendars, SLA policies).
    tenant_types = {cls.TYPE for kind in ("tenant", "rule", "macro", "view",
                                                 "calendar", "sla_policy")
                    for cls in STREAM_KINDS[kind]}
    for role in roles_for(WHOLE_LOG):
        assert event_types_for(ROLE_PERMISSIONS[role]) is None, role
    # A key scoped away from the whole log reads what an agent reads, whatever its role.
    assert event_types_for(permissions_of("admin", ["changes:read"])) == \
        event_types_for(ROLE_PERMISSIONS["agent"])
    readable = event_types_for(ROLE_PERMISSIONS["agent"])
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
            roles = roles_for(name)
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
