"""Who may call what: the one authorization table of the API.

Every route and the live feed name their operation here (``METHOD /path/{template}``,
``WS`` for the WebSocket) with the roles that may run it; ``api.http.auth.authorize``
reads this table for every request, ``publish`` writes it into the OpenAPI document
(``x-required-role`` and ``security`` on every operation, the credentials as
``securitySchemes``), and tests/unit/test_access.py compares it with the "who" column
of the design's endpoint table. The ``/v1`` operations that take no bearer credential
at all (signing in: their credential is in the body or the refresh cookie) are in
``OPEN``, published with an empty ``x-required-role`` and the cookie they read, if any,
as their ``security``. Routes outside ``/v1`` that answer without a key (health,
metrics, the OpenAPI document) are in neither and are published with ``security: []``.

A new operation needs one row here: ACCESS (its roles; the credential follows from
them) or OPEN (the credentials it checks itself); ``publish`` refuses a ``/v1``
operation in neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.http.cookies import PORTAL_REFRESH, STAFF_REFRESH
from domain.events import STREAM_KINDS
from domain.values import Role

ADMIN, AGENT, INTAKE = Role.ADMIN.value, Role.AGENT.value, Role.INTAKE.value
ANALYST, AUDITOR = Role.ANALYST.value, Role.AUDITOR.value

_STAFF = frozenset({AGENT, ADMIN})
_WRITERS = _STAFF | {INTAKE}
_ADMIN = frozenset({ADMIN})
_AUDIT = frozenset({AUDITOR, ADMIN})
_ANALYTICS = frozenset({ANALYST, ADMIN})
_EVERYONE = frozenset(r.value for r in Role)
# A contact signed in to the customer portal. Not a role an API key can have: only a
# portal token (api/http/auth.py ``authenticate_customer``) carries it, and only the
# portal's routes accept such tokens.
CUSTOMER = "customer"
_CUSTOMER = frozenset({CUSTOMER})
# An anonymous visitor of the embeddable widget, with a widget session's token (api/
# http/widget.py): it acts on the tickets that session opened, and only there.
WIDGET = "widget"
_WIDGET = frozenset({WIDGET})

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
    # Intake keys may set the fields whose definition allows it (the domain checks).
    "POST /v1/tickets/{ticket_id}/fields": _WRITERS,
    "GET /v1/tickets/{ticket_id}/history": _AUDIT,
    "GET /v1/tickets/{ticket_id}/as-of": _AUDIT,
    "GET /v1/contacts/{contact_id}/history": _AUDIT,
    "GET /v1/contacts/{contact_id}/as-of": _AUDIT,
    "GET /v1/organizations/{organization_id}/history": _AUDIT,
    "GET /v1/organizations/{organization_id}/as-of": _AUDIT,
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
    "POST /v1/agents/invitations": _ADMIN,
    "PATCH /v1/agents/{agent_id}": _ADMIN,
    # Groups: admins manage them; staff read them (to route work), auditors too.
    "GET /v1/groups": _STAFF | {AUDITOR},
    "GET /v1/groups/{group_id}": _STAFF | {AUDITOR},
    "POST /v1/groups": _ADMIN,
    "PATCH /v1/groups/{group_id}": _ADMIN,
    "GET /v1/groups/{group_id}/history": _AUDIT,
    "GET /v1/groups/{group_id}/as-of": _AUDIT,
    "GET /v1/settings": _ADMIN,
    "PUT /v1/settings": _ADMIN,
    "GET /v1/api-keys": _ADMIN,
    "POST /v1/api-keys": _ADMIN,
    "DELETE /v1/api-keys/{key_id}": _ADMIN,
    "GET /v1/settings/oidc": _ADMIN,
    "PUT /v1/settings/oidc": _ADMIN,
    "DELETE /v1/settings/oidc": _ADMIN,
    "GET /v1/webhooks": _ADMIN,
    "PUT /v1/webhooks": _ADMIN,
    # Field definitions are read by whoever fills them in, filters or groups by them.
    "GET /v1/ticket-fields": _EVERYONE,
    "GET /v1/ticket-fields/{field_key}": _EVERYONE,
    "POST /v1/ticket-fields": _ADMIN,
    "PATCH /v1/ticket-fields/{field_key}": _ADMIN,
    "GET /v1/ticket-fields/{field_key}/history": _AUDIT,
    "GET /v1/ticket-fields/{field_key}/as-of": _AUDIT,
    # Contacts: agents create and change them (intake only through a ticket); admins
    # manage organizations; auditors read both.
    "GET /v1/contacts": _STAFF | {AUDITOR},
    "POST /v1/contacts": _STAFF,
    "GET /v1/contacts/{contact_id}": _STAFF | {AUDITOR},
    "PATCH /v1/contacts/{contact_id}": _STAFF,
    "POST /v1/contacts/{contact_id}/merge": _STAFF,
    "POST /v1/contacts/{contact_id}/erase": _ADMIN,
    "GET /v1/contacts/{contact_id}/export": _ADMIN,
    "GET /v1/contacts/{contact_id}/tickets": _STAFF | {AUDITOR},
    "GET /v1/organizations": _STAFF | {AUDITOR},
    "POST /v1/organizations": _ADMIN,
    "GET /v1/organizations/{organization_id}": _STAFF | {AUDITOR},
    "PATCH /v1/organizations/{organization_id}": _ADMIN,
    "GET /v1/organizations/{organization_id}/tickets": _STAFF | {AUDITOR},
    # The customer portal: staff produce a contact's password link; the contact works
    # on their own tickets only (row-level security scopes every statement to them).
    "POST /v1/contacts/{contact_id}/portal-link": _STAFF,
    "GET /v1/portal/tickets": _CUSTOMER,
    "POST /v1/portal/tickets": _CUSTOMER,
    "GET /v1/portal/tickets/{ticket_id}": _CUSTOMER,
    "GET /v1/portal/tickets/{ticket_id}/messages": _CUSTOMER,
    "POST /v1/portal/tickets/{ticket_id}/messages": _CUSTOMER,
    # The embeddable widget: a widget session opens tickets and follows those it opened
    # (row-level security scopes every statement to them).
    "POST /v1/widget/{tenant_id}/tickets": _WIDGET,
    "GET /v1/widget/{tenant_id}/tickets/{ticket_id}": _WIDGET,
    "GET /v1/widget/{tenant_id}/tickets/{ticket_id}/messages": _WIDGET,
    "POST /v1/widget/{tenant_id}/tickets/{ticket_id}/messages": _WIDGET,
    # Files: whoever writes messages uploads them; whoever reads a ticket's messages
    # gets their files back (a customer or widget session only those of public
    # messages on its own tickets: row-level security).
    "POST /v1/uploads": _WRITERS,
    "GET /v1/attachments/{attachment_id}": _STAFF,
    "POST /v1/portal/uploads": _CUSTOMER,
    "GET /v1/portal/attachments/{attachment_id}": _CUSTOMER,
    "POST /v1/widget/{tenant_id}/uploads": _WIDGET,
    "GET /v1/widget/{tenant_id}/attachments/{attachment_id}": _WIDGET,
    # Rules act on every ticket: admins manage them; staff ask why one fired or not.
    "GET /v1/rules": _ADMIN,
    "POST /v1/rules": _ADMIN,
    "GET /v1/rules/{rule_id}": _ADMIN,
    "PATCH /v1/rules/{rule_id}": _ADMIN,
    "GET /v1/rules/{rule_id}/history": _AUDIT,
    "GET /v1/rules/{rule_id}/as-of": _AUDIT,
    "GET /v1/tickets/{ticket_id}/rules": _STAFF,
    # Calendars and SLA policies judge every ticket: admins manage them.
    "GET /v1/calendars": _ADMIN,
    "POST /v1/calendars": _ADMIN,
    "GET /v1/calendars/{calendar_id}": _ADMIN,
    "PATCH /v1/calendars/{calendar_id}": _ADMIN,
    "GET /v1/calendars/{calendar_id}/history": _AUDIT,
    "GET /v1/calendars/{calendar_id}/as-of": _AUDIT,
    "GET /v1/sla-policies": _ADMIN,
    "POST /v1/sla-policies": _ADMIN,
    "GET /v1/sla-policies/{policy_id}": _ADMIN,
    "PATCH /v1/sla-policies/{policy_id}": _ADMIN,
    "POST /v1/sla-policies/{policy_id}/apply": _ADMIN,
    "GET /v1/sla-policies/{policy_id}/history": _AUDIT,
    "GET /v1/sla-policies/{policy_id}/as-of": _AUDIT,
    # Macros: staff make personal ones (admins shared ones) and apply what they see.
    "GET /v1/macros": _STAFF,
    "POST /v1/macros": _STAFF,
    "GET /v1/macros/{macro_id}": _STAFF,
    # Changed and deleted by their owner (a shared one by admins: the handler says).
    "PATCH /v1/macros/{macro_id}": _STAFF,
    "DELETE /v1/macros/{macro_id}": _STAFF,
    "POST /v1/tickets/{ticket_id}/macros/{macro_id}": _STAFF,
    "GET /v1/macros/{macro_id}/history": _AUDIT,
    "GET /v1/macros/{macro_id}/as-of": _AUDIT,
    # Saved views: staff save personal ones (admins shared ones) and read what they see.
    "GET /v1/views": _STAFF,
    "POST /v1/views": _STAFF,
    "GET /v1/views/{view_id}": _STAFF,
    "PATCH /v1/views/{view_id}": _STAFF,
    "DELETE /v1/views/{view_id}": _STAFF,
    "GET /v1/views/{view_id}/tickets": _STAFF,
    "GET /v1/views/{view_id}/history": _AUDIT,
    "GET /v1/views/{view_id}/as-of": _AUDIT,
    # Mail: admins set up mailboxes and tend their quarantine; staff read a ticket's
    # mail. Inbound mail takes the mailbox's own secret (OPEN).
    "GET /v1/mailboxes": _ADMIN,
    "POST /v1/mailboxes": _ADMIN,
    "GET /v1/mailboxes/{mailbox_id}": _ADMIN,
    "PATCH /v1/mailboxes/{mailbox_id}": _ADMIN,
    "GET /v1/mailboxes/{mailbox_id}/quarantine": _ADMIN,
    "POST /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}/retry": _ADMIN,
    "DELETE /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}": _ADMIN,
    "GET /v1/tickets/{ticket_id}/mail": _STAFF,
    # Every caller may ask who it is and what its role may run (the console does).
    "GET /v1/auth/me": _EVERYONE,
    # The problem registry: every code the API answers with, for clients to map.
    "GET /v1/meta/error-codes": _EVERYONE,
    # The feed carries every event, message bodies and internal notes included:
    # analysts see analytics only, and intake keys write for customers.
    "WS /v1/stream": frozenset({AGENT, ADMIN, AUDITOR}),
    # The portal's live feed: a contact's own tickets' public events (api/feed/customer.py).
    "WS /v1/portal/stream": _CUSTOMER,
}


BEARER = "bearer"
"""Security scheme: an API key (``hd_...``) or a staff access token (sign-in)."""
PORTAL_TOKEN = "portalToken"
WIDGET_TOKEN = "widgetToken"
STAFF_COOKIE = "refreshCookie"
PORTAL_COOKIE = "portalRefreshCookie"
MAILBOX_SECRET = "mailboxSecret"

SECURITY_SCHEMES: Mapping[str, dict[str, Any]] = {
    BEARER: {"type": "http", "scheme": "bearer",
             "description": "An API key (`hd_...`, made by an admin or the operator's "
                            "CLI) or a staff access token from `POST /v1/auth/sign-in`; "
                            "the key's or the person's role decides what it may run "
                            "(`x-required-role`)."},
    PORTAL_TOKEN: {"type": "http", "scheme": "bearer",
                   "description": "A portal token from `POST /v1/portal/auth/sign-in`: a "
                                  "contact signed in to the customer portal."},
    WIDGET_TOKEN: {"type": "http", "scheme": "bearer",
                   "description": "A widget session's token from `POST /v1/widget/"
                                  "{tenant_id}/sessions`, sent with the page's `Origin`."},
    STAFF_COOKIE: {"type": "apiKey", "in": "cookie", "name": STAFF_REFRESH.name,
                   "description": "The staff refresh token, set by sign-in (httpOnly, "
                                  f"path `{STAFF_REFRESH.path}`)."},
    PORTAL_COOKIE: {"type": "apiKey", "in": "cookie", "name": PORTAL_REFRESH.name,
                    "description": "The portal refresh token, set by portal sign-in "
                                   f"(httpOnly, path `{PORTAL_REFRESH.path}`)."},
    MAILBOX_SECRET: {"type": "http", "scheme": "bearer",
                     "description": "A mailbox's inbound secret (`hdmail_...`), shown once "
                                    "when the mailbox is made: `POST /v1/mailboxes`."},
}
"""Every credential the API takes, as OpenAPI security schemes."""

OPEN: Mapping[str, tuple[tuple[str, ...], ...]] = {
    # Credentials in the body (e-mail and password, an invitation or link token).
    "POST /v1/auth/sign-in": (),
    "POST /v1/auth/invitations/accept": (),
    "POST /v1/portal/auth/sign-in": (),
    "POST /v1/portal/auth/password": (),
    # The refresh cookie; signing out without one is a 204 that ends nothing.
    "POST /v1/auth/refresh": ((STAFF_COOKIE,),),
    "POST /v1/auth/sign-out": ((STAFF_COOKIE,), ()),
    "POST /v1/portal/auth/refresh": ((PORTAL_COOKIE,),),
    "POST /v1/portal/auth/sign-out": ((PORTAL_COOKIE,), (PORTAL_TOKEN,), ()),
    # Its credential is the request's Origin, checked against the tenant's widget_origins.
    "POST /v1/widget/{tenant_id}/sessions": (),
    # Its credential is the mailbox's inbound secret, checked against the mailbox's hash.
    "POST /v1/inbound/mail/{mailbox_id}": ((MAILBOX_SECRET,),),
    "GET /v1/widget/{tenant_id}/brand": (),
    # Public: the portal's sign-in page is drawn in the tenant's name and colour.
    "GET /v1/portal/brand/{tenant}": (),
    # OpenID Connect sign-in: the provider's ID token is the credential, checked at the
    # callback (with the state cookie that the start set in the same browser).
    "GET /v1/auth/oidc/{tenant}": (),
    "GET /v1/auth/oidc/{tenant}/start": (),
    "GET /v1/auth/oidc/{tenant}/callback": (),
}
"""Operations that take no bearer credential: they check the one they are given. Each
maps to its alternatives of security schemes (an empty one: it may be called without)."""


def credentials_for(operation: str) -> tuple[tuple[str, ...], ...]:
    """The alternatives of security schemes ``operation`` accepts (none: open)."""
    if operation in OPEN:
        return OPEN[operation]
    roles = roles_for(operation)
    if not roles:
        return ()
    if roles == _CUSTOMER:
        return ((PORTAL_TOKEN,),)
    if roles == _WIDGET:
        return ((WIDGET_TOKEN,),)
    if roles & (_CUSTOMER | _WIDGET):
        raise ValueError(f"{operation}: one operation takes one kind of bearer token")
    return ((BEARER,),)


def roles_for(operation: str) -> frozenset[str]:
    """The roles that may run ``operation``; an operation missing from the table is a
    programming error, refused for everyone rather than open to anyone."""
    return ACCESS.get(operation, frozenset())


WHOLE_LOG = "GET /v1/events"
"""The operation whose roles read every event of the tenant: ``event_types_for``
gives them every stream in the changes feed and the live feed too."""
TENANT_STREAMS = frozenset({"tenant", "rule", "macro", "view", "calendar", "sla_policy"})
"""Kinds of stream only readers of the whole log (``WHOLE_LOG``) get: the tenant
stream records API keys, agents, settings and webhooks (a webhook's URL may carry a
secret), which other roles do not read elsewhere either; rule, macro and view
streams are configuration (a personal macro or view is its agent's alone), and so
are calendar and SLA policy streams."""
_NOT_TENANT = frozenset(cls.TYPE for kind, classes in STREAM_KINDS.items()
                        if kind not in TENANT_STREAMS for cls in classes)


def event_types_for(role: str) -> frozenset[str] | None:
    """The event types ``role`` may be sent by ``GET /v1/changes`` and by the live feed
    (None: every type). The one rule both follow: what they withhold moves the
    reader's position past it (a page's ``next_after_seq``, the feed's ``withheld``
    message), it is never sent."""
    return None if role in roles_for(WHOLE_LOG) else _NOT_TENANT


def publish(document: dict[str, Any], *, protected_prefix: str = "/v1/") -> dict[str, Any]:
    """Mark every operation of an OpenAPI document with ``x-required-role`` (the roles
    of this table that may run it, sorted, or none for an ``OPEN`` one) and
    ``security`` (the credentials it takes; ``[]`` for one that takes none), and
    declare every credential under ``components.securitySchemes``. An operation under
    ``protected_prefix`` in neither table is a programming error."""
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            if name in ACCESS:
                operation["x-required-role"] = sorted(ACCESS[name])
            elif name in OPEN:
                operation["x-required-role"] = []
            elif path.startswith(protected_prefix):
                raise ValueError(f"{name} is in neither ACCESS nor OPEN")
            operation["security"] = [{scheme: [] for scheme in alternative}
                                     for alternative in credentials_for(name)]
    document.setdefault("components", {})["securitySchemes"] = dict(SECURITY_SCHEMES)
    return document


__all__ = ["ACCESS", "BEARER", "CUSTOMER", "OPEN", "PORTAL_COOKIE", "PORTAL_TOKEN",
           "SECURITY_SCHEMES", "STAFF_COOKIE", "TENANT_STREAMS", "WHOLE_LOG", "WIDGET",
           "WIDGET_TOKEN", "credentials_for", "event_types_for", "publish", "roles_for"]
