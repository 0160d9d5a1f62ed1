"""The serialization boundary: every event round-trips; old payloads upcast."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime
from typing import Any

import pytest

from domain.business_hours import Calendar
from domain.errors import UnknownEventType, ValidationFailed
from domain.event_types import EVENT_TYPES
from domain.events import (
    AgentAdded,
    AgentInvitationAccepted,
    AgentInvited,
    AgentPasswordSet,
    AgentSessionRevoked,
    AgentSignedIn,
    AgentSignedOut,
    AgentUpdated,
    ApiKeyIssued,
    ApiKeyRevoked,
    ContactCreated,
    ContactErased,
    ContactMerged,
    ContactUpdated,
    Event,
    GroupCreated,
    GroupMembersChanged,
    GroupRenamed,
    MailboxChanged,
    MailboxCreated,
    MailboxDeleted,
    OidcProviderRemoved,
    OidcProviderSet,
    OrganizationCreated,
    OrganizationUpdated,
    PortalLinkIssued,
    PortalPasswordSet,
    PortalSessionRevoked,
    PortalSignedIn,
    PortalSignedOut,
    RuleChainStopped,
    SettingsChanged,
    SlackChanged,
    SlackConnected,
    SlackDisconnected,
    TicketFieldDefined,
    TicketFieldUpdated,
    WebhookConfigured,
)
from domain.fields import FieldOption, FieldType, RequiredOn
from domain.ids import AgentId, ApiKeyId, ContactId, GroupId, OrganizationId, TicketId
from domain.mapper import from_stored, to_stored
from domain.rule_parts import Action, Condition
from domain.sla import ClockBasis, SlaClock
from domain.ticket.commands import Assign, ChangePriority, ChangeTags, CheckSla
from domain.ticket.events import (
    CcsChanged,
    FieldValuesChanged,
    FollowersChanged,
    FollowUpOpened,
    RequesterChanged,
    SatisfactionRated,
    SlaRetargeted,
    SlaWarning,
    TicketGroupChanged,
    TicketLinked,
    TicketMerged,
    TicketMergeReceived,
    TicketOpened,
    TicketSplit,
    TicketSplitFrom,
    TicketUnlinked,
)
from domain.values import (
    Actor,
    ActorKind,
    LinkKind,
    Priority,
    Rating,
    Requester,
    Role,
    SlaMetric,
    Source,
    TicketState,
    Visibility,
)
from domain.workflow_events import (
    CalendarChanged,
    CalendarCreated,
    CalendarDeleted,
    MacroChanged,
    MacroCreated,
    MacroDeleted,
    PolicyTargets,
    RuleChanged,
    RuleCreated,
    SlaPolicyChanged,
    SlaPolicyCreated,
    SlaPolicyDeleted,
    ViewChanged,
    ViewCreated,
    ViewDeleted,
)
from tests.unit.domain.support import AGENT, CUSTOMER, at, given, mid, move, open_cmd, reply

AT = datetime(2026, 6, 1, 9, 0, 0, 123, tzinfo=UTC)


def ticket_history() -> list[Event]:
    history = given(
        open_cmd(tags=("vip",)),
        reply(at(1), n=2),
        reply(at(2), actor=CUSTOMER, n=3),
        Assign(agent_id=AgentId(uuid.UUID(int=5)), actor=AGENT, at=at(3)),
        ChangePriority(priority=Priority.HIGH, actor=AGENT, at=at(4)),
        ChangeTags(add=("billing",), remove=("vip",), actor=AGENT, at=at(5)),
        CheckSla(metric=SlaMetric.NEXT_REPLY, at=at(9)),
        move(TicketState.SOLVED, at(10)),
        move(TicketState.CLOSED, at(11)),
    )
    linked = RequesterChanged(requester=Requester(email="ann@example.com", name="Ann",
                                                  contact_id=CONTACT), at=at(12))
    return [*history,
            FieldValuesChanged(values={"plan": "pro", "areas": ("api", "login"), "n": 3,
                                       "vip": True, "gone": None}, at=at(10, 30)),
            FollowUpOpened(follow_up_id=TicketId(uuid.UUID(int=6)), at=at(12)), linked,
            TicketMergeReceived(source_id=TicketId(uuid.UUID(int=7)),
                                merged_ids=(TicketId(uuid.UUID(int=7)),),
                                message_ids=(mid(8),), ccs=(BOB,), at=at(13)),
            TicketLinked(kind=LinkKind.DUPLICATES, ticket_id=TicketId(uuid.UUID(int=7)),
                         at=at(13)),
            TicketUnlinked(kind=LinkKind.RELATED, ticket_id=TicketId(uuid.UUID(int=7)),
                           at=at(13)),
            FollowersChanged(added=(AgentId(uuid.UUID(int=5)),), removed=(),
                             followers=(AgentId(uuid.UUID(int=5)),), at=at(13)),
            CcsChanged(added=(), removed=("bob@example.com",), ccs=(), at=at(13)),
            SatisfactionRated(rating=Rating.GOOD, comment="quick", author=CUSTOMER,
                              via="link", at=at(13)),
            TicketMerged(into=TicketId(uuid.UUID(int=8)), at=at(14))]


def split_events() -> list[Event]:
    """Both sides of a split: the source's, and the first event of the new ticket."""
    new = TicketId(uuid.UUID(int=11))
    return [
        TicketSplit(into=new, message_ids=(mid(8),), awaiting_reply=False, at=at(15)),
        TicketSplitFrom(ticket_id=new, source_id=TicketId(uuid.UUID(int=7)), subject="Fax",
                        requester=BOB, priority=Priority.HIGH, source=Source.EMAIL,
                        tags=("fax",), author=AGENT, message_ids=(mid(8),),
                        awaiting_reply=True, clocks={}, fields={"plan": "pro"}, at=at(15)),
    ]


