"""Domain events: immutable, past-tense facts.

Each event names itself (``TYPE``) and its payload shape (``SCHEMA_VERSION``) and
carries ``at``, the business time it happened. Numbers are ints only: the store hashes
canonical JSON and floats have no canonical form.

This module holds the base class and the events of groups, contacts, organizations,
ticket fields and the tenant stream. The ticket's events are in domain/ticket/events.py,
and those of rules, macros, saved views, SLA calendars and policies in
domain/workflow_events.py; domain/event_types.py lists them all by type and by kind of
stream.

Where an aggregate's command asks for exactly what its event records (a new group, the
parts of an organization a change names, a contact's fields), the payload is declared
once beside its event (``New...``, ``...Changes``, ``...Parts``, ``ContactFields``; a
ticket field's is ``domain.fields.FieldSpec``) and both the command and the event are
made of it: the two cannot drift apart, and the event keeps its fields in the order it
always stored them (``at`` first, from ``Event``, then what names the thing, then the
payload's).
Events about one agent or one contact name it through ``AgentEvent`` or
``ContactEvent``.
"""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from pydantic import field_validator

from domain.fields import FieldOption, FieldSpec, RequiredOn
from domain.frozen import Frozen
from domain.ids import (
    AgentId,
    ApiKeyId,
    ContactId,
    GroupId,
    OrganizationId,
    TicketId,
)
from domain.values import (
    Actor,
    Role,
    UtcDatetime,
)


class Event(Frozen):
    """Base of every event."""

    TYPE: ClassVar[str]
    SCHEMA_VERSION: ClassVar[int] = 1
    OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset()
    """Fields left out of the stored payload while empty: added after events of the
    type were written, so a payload without them reads (and hashes) as before."""

    at: UtcDatetime


# --- group stream (a team of agents; the stream id is the group id) -----------------------


class NewGroup(Frozen):
    """A new group: what ``CreateGroup`` asks for and ``GroupCreated`` records."""

    group_id: GroupId
    name: str
    members: tuple[AgentId, ...] = ()


class GroupCreated(NewGroup, Event):
    TYPE = "GroupCreated"


class GroupRenamed(Event):
    TYPE = "GroupRenamed"

    name: str


class GroupMembersChanged(Event):
    """``members`` is the whole membership afterwards, sorted."""

    TYPE = "GroupMembersChanged"

    added: tuple[AgentId, ...]
    removed: tuple[AgentId, ...]
    members: tuple[AgentId, ...]


# --- contact and organization streams ----------------------------------------------------


class ContactEvent(Event):
    """An event about one contact, which it names first: a contact stream's first
    event, and the tenant stream's events of the contact's portal sign-in."""

    contact_id: ContactId


class ContactFields(Frozen):
    """What a contact holds that a caller sets: what ``CreateContact`` and
    ``UpdateContact`` give, ``ContactCreated`` records, and the contact's state holds."""

    email: str
    name: str | None = None
    phone: str | None = None
    external_id: str | None = None
    organization_id: OrganizationId | None = None
    tags: tuple[str, ...] = ()


class ContactCreated(ContactFields, ContactEvent):
    TYPE = "ContactCreated"


class ContactUpdated(Event):
    """The contact's fields after the change, every one of them (a field set to null
    is then told apart from a field left alone)."""

    TYPE = "ContactUpdated"

    email: str
    name: str | None
    phone: str | None
    external_id: str | None
    organization_id: OrganizationId | None
    tags: tuple[str, ...]


class ContactMerged(Event):
    """The contact was merged into ``into``: its tickets moved there (each by a
    ``RequesterChanged``) and it answers with a redirect from now on."""

    TYPE = "ContactMerged"

    into: ContactId


class ContactErased(Event):
    """The contact's personal data was erased (crypto-shredded): its data key is gone,
    so every sealed field of its events reads as erased from now on. ``by`` asked,
    ``reason`` says why (kept for the audit; write no personal data in it)."""

    TYPE = "ContactErased"

    reason: str
    by: Actor


class NewOrganization(Frozen):
    """A new organization: what ``CreateOrganization`` asks for and
    ``OrganizationCreated`` records."""

    organization_id: OrganizationId
    name: str
    domains: tuple[str, ...] = ()


class OrganizationCreated(NewOrganization, Event):
    TYPE = "OrganizationCreated"


class OrganizationParts(Frozen):
    """An organization's name and domains, whole: what ``UpdateOrganization`` sets and
    ``OrganizationUpdated`` records after the change."""

    name: str
    domains: tuple[str, ...]


class OrganizationUpdated(OrganizationParts, Event):
    TYPE = "OrganizationUpdated"


# --- tenant stream (audit trail of configuration) ----------------------------------------


def _no_floats(value: Any) -> Any:
    if isinstance(value, float):
        raise ValueError("numbers in event data must be integers")
    if isinstance(value, dict):
        for item in value.values():
            _no_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _no_floats(item)
    return value


