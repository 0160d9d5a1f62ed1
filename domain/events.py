"""Domain events: immutable, past-tense facts.

Each event names itself (``TYPE``) and its payload shape (``SCHEMA_VERSION``) and
carries ``at``, the business time it happened. Ticket events carry the *decided*
facts, computed SLA clocks included, so ``evolve`` never needs the policy or calendar
and a replay shows exactly what was shown at the time. Numbers are ints only: the
store hashes canonical JSON and floats have no canonical form.
"""

from __future__ import annotations

from typing import Any, ClassVar
from uuid import UUID

from pydantic import BaseModel, ConfigDict, field_validator

from domain.attachment import AttachmentRef, TicketFile
from domain.business_hours import Calendar
from domain.fields import FieldOption, FieldType, FieldValue, RequiredOn
from domain.ids import (
    AgentId,
    ApiKeyId,
    ContactId,
    GroupId,
    MessageId,
    OrganizationId,
    TicketId,
)
from domain.rule_parts import Action, Condition, TimeTrigger
from domain.sla import ClockBasis, SlaClock
from domain.values import (
    Actor,
    LinkKind,
    Priority,
    Rating,
    Requester,
    Role,
    SlaMetric,
    Source,
    TicketState,
    UtcDatetime,
    Visibility,
)

Clocks = dict[SlaMetric, SlaClock]


class Event(BaseModel):
    """Base of every event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    TYPE: ClassVar[str]
    SCHEMA_VERSION: ClassVar[int] = 1
    OMIT_EMPTY: ClassVar[frozenset[str]] = frozenset()
    """Fields left out of the stored payload while empty: added after events of the
    type were written, so a payload without them reads (and hashes) as before."""

    at: UtcDatetime


# --- ticket stream ---------------------------------------------------------------------


class TicketOpened(Event):
    """A ticket was opened. v2 nests the requester (v1 had a flat ``requester_email``)."""

    TYPE = "TicketOpened"
    SCHEMA_VERSION = 2

    ticket_id: TicketId
    message_id: MessageId
    subject: str
    body: str
    requester: Requester
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    author: Actor
    follow_up_of: TicketId | None = None
    clocks: Clocks
    fields: dict[str, FieldValue] = {}
    """Ticket field values by key (absent from events written before fields)."""
    attachments: tuple[AttachmentRef, ...] = ()
    """The opening message's files (absent when it has none)."""
    OMIT_EMPTY = frozenset({"attachments"})


class MessageAdded(Event):
    """A message was added; ``clocks`` holds the clocks it changed."""

    TYPE = "MessageAdded"
    OMIT_EMPTY = frozenset({"attachments"})

    message_id: MessageId
    body: str
    visibility: Visibility
    author: Actor
    clocks: Clocks = {}
    attachments: tuple[AttachmentRef, ...] = ()
    """The message's files (absent when it has none)."""


class TicketAssigned(Event):
    TYPE = "TicketAssigned"

    assignee: AgentId | None


class PriorityChanged(Event):
    """The priority changed; ``clocks`` holds the retargeted clocks."""

    TYPE = "PriorityChanged"

    priority: Priority
    clocks: Clocks = {}


class StateChanged(Event):
    """The ticket moved between states; ``clocks`` holds paused/resumed clocks."""

    TYPE = "StateChanged"

    from_state: TicketState
    to_state: TicketState
    reason: str | None = None
    clocks: Clocks = {}


class TagsChanged(Event):
    TYPE = "TagsChanged"

    added: tuple[str, ...]
    removed: tuple[str, ...]
    tags: tuple[str, ...]


class SlaRetargeted(Event):
    """The ticket's open clocks moved to another SLA policy, or to another version of
    their own: re-matched after a change of priority, group or organization, or asked
    for (``apply``). Names the policy before (None: the tenant's settings) and after;
    ``clocks`` holds the retargeted clocks, elapsed business time kept."""

    TYPE = "SlaRetargeted"

    from_policy: ClockBasis | None
    to_policy: ClockBasis
    reason: str
    clocks: Clocks


class SlaBreached(Event):
    """A clock passed its due time; ``at`` is when this was noticed, never earlier."""

    TYPE = "SlaBreached"

    metric: SlaMetric
    due_at: UtcDatetime


class SlaWarning(Event):
    """A running clock passed the tenant's warning share of its target (``share``, in
    percent); ``at`` is when this was noticed."""

    TYPE = "SlaWarning"

    metric: SlaMetric
    share: int
    due_at: UtcDatetime


