"""Who may call what: the one authorization table of the API.

Every route and the live feed name their operation here (``METHOD /path/{template}``,
``WS`` for the WebSocket) with the one permission it needs, from the catalog of named
permissions (``PERMISSIONS``, each with what it allows). A role is a named set of
permissions (``ROLE_PERMISSIONS``); an API key issued with ``scopes`` holds only those,
a subset of its role's (api/http/auth.py checks both). ``api.http.auth.authorize``
reads this table for every request, ``publish`` writes it into the OpenAPI document
(``x-required-permission``, ``x-required-role`` and ``security`` on every operation,
the catalog as ``x-permissions``, the credentials as ``securitySchemes``), and
tests/unit/test_access.py compares it with the endpoint and permission tables of
docs/api.md. The ``/v1`` operations that take no bearer credential at all (signing
in: their credential is in the body or the refresh cookie) are in ``OPEN``, published
with an empty ``x-required-role``, a null ``x-required-permission`` and the cookie
they read, if any, as their ``security``. Routes outside ``/v1`` that answer without a
key (health, metrics, the OpenAPI document) are in neither and are published with
``security: []``.

A new operation needs one row here: ACCESS (its permission; the roles and the
credential follow from it) or OPEN (the credentials it checks itself); ``publish``
refuses a ``/v1`` operation in neither. Several operations share a permission only
when whoever may run one may run the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.http.cookies import PORTAL_REFRESH, STAFF_REFRESH
from domain.event_types import STREAM_KINDS
from domain.values import Role

ADMIN, AGENT, INTAKE = Role.ADMIN.value, Role.AGENT.value, Role.INTAKE.value
ANALYST, AUDITOR = Role.ANALYST.value, Role.AUDITOR.value
# A contact signed in to the customer portal. Not a role an API key can have: only a
# portal token (api/http/auth.py ``authenticate_customer``) carries it, and only the
# portal's routes accept such tokens.
CUSTOMER = "customer"
# An anonymous visitor of the embeddable widget, with a widget session's token (api/
# http/widget.py): it acts on the tickets that session opened, and only there.
WIDGET = "widget"

PERMISSIONS: Mapping[str, str] = {
    # Tickets and their threads.
    "ticket:create": "Open tickets (intake keys as the customer).",
    "ticket:list": "List and filter the tenant's tickets, now or as of a moment.",
    "ticket:read": "Read one ticket's current state with its SLA clocks.",
    "ticket:reply": "Add a message to a ticket: a public reply or an internal note "
                    "(intake keys post as the customer).",
    "note:read": "Read a ticket's thread, internal notes included.",
    "ticket:assign": "Assign a ticket to an agent or a group.",
    "ticket:prioritize": "Change a ticket's priority.",
    "ticket:transition": "Move a ticket between states (pending, solved, closed, ...).",
    "ticket:tag": "Add and remove a ticket's tags.",
    "ticket:merge": "Merge a ticket into another, closing it.",
    "ticket:split": "Move chosen messages of a ticket to a new ticket.",
    "ticket:link": "Link tickets (related, duplicate, problem and incident) and unlink them.",
    "ticket:follow": "Add and remove a ticket's followers (agents).",
    "ticket:rating-link": "Produce a solved ticket's single-use satisfaction rating link.",
    "ticket:cc": "Add and remove a ticket's customer CCs.",
    "ticket:set-fields": "Set a ticket's custom field values (intake keys only those open "
                         "to intake).",
    "file:upload": "Upload files to attach to messages.",
    "attachment:read": "Download the files of a ticket's messages.",
    "mail:read": "Read the mail a ticket sent and received, and its posts to Slack, with "
                 "their delivery state.",
    "search:read": "Search tickets and messages.",
    "changes:read": "Read the changes feed that mirroring clients follow.",
    "stream:read": "Follow the live event feed (WebSocket).",
    # People and teams.
    "agent:read": "List the tenant's agents and read one.",
    "agent:manage": "Add, invite, change and deactivate agents.",
    "group:read": "List groups (teams) and read one.",
    "group:write": "Create groups, rename them and change their members.",
    "contact:read": "List contacts and read one, with their tickets.",
    "contact:write": "Create, change and merge contacts.",
    "contact:portal-link": "Issue a contact's link to set a portal password.",
    "contact:erase": "Erase a contact's personal data.",
    "contact:export": "Export everything kept about a contact.",
    "organization:read": "List organizations and read one, with their tickets.",
    "organization:write": "Create and change organizations.",
    # Configuration.
    "ticket-field:read": "Read the definitions of custom ticket fields.",
    "ticket-field:write": "Define and change custom ticket fields.",
    "rule:read": "List rules and read one.",
    "rule:write": "Create, change and turn off rules.",
    "rule:explain": "Ask why each rule fired or not on a ticket.",
    "macro:read": "List the macros one may use and read one.",
    "macro:write": "Create, change and delete macros (shared ones: admins).",
    "macro:apply": "Apply a macro to a ticket.",
    "view:read": "List saved views, read one and the tickets it shows.",
    "view:write": "Save, change and delete views (shared ones: admins).",
    "calendar:read": "List business-hours calendars and read one.",
    "calendar:write": "Create, change and delete calendars.",
    "sla-policy:read": "List SLA policies and read one.",
    "sla-policy:write": "Create, change, reorder and delete SLA policies and move open "
                        "clocks onto one.",
    "mailbox:read": "List mailboxes, read one and its quarantine; list notification mail.",
    "mailbox:write": "Create, change and delete mailboxes; retry or drop quarantined mail.",
    "integration:read": "Read the tenant's Slack connection (never its secrets).",
    "integration:write": "Connect, change and disconnect the tenant's Slack channel.",
    "settings:read": "Read the tenant's settings.",
    "settings:write": "Change the tenant's settings.",
    "webhook:read": "Read the tenant's webhook configuration.",
    "webhook:write": "Configure the tenant's webhooks.",
    "api-key:read": "List the tenant's API keys.",
    "api-key:write": "Issue and revoke API keys (never with more than one holds).",
    # History, audit and analytics.
    "history:read": "Read a stream's past: its events and its state as of a version "
                    "or an instant.",
    "events:read": "Read the tenant's whole event log, configuration streams included.",
    "audit:verify": "Verify the tenant's hash chain.",
    "analytics:read": "Read the analytics: summary, volume, backlog and agents.",
    # Every caller.
    "self:read": "Ask who one is and what one may do.",
    "meta:read": "Read the catalog of error codes.",
    # Customers in the portal and visitors of the widget (no API key holds these).
    "portal:read": "A signed-in contact reads their own tickets, messages and files, "
                   "and follows their live feed.",
    "portal:write": "A signed-in contact opens tickets, replies and uploads files.",
    "widget:read": "A widget session reads the tickets it opened, with their public "
                   "messages and files.",
    "widget:write": "A widget session opens tickets, replies and uploads files.",
}
"""Every permission, named ``resource:action``, with what it allows."""

_EVERY_CALLER = frozenset({"self:read", "meta:read", "ticket-field:read"})
_WRITE_FOR_CUSTOMERS = frozenset({"ticket:create", "ticket:reply", "ticket:set-fields",
                                  "file:upload"})
_READ_STATE = frozenset({"ticket:read", "group:read", "contact:read", "organization:read",
                         "stream:read"})
_READ_PAST = frozenset({"history:read", "events:read", "audit:verify"})
_STAFF = (_EVERY_CALLER | _WRITE_FOR_CUSTOMERS | _READ_STATE | frozenset({
    "ticket:list", "note:read", "ticket:assign", "ticket:prioritize", "ticket:transition",
    "ticket:tag", "ticket:merge", "ticket:split", "ticket:link", "ticket:follow", "ticket:cc",
    "ticket:rating-link",
    "attachment:read", "mail:read", "search:read", "changes:read",
    "agent:read", "contact:write", "contact:portal-link", "rule:explain", "macro:read",
    "macro:write", "macro:apply", "view:read", "view:write"}))
_ANALYTICS = frozenset({"analytics:read"})
_CUSTOMERS_AND_VISITORS = frozenset({"portal:read", "portal:write", "widget:read",
                                     "widget:write"})

ROLE_PERMISSIONS: Mapping[str, frozenset[str]] = {
    # Everything but what only customers and widget visitors do.
    ADMIN: frozenset(PERMISSIONS) - _CUSTOMERS_AND_VISITORS,
    # A person working tickets: their threads, contacts, macros and views.
    AGENT: _STAFF,
    # Writes for customers (a form, a mail gateway) and reads nothing of anyone's.
    INTAKE: _EVERY_CALLER | _WRITE_FOR_CUSTOMERS,
    # Analytics only: no events, no threads, no feed.
    ANALYST: _EVERY_CALLER | _ANALYTICS,
    # Read-only: history, audit and current state; the feed carries every event.
    AUDITOR: _EVERY_CALLER | _READ_STATE | _READ_PAST,
    CUSTOMER: frozenset({"portal:read", "portal:write"}),
    WIDGET: frozenset({"widget:read", "widget:write"}),
}
"""Each role (and the portal's and widget's callers) as the set of permissions it holds."""

ACCESS: Mapping[str, str] = {
    "POST /v1/tickets": "ticket:create",
    "GET /v1/tickets": "ticket:list",
    # Auditors are read-only and may read a ticket's current state as well as its past.
    "GET /v1/tickets/{ticket_id}": "ticket:read",
    "POST /v1/tickets/{ticket_id}/messages": "ticket:reply",
    "GET /v1/tickets/{ticket_id}/messages": "note:read",
    "POST /v1/tickets/{ticket_id}/assignee": "ticket:assign",
    "POST /v1/tickets/{ticket_id}/priority": "ticket:prioritize",
    "POST /v1/tickets/{ticket_id}/state": "ticket:transition",
    "POST /v1/tickets/{ticket_id}/tags": "ticket:tag",
    # Intake keys may set the fields whose definition allows it (the domain checks).
    "POST /v1/tickets/{ticket_id}/fields": "ticket:set-fields",
    "POST /v1/tickets/{ticket_id}/merge": "ticket:merge",
    "POST /v1/tickets/{ticket_id}/split": "ticket:split",
    "POST /v1/tickets/{ticket_id}/links": "ticket:link",
    "POST /v1/tickets/{ticket_id}/followers": "ticket:follow",
    "POST /v1/tickets/{ticket_id}/satisfaction-link": "ticket:rating-link",
    "POST /v1/tickets/{ticket_id}/ccs": "ticket:cc",
    "GET /v1/tickets/{ticket_id}/history": "history:read",
    "GET /v1/tickets/{ticket_id}/as-of": "history:read",
    "GET /v1/contacts/{contact_id}/history": "history:read",
    "GET /v1/contacts/{contact_id}/as-of": "history:read",
    "GET /v1/organizations/{organization_id}/history": "history:read",
    "GET /v1/organizations/{organization_id}/as-of": "history:read",
    "GET /v1/events": "events:read",
    # Mirroring clients act as staff: the changes carry internal notes; intake keys
    # write for customers and read nothing.
    "GET /v1/changes": "changes:read",
    "GET /v1/search": "search:read",
    "GET /v1/audit/verify": "audit:verify",
    "GET /v1/analytics/summary": "analytics:read",
    "GET /v1/analytics/volume": "analytics:read",
    "GET /v1/analytics/backlog": "analytics:read",
    "GET /v1/analytics/agents": "analytics:read",
    # Agents may list their colleagues, to pick an assignee.
    "GET /v1/agents": "agent:read",
    "GET /v1/agents/{agent_id}": "agent:read",
    "POST /v1/agents": "agent:manage",
    "POST /v1/agents/invitations": "agent:manage",
    "PATCH /v1/agents/{agent_id}": "agent:manage",
    # Groups: admins manage them; staff read them (to route work), auditors too.
    "GET /v1/groups": "group:read",
    "GET /v1/groups/{group_id}": "group:read",
    "POST /v1/groups": "group:write",
    "PATCH /v1/groups/{group_id}": "group:write",
    "GET /v1/groups/{group_id}/history": "history:read",
    "GET /v1/groups/{group_id}/as-of": "history:read",
    "GET /v1/settings": "settings:read",
    "PUT /v1/settings": "settings:write",
    "GET /v1/api-keys": "api-key:read",
    "POST /v1/api-keys": "api-key:write",
    "DELETE /v1/api-keys/{key_id}": "api-key:write",
    "GET /v1/settings/oidc": "settings:read",
    "PUT /v1/settings/oidc": "settings:write",
    "DELETE /v1/settings/oidc": "settings:write",
    "GET /v1/webhooks": "webhook:read",
    "PUT /v1/webhooks": "webhook:write",
    # Field definitions are read by whoever fills them in, filters or groups by them.
    "GET /v1/ticket-fields": "ticket-field:read",
    "GET /v1/ticket-fields/{field_key}": "ticket-field:read",
    "POST /v1/ticket-fields": "ticket-field:write",
    "PATCH /v1/ticket-fields/{field_key}": "ticket-field:write",
    "GET /v1/ticket-fields/{field_key}/history": "history:read",
    "GET /v1/ticket-fields/{field_key}/as-of": "history:read",
    # Contacts: agents create and change them (intake only through a ticket); admins
    # manage organizations; auditors read both.
    "GET /v1/contacts": "contact:read",
    "POST /v1/contacts": "contact:write",
    "GET /v1/contacts/{contact_id}": "contact:read",
    "PATCH /v1/contacts/{contact_id}": "contact:write",
    "POST /v1/contacts/{contact_id}/merge": "contact:write",
    "POST /v1/contacts/{contact_id}/erase": "contact:erase",
    "GET /v1/contacts/{contact_id}/export": "contact:export",
    "GET /v1/contacts/{contact_id}/tickets": "contact:read",
    "GET /v1/organizations": "organization:read",
    "POST /v1/organizations": "organization:write",
    "GET /v1/organizations/{organization_id}": "organization:read",
    "PATCH /v1/organizations/{organization_id}": "organization:write",
    "GET /v1/organizations/{organization_id}/tickets": "organization:read",
    # The customer portal: staff produce a contact's password link; the contact works
    # on their own tickets only (row-level security scopes every statement to them).
    "POST /v1/contacts/{contact_id}/portal-link": "contact:portal-link",
    "GET /v1/portal/ticket-fields": "portal:read",
    "GET /v1/portal/tickets": "portal:read",
    "POST /v1/portal/tickets": "portal:write",
    "GET /v1/portal/tickets/{ticket_id}": "portal:read",
    "GET /v1/portal/tickets/{ticket_id}/messages": "portal:read",
    "POST /v1/portal/tickets/{ticket_id}/messages": "portal:write",
    "POST /v1/portal/tickets/{ticket_id}/rating": "portal:write",
    # The embeddable widget: a widget session opens tickets and follows those it opened
    # (row-level security scopes every statement to them).
    "POST /v1/widget/{tenant_id}/tickets": "widget:write",
    "GET /v1/widget/{tenant_id}/tickets/{ticket_id}": "widget:read",
    "GET /v1/widget/{tenant_id}/tickets/{ticket_id}/messages": "widget:read",
    "POST /v1/widget/{tenant_id}/tickets/{ticket_id}/messages": "widget:write",
    "POST /v1/widget/{tenant_id}/tickets/{ticket_id}/rating": "widget:write",
    # Files: whoever writes messages uploads them; whoever reads a ticket's messages
    # gets their files back (a customer or widget session only those of public
    # messages on its own tickets: row-level security).
    "POST /v1/uploads": "file:upload",
    "GET /v1/attachments/{attachment_id}": "attachment:read",
    "POST /v1/portal/uploads": "portal:write",
    "GET /v1/portal/attachments/{attachment_id}": "portal:read",
    "POST /v1/widget/{tenant_id}/uploads": "widget:write",
    "GET /v1/widget/{tenant_id}/attachments/{attachment_id}": "widget:read",
    # Rules act on every ticket: admins manage them; staff ask why one fired or not.
    "GET /v1/rules": "rule:read",
    "POST /v1/rules": "rule:write",
    "GET /v1/rules/{rule_id}": "rule:read",
    "PATCH /v1/rules/{rule_id}": "rule:write",
    "GET /v1/rules/{rule_id}/history": "history:read",
    "GET /v1/rules/{rule_id}/as-of": "history:read",
    "GET /v1/tickets/{ticket_id}/rules": "rule:explain",
    # Calendars and SLA policies judge every ticket: admins manage them.
    "GET /v1/calendars": "calendar:read",
    "POST /v1/calendars": "calendar:write",
    "GET /v1/calendars/{calendar_id}": "calendar:read",
    "PATCH /v1/calendars/{calendar_id}": "calendar:write",
    "DELETE /v1/calendars/{calendar_id}": "calendar:write",
    "GET /v1/calendars/{calendar_id}/history": "history:read",
    "GET /v1/calendars/{calendar_id}/as-of": "history:read",
    "GET /v1/sla-policies": "sla-policy:read",
    "POST /v1/sla-policies": "sla-policy:write",
    "GET /v1/sla-policies/{policy_id}": "sla-policy:read",
    "PATCH /v1/sla-policies/{policy_id}": "sla-policy:write",
    "DELETE /v1/sla-policies/{policy_id}": "sla-policy:write",
    "PUT /v1/sla-policies/order": "sla-policy:write",
    "POST /v1/sla-policies/{policy_id}/apply": "sla-policy:write",
    "GET /v1/sla-policies/{policy_id}/history": "history:read",
    "GET /v1/sla-policies/{policy_id}/as-of": "history:read",
    # Macros: staff make personal ones (admins shared ones) and apply what they see.
    "GET /v1/macros": "macro:read",
    "POST /v1/macros": "macro:write",
    "GET /v1/macros/{macro_id}": "macro:read",
    # Changed and deleted by their owner (a shared one by admins: the handler says).
    "PATCH /v1/macros/{macro_id}": "macro:write",
    "DELETE /v1/macros/{macro_id}": "macro:write",
    "POST /v1/tickets/{ticket_id}/macros/{macro_id}": "macro:apply",
    "GET /v1/macros/{macro_id}/history": "history:read",
    "GET /v1/macros/{macro_id}/as-of": "history:read",
    # Saved views: staff save personal ones (admins shared ones) and read what they see.
    "GET /v1/views": "view:read",
    "POST /v1/views": "view:write",
    "GET /v1/views/{view_id}": "view:read",
    "PATCH /v1/views/{view_id}": "view:write",
    "DELETE /v1/views/{view_id}": "view:write",
    "GET /v1/views/{view_id}/tickets": "view:read",
    "GET /v1/views/{view_id}/history": "history:read",
    "GET /v1/views/{view_id}/as-of": "history:read",
    # Mail: admins set up mailboxes and tend their quarantine; staff read a ticket's
    # mail. Inbound mail takes the mailbox's own secret (OPEN).
    "GET /v1/mailboxes": "mailbox:read",
    "POST /v1/mailboxes": "mailbox:write",
    "GET /v1/mailboxes/{mailbox_id}": "mailbox:read",
    "PATCH /v1/mailboxes/{mailbox_id}": "mailbox:write",
    "DELETE /v1/mailboxes/{mailbox_id}": "mailbox:write",
    "POST /v1/mailboxes/{mailbox_id}/test": "mailbox:write",
    "GET /v1/mailboxes/{mailbox_id}/quarantine": "mailbox:read",
    "POST /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}/retry": "mailbox:write",
    "DELETE /v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}": "mailbox:write",
    # A template preview renders the tenant's templates (its settings) and changes nothing.
    "POST /v1/mail-templates/preview": "settings:read",
    "GET /v1/mail-notifications": "mailbox:read",
    "GET /v1/tickets/{ticket_id}/mail": "mail:read",
    # Slack: admins connect the channel; staff read a ticket's posts to its thread (the
    # delivery state of their replies, as with mail). Slack's events are signed (OPEN).
    "GET /v1/integrations/slack": "integration:read",
    "PUT /v1/integrations/slack": "integration:write",
    "DELETE /v1/integrations/slack": "integration:write",
    "GET /v1/tickets/{ticket_id}/slack": "mail:read",
    # Every caller may ask who it is and what its role may run (the console does).
    "GET /v1/auth/me": "self:read",
    # The problem registry: every code the API answers with, for clients to map.
    "GET /v1/meta/error-codes": "meta:read",
    # The feed carries every event, message bodies and internal notes included:
    # analysts see analytics only, and intake keys write for customers.
    "WS /v1/stream": "stream:read",
    # The portal's live feed: a contact's own tickets' public events (api/feed/customer.py).
    "WS /v1/portal/stream": "portal:read",
}


BEARER = "bearer"
"""Security scheme: an API key (``hd_...``) or a staff access token (sign-in)."""
PORTAL_TOKEN = "portalToken"
WIDGET_TOKEN = "widgetToken"
STAFF_COOKIE = "refreshCookie"
PORTAL_COOKIE = "portalRefreshCookie"
MAILBOX_SECRET = "mailboxSecret"
SLACK_SIGNATURE = "slackSignature"

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
    SLACK_SIGNATURE: {"type": "apiKey", "in": "header", "name": "X-Slack-Signature",
                      "description": "Slack's `v0` signature of the request, made with the "
                                     "app's signing secret, with "
                                     "`X-Slack-Request-Timestamp` (docs/slack.md)."},
}
"""Every credential the API takes, as OpenAPI security schemes."""

OPEN: Mapping[str, tuple[tuple[str, ...], ...]] = {
    # Credentials in the body (e-mail and password, an invitation or link token).
    "POST /v1/auth/sign-in": (),
    "POST /v1/auth/invitations/accept": (),
    "POST /v1/portal/auth/sign-in": (),
    "POST /v1/portal/auth/password": (),
    "POST /v1/ratings/{token}": (),
    # The refresh cookie; signing out without one is a 204 that ends nothing.
    "POST /v1/auth/refresh": ((STAFF_COOKIE,),),
    "POST /v1/auth/sign-out": ((STAFF_COOKIE,), ()),
    "POST /v1/portal/auth/refresh": ((PORTAL_COOKIE,),),
    "POST /v1/portal/auth/sign-out": ((PORTAL_COOKIE,), (PORTAL_TOKEN,), ()),
    # Its credential is the request's Origin, checked against the tenant's widget_origins.
    "POST /v1/widget/{tenant_id}/sessions": (),
    # Its credential is the mailbox's inbound secret, checked against the mailbox's hash.
    "POST /v1/inbound/mail/{mailbox_id}": ((MAILBOX_SECRET,),),
    # Its credential is Slack's signature of the body, checked with the signing secret.
    "POST /v1/inbound/slack/{integration_id}": ((SLACK_SIGNATURE,),),
    "GET /v1/widget/{tenant_id}/brand": (),
    "GET /v1/widget/{tenant_id}/ticket-fields": (),
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


def permission_for(operation: str) -> str | None:
    """The permission ``operation`` needs (None: not in the table, refused for everyone)."""
    return ACCESS.get(operation)


def _holders(permission: str) -> frozenset[str]:
    return frozenset(role for role, held in ROLE_PERMISSIONS.items() if permission in held)


ROLES_HOLDING: Mapping[str, frozenset[str]] = {p: _holders(p) for p in PERMISSIONS}
"""Each permission with the roles that hold it (derived from ``ROLE_PERMISSIONS``)."""


def credentials_for(operation: str) -> tuple[tuple[str, ...], ...]:
    """The alternatives of security schemes ``operation`` accepts (none: open)."""
    if operation in OPEN:
        return OPEN[operation]
    roles = roles_for(operation)
    if not roles:
        return ()
    if roles == {CUSTOMER}:
        return ((PORTAL_TOKEN,),)
    if roles == {WIDGET}:
        return ((WIDGET_TOKEN,),)
    if roles & {CUSTOMER, WIDGET}:
        raise ValueError(f"{operation}: one operation takes one kind of bearer token")
    return ((BEARER,),)


def roles_for(operation: str) -> frozenset[str]:
    """The roles that may run ``operation``: those holding its permission. An operation
    missing from the table is a programming error, refused for everyone rather than
    open to anyone."""
    permission = ACCESS.get(operation)
    return frozenset() if permission is None else ROLES_HOLDING[permission]


def permissions_of(role: str, scopes: Iterable[str] | None = None) -> frozenset[str]:
    """What a caller with ``role`` holds: the role's permissions, narrowed to ``scopes``
    when its key was issued with them (None: unscoped)."""
    held = ROLE_PERMISSIONS.get(role, frozenset())
    return held if scopes is None else held & frozenset(scopes)


def operations_of(permissions: frozenset[str]) -> list[str]:
    """The operations of the table that ``permissions`` allow, sorted."""
    return sorted(op for op, needed in ACCESS.items() if needed in permissions)


WHOLE_LOG = "GET /v1/events"
"""The operation whose permission reads every event of the tenant: ``event_types_for``
gives its holders every stream in the changes feed and the live feed too."""
TENANT_STREAMS = frozenset({"tenant", "rule", "macro", "view", "calendar", "sla_policy"})
"""Kinds of stream only readers of the whole log (``WHOLE_LOG``) get: the tenant
stream records API keys, agents, settings and webhooks (a webhook's URL may carry a
secret), which other roles do not read elsewhere either; rule, macro and view
streams are configuration (a personal macro or view is its agent's alone), and so
are calendar and SLA policy streams."""
_NOT_TENANT = frozenset(cls.TYPE for kind, classes in STREAM_KINDS.items()
                        if kind not in TENANT_STREAMS for cls in classes)


def event_types_for(permissions: frozenset[str]) -> frozenset[str] | None:
    """The event types a caller holding ``permissions`` may be sent by ``GET
    /v1/changes`` and by the live feed (None: every type, for a holder of the whole
    log's permission). The one rule both follow: what they withhold moves the reader's
    position past it (a page's ``next_after_seq``, the feed's ``withheld`` message), it
    is never sent."""
    return None if ACCESS[WHOLE_LOG] in permissions else _NOT_TENANT


def publish(document: dict[str, Any], *, protected_prefix: str = "/v1/") -> dict[str, Any]:
    """Mark every operation of an OpenAPI document with ``x-required-permission`` (the
    permission of this table it needs, null for an ``OPEN`` one), ``x-required-role``
    (the roles holding it, sorted, or none for an ``OPEN`` one) and ``security`` (the
    credentials it takes; ``[]`` for one that takes none); publish the catalog as
    ``x-permissions`` (each permission's description and roles) and declare every
    credential under ``components.securitySchemes``. An operation under
    ``protected_prefix`` in neither table is a programming error."""
    for path, item in document.get("paths", {}).items():
        for method, operation in item.items():
            name = f"{method.upper()} {path}"
            if name in ACCESS:
                operation["x-required-permission"] = ACCESS[name]
                operation["x-required-role"] = sorted(roles_for(name))
            elif name in OPEN:
                operation["x-required-permission"] = None
                operation["x-required-role"] = []
            elif path.startswith(protected_prefix):
                raise ValueError(f"{name} is in neither ACCESS nor OPEN")
            operation["security"] = [{scheme: [] for scheme in alternative}
                                     for alternative in credentials_for(name)]
    document["x-permissions"] = {
        name: {"description": description, "roles": sorted(ROLES_HOLDING[name])}
        for name, description in PERMISSIONS.items()}
    document.setdefault("components", {})["securitySchemes"] = dict(SECURITY_SCHEMES)
    return document


__all__ = ["ACCESS", "BEARER", "CUSTOMER", "OPEN", "PERMISSIONS", "PORTAL_COOKIE",
           "PORTAL_TOKEN", "ROLES_HOLDING", "ROLE_PERMISSIONS", "SECURITY_SCHEMES",
           "STAFF_COOKIE", "TENANT_STREAMS", "WHOLE_LOG", "WIDGET", "WIDGET_TOKEN",
           "credentials_for", "event_types_for", "operations_of", "permission_for",
           "permissions_of", "publish", "roles_for"]