class ApiKeyIssued(Event):
    TYPE = "ApiKeyIssued"
    OMIT_EMPTY = frozenset({"scopes"})

    key_id: ApiKeyId
    name: str
    role: Role
    prefix: str
    scopes: tuple[str, ...] | None = None
    """The permissions a scoped key holds (absent: all its role's)."""


class ApiKeyRevoked(Event):
    TYPE = "ApiKeyRevoked"

    key_id: ApiKeyId


class AgentEvent(Event):
    """An event of the tenant stream about one agent, which it names first."""

    agent_id: AgentId


class AgentSessionEvent(AgentEvent):
    """An event of one of an agent's sign-in sessions."""

    session_id: UUID


class AgentAdded(AgentEvent):
    TYPE = "AgentAdded"

    email: str
    name: str
    role: Role


class AgentChanges(Frozen):
    """An agent's fields a change names (None: as it was): what ``UpdateAgent`` asks
    for, and what ``AgentUpdated`` records of it (only the fields that changed)."""

    agent_id: AgentId
    email: str | None = None
    name: str | None = None
    role: Role | None = None
    active: bool | None = None


class AgentUpdated(AgentChanges, AgentEvent):
    """Only the fields that changed are set."""

    TYPE = "AgentUpdated"


class AgentInvited(Event):
    """An admin invited an e-mail to sign in as ``role`` (the token is never recorded)."""

    TYPE = "AgentInvited"

    invitation_id: UUID
    email: str
    name: str
    role: Role
    expires_at: UtcDatetime


class AgentInvitationAccepted(Event):
    """The invitee spent the invitation and now signs in as ``agent_id``."""

    TYPE = "AgentInvitationAccepted"

    invitation_id: UUID
    agent_id: AgentId


class AgentPasswordSet(AgentEvent):
    """The agent's password was set (the hash is never recorded)."""

    TYPE = "AgentPasswordSet"


class AgentSignedIn(AgentSessionEvent):
    TYPE = "AgentSignedIn"


class AgentSignedOut(AgentSessionEvent):
    TYPE = "AgentSignedOut"


class AgentSessionRevoked(AgentSessionEvent):
    """A session ended without its owner signing out: ``replay`` when a refresh token
    that had already been exchanged was presented again."""

    TYPE = "AgentSessionRevoked"

    reason: str


class OidcProviderSet(Event):
    """An admin set the tenant's OpenID Connect provider (its secret is never in it)."""

    TYPE = "OidcProviderSet"

    label: str
    issuer: str
    client_id: str
    allowed_domain: str | None
    create_agents: bool


class OidcProviderRemoved(Event):
    TYPE = "OidcProviderRemoved"

    issuer: str


class PortalLinkIssued(ContactEvent):
    """Staff produced a portal password link for a contact (the token is never
    recorded; the actor is who asked)."""

    TYPE = "PortalLinkIssued"

    link_id: UUID
    expires_at: UtcDatetime


class PortalPasswordSet(ContactEvent):
    """The contact spent a password link and has a portal password (the hash is never
    recorded)."""

    TYPE = "PortalPasswordSet"

    link_id: UUID


class PortalSessionEvent(ContactEvent):
    """An event of one of a contact's portal sessions."""

    session_id: UUID


class PortalSignedIn(PortalSessionEvent):
    TYPE = "PortalSignedIn"


class PortalSignedOut(PortalSessionEvent):
    TYPE = "PortalSignedOut"


class PortalSessionRevoked(PortalSessionEvent):
    """A portal session ended without its contact signing out: ``replay`` (a refresh
    token already exchanged was presented again) or ``merged`` (the contact was merged
    into another)."""

    TYPE = "PortalSessionRevoked"

    reason: str


class SettingsChanged(Event):
    """The tenant's settings document after the change (JSON, ints only)."""

    TYPE = "SettingsChanged"

    settings: dict[str, Any]

    @field_validator("settings")
    @classmethod
    def _ints_only(cls, value: dict[str, Any]) -> dict[str, Any]:
        _no_floats(value)
        return value


class WebhookConfigured(Event):
    TYPE = "WebhookConfigured"

    url: str
    event_types: tuple[str, ...]
    enabled: bool


class MailboxCreated(Event):
    """A mailbox was added: its address and its servers as the API shows them (never a
    secret: ``smtp`` and ``imap`` without passwords, ``dkim`` without its private key,
    None for none)."""

    TYPE = "MailboxCreated"

    mailbox_id: UUID
    address: str
    name: str | None
    smtp: dict[str, Any] | None
    imap: dict[str, Any] | None
    dkim: dict[str, Any] | None = None


class MailboxChanged(Event):
    """A mailbox's name, servers or DKIM signing changed: the whole of them after the
    change, and whether a new SMTP or IMAP password or DKIM key was given (the secrets
    themselves never)."""

    TYPE = "MailboxChanged"

    mailbox_id: UUID
    name: str | None
    smtp: dict[str, Any] | None
    imap: dict[str, Any] | None
    smtp_password_changed: bool = False
    imap_password_changed: bool = False
    dkim: dict[str, Any] | None = None
    dkim_key_changed: bool = False