class FieldValuesChanged(Event):
    """Ticket field values set (or cleared: ``None``), by key; never by title."""

    TYPE = "FieldValuesChanged"

    values: dict[str, FieldValue | None]


class FollowUpOpened(Event):
    """Appended to a closed ticket when a customer's message opened a follow-up."""

    TYPE = "FollowUpOpened"

    follow_up_id: TicketId


class TicketGroupChanged(Event):
    """The ticket moved to another group (None: to no group); ``clocks`` holds the
    clocks retargeted to the new group's SLA targets."""

    TYPE = "TicketGroupChanged"

    group_id: GroupId | None
    clocks: Clocks = {}


class TicketMerged(Event):
    """The ticket was merged into ``into`` (closed by the ``StateChanged`` before this
    event, reason ``merged``): its thread is read from there, and it takes no command."""

    TYPE = "TicketMerged"

    into: TicketId


class TicketMergeReceived(Event):
    """Another ticket was merged into this one: ``merged_ids`` are the tickets whose
    messages this thread now references (the source and the tickets merged into it
    before), ``message_ids`` those messages, oldest first, as they stood at the merge;
    ``ccs`` the source's requester and CCs this ticket did not have yet."""

    TYPE = "TicketMergeReceived"

    source_id: TicketId
    merged_ids: tuple[TicketId, ...]
    message_ids: tuple[MessageId, ...]
    ccs: tuple[Requester, ...] = ()


class TicketSplit(Event):
    """Messages of this ticket (``message_ids``, oldest first) moved to a new ticket,
    ``into``, which ``TicketSplitFrom`` opens: this thread lists them no more (its
    history points there). ``awaiting_reply`` is whether the last public message left
    is a customer's."""

    TYPE = "TicketSplit"

    into: TicketId
    message_ids: tuple[MessageId, ...]
    awaiting_reply: bool


class TicketSplitFrom(Event):
    """The first event of a ticket split off ``source_id``: it takes the source's
    requester, priority, channel, tags and field values, and the moved messages
    (``message_ids``, oldest first, each with its original author and time; their
    files are ``attachments``). Its SLA clocks start as an opening's do. The group
    comes by the ``TicketGroupChanged`` after it, as an opening's does."""

    TYPE = "TicketSplitFrom"
    OMIT_EMPTY = frozenset({"attachments"})

    ticket_id: TicketId
    source_id: TicketId
    subject: str
    requester: Requester
    priority: Priority
    source: Source
    tags: tuple[str, ...]
    author: Actor
    message_ids: tuple[MessageId, ...]
    awaiting_reply: bool
    clocks: Clocks
    fields: dict[str, FieldValue] = {}
    attachments: tuple[TicketFile, ...] = ()


class TicketLinked(Event):
    """This ticket now holds a link of ``kind`` to ``ticket_id`` (the other ticket
    holds the other side, ``LinkKind.other_side``, by its own event)."""

    TYPE = "TicketLinked"

    kind: LinkKind
    ticket_id: TicketId


class TicketUnlinked(Event):
    """The link of ``kind`` to ``ticket_id`` was taken off this ticket."""

    TYPE = "TicketUnlinked"

    kind: LinkKind
    ticket_id: TicketId


class FollowersChanged(Event):
    """Agents started or stopped following the ticket; ``followers`` is the whole set
    after the change, in the order they started following."""

    TYPE = "FollowersChanged"

    added: tuple[AgentId, ...]
    removed: tuple[AgentId, ...]
    followers: tuple[AgentId, ...]


class SatisfactionRated(Event):
    """The requester rated the solved ticket; a later rating replaces this one until the
    ticket closes. ``via`` is how they rated: ``link`` (a signed single-use link),
    ``portal`` or ``widget``."""

    TYPE = "SatisfactionRated"

    rating: Rating
    comment: str | None = None
    author: Actor
    via: str


class CcsChanged(Event):
    """Customers were copied on the ticket or taken off it (``removed``: their
    e-mails); ``ccs`` is the whole list after the change."""

    TYPE = "CcsChanged"

    added: tuple[Requester, ...]
    removed: tuple[str, ...]
    ccs: tuple[Requester, ...]


# --- group stream (a team of agents; the stream id is the group id) -----------------------


class GroupCreated(Event):
    TYPE = "GroupCreated"

    group_id: GroupId
    name: str
    members: tuple[AgentId, ...] = ()


class GroupRenamed(Event):
    TYPE = "GroupRenamed"

    name: str


