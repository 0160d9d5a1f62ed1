"""Who may call what: the one authorization table of the API.

Every route and the live feed name their operation here (``METHOD /path/{template}``,
``WS`` for the WebSocket) with the roles that may run it; ``api.http.auth.authorize``
reads this table for every request, and tests/unit/test_access.py compares it with the
"who" column of the design's endpoint table. Routes that answer without a key
(health, metrics, the OpenAPI document) are not in it.
"""

from __future__ import annotations

from collections.abc import Mapping

from domain.values import Role

ADMIN, AGENT, INTAKE = Role.ADMIN.value, Role.AGENT.value, Role.INTAKE.value
ANALYST, AUDITOR = Role.ANALYST.value, Role.AUDITOR.value

_STAFF = frozenset({AGENT, ADMIN})
_WRITERS = _STAFF | {INTAKE}
_ADMIN = frozenset({ADMIN})
_AUDIT = frozenset({AUDITOR, ADMIN})
_ANALYTICS = frozenset({ANALYST, ADMIN})
_EVERYONE = frozenset(r.value for r in Role)

ACCESS: Mapping[str, frozenset[str]] = {
    "POST /v1/tickets": _WRITERS,
    "GET /v1/tickets": _STAFF,
    # Auditors are read-only and may read a ticket's current state as well as its past.
    "GET /v1/tickets/{ticket_id}": _STAFF | {AUDITOR},
    "POST /v1/tickets/{ticket_id}/messages": _WRITERS,
    "GET /v1/tickets/{ticket_id}/messages": _STAFF,
    "POST /v1/tickets/{ticket_id}/assignee": _STAFF,
    "POST /v1/tickets/{ticket_id}/priority": _STAFF,
    "POST /v1/tickets/{ticket_id}/state": _STAFF,
    "POST /v1/tickets/{ticket_id}/tags": _STAFF,
    "GET /v1/tickets/{ticket_id}/history": _AUDIT,
    "GET /v1/tickets/{ticket_id}/as-of": _AUDIT,
    "GET /v1/events": _AUDIT,
    # Mirroring clients act as staff: the changes carry internal notes; intake keys
    # write for customers and read nothing.
    "GET /v1/changes": _STAFF,
    "GET /v1/search": _STAFF,
    "GET /v1/audit/verify": _AUDIT,
    "GET /v1/analytics/summary": _ANALYTICS,
    "GET /v1/analytics/volume": _ANALYTICS,
    "GET /v1/analytics/backlog": _ANALYTICS,
    "GET /v1/analytics/agents": _ANALYTICS,
    # Agents may list their colleagues, to pick an assignee.
    "GET /v1/agents": _STAFF,
    "GET /v1/agents/{agent_id}": _STAFF,
    "POST /v1/agents": _ADMIN,
    "PATCH /v1/agents/{agent_id}": _ADMIN,
    "GET /v1/settings": _ADMIN,
    "PUT /v1/settings": _ADMIN,
    "GET /v1/api-keys": _ADMIN,
    "POST /v1/api-keys": _ADMIN,
    "DELETE /v1/api-keys/{key_id}": _ADMIN,
    "GET /v1/webhooks": _ADMIN,
    "PUT /v1/webhooks": _ADMIN,
    # Every caller may ask who it is and what its role may run (the console does).
    "GET /v1/auth/me": _EVERYONE,
    # The feed carries every event, message bodies and internal notes included:
    # analysts see analytics only, and intake keys write for customers.
    "WS /v1/stream": frozenset({AGENT, ADMIN, AUDITOR}),
}


def roles_for(operation: str) -> frozenset[str]:
    """The roles that may run ``operation``; an operation missing from the table is a
    programming error, refused for everyone rather than open to anyone."""
    return ACCESS.get(operation, frozenset())


__all__ = ["ACCESS", "roles_for"]
