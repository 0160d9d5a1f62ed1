"""The event vocabulary: every event class by its ``TYPE``, and the kinds of stream
with the events each holds. The mapper (domain/mapper.py), upcasting, the changes feed
and the live feed read these lists and no other.
"""

from __future__ import annotations

from domain.events import (
    CONTACT_EVENTS,
    FIELD_EVENTS,
    GROUP_EVENTS,
    ORGANIZATION_EVENTS,
    TENANT_EVENTS,
    Event,
)
from domain.ticket.events import TICKET_EVENTS
from domain.workflow_events import (
    CALENDAR_EVENTS,
    MACRO_EVENTS,
    RULE_EVENTS,
    SLA_POLICY_EVENTS,
    VIEW_EVENTS,
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
    "EVENT_TYPES",
    "STREAM_KINDS",
    "STREAM_TYPES",
]