class GroupMembersChanged(Event):
    """``members`` is the whole membership afterwards, sorted."""

    TYPE = "GroupMembersChanged"

    added: tuple[AgentId, ...]
    removed: tuple[AgentId, ...]
    members: tuple[AgentId, ...]
class RequesterChanged(Event):
    """The ticket now belongs to another contact (or to a contact at all: tickets
    opened before contacts existed are linked by ``helpdesk migrate``); a merge of
    contacts moves each ticket with one of these."""

    TYPE = "RequesterChanged"

    requester: Requester


# --- contact and organization streams ----------------------------------------------------


class ContactCreated(Event):
    TYPE = "ContactCreated"

    contact_id: ContactId
    email: str
    name: str | None = None
    phone: str | None = None
    external_id: str | None = None
    organization_id: OrganizationId | None = None
    tags: tuple[str, ...] = ()


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


class OrganizationCreated(Event):
    TYPE = "OrganizationCreated"

    organization_id: OrganizationId
    name: str
    domains: tuple[str, ...] = ()


class OrganizationUpdated(Event):
    """The organization's name and domains after the change."""

    TYPE = "OrganizationUpdated"

    name: str
    domains: tuple[str, ...]


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


class AgentAdded(Event):
    TYPE = "AgentAdded"

    agent_id: AgentId
    email: str
    name: str
    role: Role


class AgentUpdated(Event):
    """Only the fields that changed are set."""

    TYPE = "AgentUpdated"

    agent_id: AgentId
    email: str | None = None
    name: str | None = None
    role: Role | None = None
    active: bool | None = None


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


class AgentPasswordSet(Event):
    """The agent's password was set (the hash is never recorded)."""

    TYPE = "AgentPasswordSet"

    agent_id: AgentId


class AgentSignedIn(Event):
    TYPE = "AgentSignedIn"

    agent_id: AgentId
    session_id: UUID


class AgentSignedOut(Event):
    TYPE = "AgentSignedOut"

    agent_id: AgentId
    session_id: UUID


class AgentSessionRevoked(Event):
    """A session ended without its owner signing out: ``replay`` when a refresh token
    that had already been exchanged was presented again."""

    TYPE = "AgentSessionRevoked"

    agent_id: AgentId
    session_id: UUID
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


class PortalLinkIssued(Event):
    """Staff produced a portal password link for a contact (the token is never
    recorded; the actor is who asked)."""

    TYPE = "PortalLinkIssued"

    contact_id: ContactId
    link_id: UUID
    expires_at: UtcDatetime


class PortalPasswordSet(Event):
    """The contact spent a password link and has a portal password (the hash is never
    recorded)."""

    TYPE = "PortalPasswordSet"

    contact_id: ContactId
    link_id: UUID


class PortalSignedIn(Event):
    TYPE = "PortalSignedIn"

    contact_id: ContactId
    session_id: UUID


class PortalSignedOut(Event):
    TYPE = "PortalSignedOut"

    contact_id: ContactId
    session_id: UUID


class PortalSessionRevoked(Event):
    """A portal session ended without its contact signing out: ``replay`` (a refresh
    token already exchanged was presented again) or ``merged`` (the contact was merged
    into another)."""

    TYPE = "PortalSessionRevoked"

    contact_id: ContactId
    session_id: UUID
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


# --- ticket field definition streams (one per field) -------------------------------------


class TicketFieldDefined(Event):
    """A ticket field was defined; its ``key`` and ``type`` never change."""

    TYPE = "TicketFieldDefined"

    key: str
    title: str
    type: FieldType
    options: tuple[FieldOption, ...] = ()
    required_on: RequiredOn | None = None
    active: bool = True
    intake: bool = False
    customer_read_only: bool = False
    personal: bool = False


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


# --- rule stream (domain/rule.py) -------------------------------------------------------


class RuleCreated(Event):
    TYPE = "RuleCreated"

    rule_id: UUID
    name: str
    position: int
    active: bool
    conditions: tuple[Condition, ...]
    actions: tuple[Action, ...]
    time: TimeTrigger | None = None
    """A time rule's trigger (None: the rule fires on events)."""


class RuleChanged(Event):
    """The parts of a rule that changed, each as it is now (None: as it was)."""

    TYPE = "RuleChanged"

    name: str | None = None
    position: int | None = None
    active: bool | None = None
    conditions: tuple[Condition, ...] | None = None
    actions: tuple[Action, ...] | None = None
    time: TimeTrigger | None = None