class MailboxDeleted(Event):
    """A mailbox that never took in or sent mail was deleted."""

    TYPE = "MailboxDeleted"

    mailbox_id: UUID
    address: str


class SlackConnected(Event):
    """The tenant connected a Slack channel: its id, the bot's own user id when given, and
    which notices are posted (never the bot token or the signing secret)."""

    TYPE = "SlackConnected"

    integration_id: UUID
    channel_id: str
    bot_user_id: str | None
    notices: dict[str, bool]


class SlackChanged(Event):
    """The Slack connection changed: the whole of what the API shows of it after the
    change, and whether a new bot token or signing secret was given (never their values)."""

    TYPE = "SlackChanged"

    integration_id: UUID
    channel_id: str
    bot_user_id: str | None
    notices: dict[str, bool]
    bot_token_changed: bool = False
    signing_secret_changed: bool = False


class SlackDisconnected(Event):
    """The tenant disconnected Slack: no more events are taken in, nothing more posted."""

    TYPE = "SlackDisconnected"

    integration_id: UUID
    channel_id: str


class RuleChainStopped(Event):
    """A rule did not fire on ``trigger_seq``: the chain of rules acting on each
    other's events had reached ``depth`` (tenant stream)."""

    TYPE = "RuleChainStopped"

    rule_id: UUID
    ticket_id: TicketId
    trigger_seq: int
    depth: int


# --- ticket field definition streams (one per field) -------------------------------------


class TicketFieldDefined(FieldSpec, Event):
    """A ticket field was defined; its ``key`` and ``type`` never change."""

    TYPE = "TicketFieldDefined"


class TicketFieldUpdated(Event):
    """A field's definition after a change, whole: what is shown at any version is
    the last of these (or the definition) before it."""

    TYPE = "TicketFieldUpdated"

    key: str
    title: str
    options: tuple[FieldOption, ...] = ()
    required_on: RequiredOn | None = None
    active: bool = True
    intake: bool = False
    customer_read_only: bool = False
    personal: bool = False


GROUP_EVENTS: tuple[type[Event], ...] = (GroupCreated, GroupRenamed, GroupMembersChanged)
FIELD_EVENTS: tuple[type[Event], ...] = (TicketFieldDefined, TicketFieldUpdated)
CONTACT_EVENTS: tuple[type[Event], ...] = (ContactCreated, ContactUpdated, ContactMerged,
                                           ContactErased)
ORGANIZATION_EVENTS: tuple[type[Event], ...] = (OrganizationCreated, OrganizationUpdated)
TENANT_EVENTS: tuple[type[Event], ...] = (
    ApiKeyIssued,
    ApiKeyRevoked,
    AgentAdded,
    AgentUpdated,
    SettingsChanged,
    WebhookConfigured,
    MailboxCreated,
    MailboxChanged,
    MailboxDeleted,
    SlackConnected,
    SlackChanged,
    SlackDisconnected,
    AgentInvited,
    AgentInvitationAccepted,
    AgentPasswordSet,
    AgentSignedIn,
    AgentSignedOut,
    AgentSessionRevoked,
    OidcProviderSet,
    OidcProviderRemoved,
    PortalLinkIssued,
    PortalPasswordSet,
    PortalSignedIn,
    PortalSignedOut,
    PortalSessionRevoked,
    RuleChainStopped,
)

__all__ = [
    "CONTACT_EVENTS",
    "FIELD_EVENTS",
    "GROUP_EVENTS",
    "ORGANIZATION_EVENTS",
    "TENANT_EVENTS",
    "AgentAdded",
    "AgentChanges",
    "AgentEvent",
    "AgentInvitationAccepted",
    "AgentInvited",
    "AgentPasswordSet",
    "AgentSessionEvent",
    "AgentSessionRevoked",
    "AgentSignedIn",
    "AgentSignedOut",
    "AgentUpdated",
    "ApiKeyIssued",
    "ApiKeyRevoked",
    "ContactCreated",
    "ContactErased",
    "ContactEvent",
    "ContactFields",
    "ContactMerged",
    "ContactUpdated",
    "Event",
    "GroupCreated",
    "GroupMembersChanged",
    "GroupRenamed",
    "MailboxChanged",
    "MailboxCreated",
    "MailboxDeleted",
    "NewGroup",
    "NewOrganization",
    "OidcProviderRemoved",
    "OidcProviderSet",
    "OrganizationCreated",
    "OrganizationParts",
    "OrganizationUpdated",
    "PortalLinkIssued",
    "PortalPasswordSet",
    "PortalSessionEvent",
    "PortalSessionRevoked",
    "PortalSignedIn",
    "PortalSignedOut",
    "RuleChainStopped",
    "SettingsChanged",
    "SlackChanged",
    "SlackConnected",
    "SlackDisconnected",
    "TicketFieldDefined",
    "TicketFieldUpdated",
    "WebhookConfigured",
]