BOB = Requester(email="bob@example.com", name="Bob")


CONTACT = ContactId(uuid.UUID(int=9))
ORG = OrganizationId(uuid.UUID(int=10))


def field_events() -> list[Event]:
    options = (FieldOption(value="free", title="Free"),
               FieldOption(value="pro", title="Pro", active=False))
    return [
        TicketFieldDefined(key="plan", title="Plan", type=FieldType.DROPDOWN, options=options,
                           required_on=RequiredOn.SOLVE, at=AT),
        TicketFieldUpdated(key="plan", title="Subscription", options=options, intake=True,
                           active=False, at=AT),
    ]


def people_events() -> list[Event]:
    return [
        OrganizationCreated(organization_id=ORG, name="Acme", domains=("acme.test",), at=AT),
        OrganizationUpdated(name="Acme Ltd", domains=("acme.test", "acme.example"), at=AT),
        ContactCreated(contact_id=CONTACT, email="ann@acme.test", name="Ann",
                       organization_id=ORG, tags=("vip",), at=AT),
        ContactUpdated(email="ann@acme.test", name="Ann", phone="+44 1", external_id="c-1",
                       organization_id=None, tags=(), at=AT),
        ContactMerged(into=ContactId(uuid.UUID(int=11)), at=AT),
        ContactErased(reason="asked", by=Actor(kind=ActorKind.AGENT, id="admin"), at=AT),
    ]


def group_events() -> list[Event]:
    group, agent = GroupId(uuid.UUID(int=9)), AgentId(uuid.UUID(int=8))
    return [
        GroupCreated(group_id=group, name="Billing", members=(agent,), at=AT),
        GroupRenamed(name="Payments", at=AT),
        GroupMembersChanged(added=(), removed=(agent,), members=(), at=AT),
        TicketGroupChanged(group_id=group, at=AT),
        TicketGroupChanged(group_id=None, at=AT),
    ]