class RuleChainStopped(Event):
    """A rule did not fire on ``trigger_seq``: the chain of rules acting on each
    other's events had reached ``depth`` (tenant stream)."""

    TYPE = "RuleChainStopped"

    rule_id: UUID
    ticket_id: TicketId
    trigger_seq: int
    depth: int


# --- macro stream (domain/macro.py) -----------------------------------------------------


class MacroCreated(Event):
    TYPE = "MacroCreated"

    macro_id: UUID
    name: str
    owner_id: AgentId | None
    text: str | None
    visibility: Visibility
    actions: tuple[Action, ...]


class MacroChanged(Event):
    """The parts of a macro that changed, each as it is now (None: as it was)."""

    TYPE = "MacroChanged"

    name: str | None = None
    text: str | None = None
    visibility: Visibility | None = None
    actions: tuple[Action, ...] | None = None


class MacroDeleted(Event):
    """The macro is gone from the desk; its stream keeps what it was."""

    TYPE = "MacroDeleted"


# --- saved view stream (domain/saved_view.py) -------------------------------------------


class ViewCreated(Event):
    """A saved view: its name and the ticket list's filters, as query parameters."""

    TYPE = "ViewCreated"

    view_id: UUID
    name: str
    owner_id: AgentId | None
    filters: dict[str, str | list[str]]


class ViewChanged(Event):
    """The parts of a view that changed, each as it is now (None: as it was)."""

    TYPE = "ViewChanged"

    name: str | None = None
    filters: dict[str, str | list[str]] | None = None


class ViewDeleted(Event):
    """The view is gone from the desk; its stream keeps what it was."""

    TYPE = "ViewDeleted"


# --- calendar stream (domain/sla_calendar.py) -------------------------------------------


class CalendarCreated(Event):
    """Named business hours in a time zone, with holidays, for SLA policies."""

    TYPE = "CalendarCreated"

    calendar_id: UUID
    name: str
    hours: Calendar


class CalendarChanged(Event):
    """The parts of a calendar that changed, each as it is now (None: as it was)."""

    TYPE = "CalendarChanged"

    name: str | None = None
    hours: Calendar | None = None


class CalendarDeleted(Event):
    """The calendar is gone from the desk; its stream keeps what it was, and its hours
    at every version stay readable for the clocks that ran on them."""

    TYPE = "CalendarDeleted"


# --- SLA policy stream (domain/target_policy.py) ----------------------------------------