def tenant_events() -> list[Event]:
    key = ApiKeyId(uuid.UUID(int=7))
    agent = AgentId(uuid.UUID(int=8))
    contact = ContactId(uuid.UUID(int=13))
    return [
        ApiKeyIssued(key_id=key, name="ci", role=Role.AGENT, prefix="hd_ab12", at=AT),
        ApiKeyRevoked(key_id=key, at=AT),
        AgentAdded(agent_id=agent, email="bo@example.com", name="Bo", role=Role.ADMIN, at=AT),
        AgentUpdated(agent_id=agent, role=Role.AGENT, active=False, at=AT),
        SettingsChanged(settings={"sweep": {"pending_days": 7}, "flags": [True, None]}, at=AT),
        WebhookConfigured(url="https://hooks.example.com/x", event_types=("TicketOpened",),
                          enabled=True, at=AT),
        AgentInvited(invitation_id=uuid.UUID(int=9), email="cy@example.com", name="Cy",
                     role=Role.AGENT, expires_at=AT, at=AT),
        AgentInvitationAccepted(invitation_id=uuid.UUID(int=9), agent_id=agent, at=AT),
        AgentPasswordSet(agent_id=agent, at=AT),
        AgentSignedIn(agent_id=agent, session_id=uuid.UUID(int=10), at=AT),
        AgentSignedOut(agent_id=agent, session_id=uuid.UUID(int=10), at=AT),
        AgentSessionRevoked(agent_id=agent, session_id=uuid.UUID(int=10), reason="replay",
                            at=AT),
        OidcProviderSet(label="Google", issuer="https://accounts.google.com",
                        client_id="client", allowed_domain="example.com", create_agents=False,
                        at=AT),
        OidcProviderRemoved(issuer="https://accounts.google.com", at=AT),
        PortalLinkIssued(contact_id=contact, link_id=uuid.UUID(int=11), expires_at=AT, at=AT),
        PortalPasswordSet(contact_id=contact, link_id=uuid.UUID(int=11), at=AT),
        PortalSignedIn(contact_id=contact, session_id=uuid.UUID(int=12), at=AT),
        PortalSignedOut(contact_id=contact, session_id=uuid.UUID(int=12), at=AT),
        PortalSessionRevoked(contact_id=contact, session_id=uuid.UUID(int=12),
                             reason="merged", at=AT),
        MailboxCreated(mailbox_id=uuid.UUID(int=14), address="support@example.com",
                       name="Support", smtp={"host": "smtp.example.com", "port": 587,
                                             "security": "starttls", "username": None},
                       imap=None, at=AT),
        MailboxChanged(mailbox_id=uuid.UUID(int=14), name=None, smtp=None,
                       imap={"host": "imap.example.com", "port": 993, "security": "tls",
                             "username": "s", "folder": "INBOX"},
                       imap_password_changed=True, at=AT),
        MailboxDeleted(mailbox_id=uuid.UUID(int=14), address="support@example.com", at=AT),
        SlackConnected(integration_id=uuid.UUID(int=15), channel_id="C0HELP",
                       bot_user_id=None, notices={"ticket_opened": True}, at=AT),
        SlackChanged(integration_id=uuid.UUID(int=15), channel_id="C0HELP",
                     bot_user_id="UBOT", notices={"ticket_opened": False},
                     bot_token_changed=True, at=AT),
        SlackDisconnected(integration_id=uuid.UUID(int=15), channel_id="C0HELP", at=AT),
    ]


def rule_events() -> list[Event]:
    rule = uuid.UUID(int=21)
    when = (Condition(field="event", op="in", value=["TicketOpened"]),
            Condition(field="fields.plan", op="is_set"))
    act = (Action(type="set_priority", value="high"), Action(type="call_webhook"))
    return [
        RuleCreated(rule_id=rule, name="Urgent", position=2, active=True, conditions=when,
                    actions=act, at=AT),
        RuleChanged(active=False, at=AT),
        RuleChanged(name="Rush", conditions=(), actions=act[:1], position=0, at=AT),
        RuleChainStopped(rule_id=rule, ticket_id=TicketId(uuid.UUID(int=22)), trigger_seq=9,
                         depth=5, at=AT),
        MacroCreated(macro_id=uuid.UUID(int=23), name="Thanks", owner_id=None,
                     text="Thanks {{requester.name}}", visibility=Visibility.PUBLIC,
                     actions=act[:1], at=AT),
        MacroChanged(name="Thank you", at=AT),
        MacroDeleted(at=AT),
        SlaWarning(metric=SlaMetric.FIRST_RESPONSE, share=75, due_at=AT, at=AT),
        ViewCreated(view_id=uuid.UUID(int=24), name="Mine", owner_id=AgentId(uuid.UUID(int=8)),
                    filters={"state": ["open", "pending"], "fields.plan": "gold"}, at=AT),
        ViewChanged(filters={"state": "open"}, at=AT),
        ViewDeleted(at=AT),
    ]


def sla_policy_events() -> list[Event]:
    hours = Calendar(timezone="Europe/Berlin", weekly={0: [("09:00", "17:00")]},
                     holidays=[date(2026, 12, 25)])
    return [
        CalendarCreated(calendar_id=uuid.UUID(int=31), name="Office", hours=hours, at=AT),
        CalendarChanged(hours=hours.model_copy(update={"holidays": []}), at=AT),
        SlaPolicyCreated(policy_id=uuid.UUID(int=32), name="VIP", position=1, default=False,
                         conditions=(Condition(field="tags", op="contains", value="vip"),),
                         targets=PolicyTargets(first_reply_ms=60_000, next_reply_ms=120_000),
                         calendar_id=uuid.UUID(int=31), at=AT),
        SlaPolicyChanged(set_calendar=True, calendar_id=None, at=AT),
        SlaRetargeted(from_policy=None, reason="group", at=AT,
                      to_policy=ClockBasis(policy_id=uuid.UUID(int=32), policy_version=2,
                                           calendar_id=uuid.UUID(int=31), calendar_version=1,
                                           policy_name="VIP"),
                      clocks={SlaMetric.RESOLUTION: SlaClock(
                          metric=SlaMetric.RESOLUTION, target_ms=60_000, started_at=AT,
                          due_at=AT, basis=ClockBasis(policy_id=uuid.UUID(int=32),
                                                      policy_version=2))}),
        SlaPolicyDeleted(at=AT),
        CalendarDeleted(at=AT),
    ]


ALL_EVENTS = (ticket_history() + split_events() + tenant_events() + group_events() + field_events()
              + people_events() + rule_events() + sla_policy_events())


def only_json_types(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | str):
        return not isinstance(value, float)
    if isinstance(value, list):
        return all(only_json_types(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and only_json_types(v) for k, v in value.items())
    return False


def test_every_event_type_is_covered() -> None:
    seen = {e.TYPE for e in ALL_EVENTS}
    assert seen == set(EVENT_TYPES)


@pytest.mark.parametrize("event", ALL_EVENTS,
                         ids=lambda e: e.TYPE)
def test_round_trip(event: Event) -> None:
    type_, version, data = to_stored(event)
    assert (type_, version) == (event.TYPE, event.SCHEMA_VERSION)
    assert only_json_types(data)
    # What the store writes and reads back is JSON text.
    assert from_stored(type_, version, json.loads(json.dumps(data))) == event


def test_datetimes_are_utc_with_microseconds_and_z() -> None:
    _, _, data = to_stored(ApiKeyRevoked(key_id=ApiKeyId(uuid.UUID(int=1)), at=at()))
    assert data["at"] == "2026-06-01T09:00:00.000000Z"
    _, _, data = to_stored(ApiKeyRevoked(key_id=ApiKeyId(uuid.UUID(int=1)), at=AT))
    assert data["at"] == "2026-06-01T09:00:00.000123Z"


def test_clock_payload_shape() -> None:
    opened = ticket_history()[0]
    _, _, data = to_stored(opened)
    assert data["clocks"]["first_response"]["due_at"] == "2026-06-01T17:00:00.000000Z"
    assert data["clocks"]["first_response"]["target_ms"] == 8 * 3_600_000
    assert data["requester"] == {"email": "ann@example.com", "name": "Ann", "contact_id": None}


def test_ticket_opened_v1_is_upcast() -> None:
    current = ticket_history()[0]
    assert isinstance(current, TicketOpened) and TicketOpened.SCHEMA_VERSION == 2
    _, _, data = to_stored(current)
    v1 = {k: v for k, v in data.items() if k != "requester"}
    v1["requester_email"] = "ann@example.com"
    v1["requester_name"] = "Ann"
    assert from_stored("TicketOpened", 1, v1) == current
    del v1["requester_name"]
    upcast = from_stored("TicketOpened", 1, v1)
    assert isinstance(upcast, TicketOpened)
    assert upcast.requester.email == "ann@example.com" and upcast.requester.name is None


def test_unknown_type_and_versions_are_refused() -> None:
    with pytest.raises(UnknownEventType, match="TicketExploded"):
        from_stored("TicketExploded", 1, {})
    with pytest.raises(UnknownEventType):
        from_stored("TicketAssigned", 2, {"assignee": None, "at": "2026-06-01T09:00:00Z"})
    with pytest.raises(UnknownEventType):
        from_stored("TicketOpened", 1, {}, upcasters={})


def test_payload_that_does_not_fit_is_refused() -> None:
    with pytest.raises(ValidationFailed):
        from_stored("TicketAssigned", 1, {"assignee": "nope", "at": "2026-06-01T09:00:00Z"})
    with pytest.raises(ValidationFailed):
        from_stored("TicketAssigned", 1, {"assignee": None, "at": "x", "extra": 1})


def test_floats_never_reach_event_data() -> None:
    with pytest.raises(ValueError, match="integers"):
        SettingsChanged(settings={"ratio": 0.5}, at=AT)


def test_naive_datetimes_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        ApiKeyRevoked(key_id=ApiKeyId(uuid.UUID(int=1)), at=datetime(2026, 6, 1))