class PolicyTargets(BaseModel):
    """A policy's target per metric, in business milliseconds (None: not measured)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_reply_ms: int | None = None
    next_reply_ms: int | None = None
    periodic_update_ms: int | None = None
    requester_wait_ms: int | None = None
    resolution_ms: int | None = None
    agent_work_ms: int | None = None


class SlaPolicyCreated(Event):
    TYPE = "SlaPolicyCreated"

    policy_id: UUID
    name: str
    position: int
    default: bool
    conditions: tuple[Condition, ...]
    targets: PolicyTargets
    calendar_id: UUID | None
    """None: calendar time (every instant counts)."""


class SlaPolicyChanged(Event):
    """The parts of a policy that changed, each as it is now (None: as it was);
    ``calendar_id`` changes only with ``set_calendar`` (so a policy can go back to
    calendar time)."""

    TYPE = "SlaPolicyChanged"

    name: str | None = None
    position: int | None = None
    conditions: tuple[Condition, ...] | None = None
    targets: PolicyTargets | None = None
    set_calendar: bool = False
    calendar_id: UUID | None = None


class SlaPolicyDeleted(Event):
    """The policy is gone from the desk: no ticket is matched to it from now on. Clocks
    that run on it keep the targets and calendar recorded with them (verdicts never
    change after the fact) until their ticket is re-matched."""

    TYPE = "SlaPolicyDeleted"


TICKET_EVENTS: tuple[type[Event], ...] = (
    TicketOpened,
    MessageAdded,
    TicketAssigned,
    PriorityChanged,
    StateChanged,
    TagsChanged,
    SlaBreached,
    SlaWarning,
    FollowUpOpened,
    SlaRetargeted,
    TicketGroupChanged,
    FieldValuesChanged,
    RequesterChanged,
    TicketMerged,
    TicketMergeReceived,
    TicketSplit,
    TicketSplitFrom,
    TicketLinked,
    TicketUnlinked,
    FollowersChanged,
    CcsChanged,
    SatisfactionRated,
)
GROUP_EVENTS: tuple[type[Event], ...] = (GroupCreated, GroupRenamed, GroupMembersChanged)
FIELD_EVENTS: tuple[type[Event], ...] = (TicketFieldDefined, TicketFieldUpdated)
RULE_EVENTS: tuple[type[Event], ...] = (RuleCreated, RuleChanged)
MACRO_EVENTS: tuple[type[Event], ...] = (MacroCreated, MacroChanged, MacroDeleted)
VIEW_EVENTS: tuple[type[Event], ...] = (ViewCreated, ViewChanged, ViewDeleted)
CALENDAR_EVENTS: tuple[type[Event], ...] = (CalendarCreated, CalendarChanged, CalendarDeleted)
SLA_POLICY_EVENTS: tuple[type[Event], ...] = (SlaPolicyCreated, SlaPolicyChanged,
                                               SlaPolicyDeleted)
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
EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (TICKET_EVENTS + GROUP_EVENTS + CONTACT_EVENTS + ORGANIZATION_EVENTS
                + TENANT_EVENTS + FIELD_EVENTS + RULE_EVENTS + MACRO_EVENTS
                + VIEW_EVENTS + CALENDAR_EVENTS + SLA_POLICY_EVENTS)
}
"""Every event class by its ``TYPE``."""

STREAM_KINDS: dict[str, tuple[type[Event], ...]] = {
    "ticket": TICKET_EVENTS,
    "contact": CONTACT_EVENTS,
    "organization": ORGANIZATION_EVENTS,
    "group": GROUP_EVENTS,
    "ticket_field": FIELD_EVENTS,
    "tenant": TENANT_EVENTS,
    "rule": RULE_EVENTS,
    "macro": MACRO_EVENTS,
    "view": VIEW_EVENTS,
    "calendar": CALENDAR_EVENTS,
    "sla_policy": SLA_POLICY_EVENTS,
}
"""The kinds of stream and the events each holds; a new aggregate adds its row here."""

STREAM_TYPES: dict[str, str] = {cls.TYPE: kind for kind, classes in STREAM_KINDS.items()
                                for cls in classes}
"""The kind of stream (``ticket``, ``contact``, ``tenant``...) each event type is
appended to."""

__all__ = [
    "CALENDAR_EVENTS",
    "CONTACT_EVENTS",
    "EVENT_TYPES",
    "FIELD_EVENTS",
    "GROUP_EVENTS",
    "MACRO_EVENTS",
    "ORGANIZATION_EVENTS",
    "RULE_EVENTS",
    "SLA_POLICY_EVENTS",
    "STREAM_KINDS",
    "STREAM_TYPES",
    "TENANT_EVENTS",
    "TICKET_EVENTS",
    "VIEW_EVENTS",
    "AgentAdded",
    "AgentInvitationAccepted",
    "AgentInvited",
    "AgentPasswordSet",
    "AgentSessionRevoked",
    "AgentSignedIn",
    "AgentSignedOut",
    "AgentUpdated",
    "ApiKeyIssued",
    "ApiKeyRevoked",
    "CalendarChanged",
    "CalendarCreated",
    "CalendarDeleted",
    "Clocks",
    "ContactCreated",
    "ContactErased",
    "ContactMerged",
    "ContactUpdated",
    "Event",
    "FieldValuesChanged",
    "FollowUpOpened",
    "GroupCreated",
    "GroupMembersChanged",
    "GroupRenamed",
    "MacroChanged",
    "MacroCreated",
    "MacroDeleted",
    "MailboxChanged",
    "MailboxCreated",
    "MailboxDeleted",
    "MessageAdded",
    "OidcProviderRemoved",
    "OidcProviderSet",
    "OrganizationCreated",
    "OrganizationUpdated",
    "PolicyTargets",
    "PortalLinkIssued",
    "PortalPasswordSet",
    "PortalSessionRevoked",
    "PortalSignedIn",
    "PortalSignedOut",
    "PriorityChanged",
    "RequesterChanged",
    "RuleChainStopped",
    "RuleChanged",
    "RuleCreated",
    "SettingsChanged",
    "SlaBreached",
    "SlaPolicyChanged",
    "SlaPolicyCreated",
    "SlaPolicyDeleted",
    "SlaRetargeted",
    "SlaWarning",
    "SlackChanged",
    "SlackConnected",
    "SlackDisconnected",
    "StateChanged",
    "TagsChanged",
    "TicketAssigned",
    "TicketFieldDefined",
    "TicketFieldUpdated",
    "TicketGroupChanged",
    "TicketMerged",
    "TicketOpened",
    "TicketSplit",
    "TicketSplitFrom",
    "ViewChanged",
    "ViewCreated",
    "ViewDeleted",
    "WebhookConfigured",
]
