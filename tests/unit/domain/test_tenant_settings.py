"""Given the settings, when they are replaced, then events: the tenant settings
aggregate, and the value's rules whatever it is made from."""

from __future__ import annotations

import dataclasses

import pytest

from domain.attachment import FileLimits
from domain.business_hours import Calendar
from domain.errors import CorruptStream, ValidationFailed
from domain.events import SettingsChanged, WebhookConfigured
from domain.sla import SlaTarget
from domain.tenant_settings import (
    DEFAULT_SETTINGS,
    ReplaceSettings,
    SweepWindows,
    TenantSettings,
    TenantSettingsState,
    decide_settings,
    evolve_settings,
    settings_document,
    settings_from_document,
)
from domain.values import Priority, TicketState
from tests.unit.domain.support import at

NEVER_SET = TenantSettingsState(DEFAULT_SETTINGS, 0)
HOURS = Calendar(timezone="Europe/Berlin", weekly={0: [("09:00", "17:00")]})


def test_the_first_replacement_is_recorded_even_as_the_defaults():
    [event] = decide_settings(ReplaceSettings(DEFAULT_SETTINGS, at()), NEVER_SET)
    assert event == SettingsChanged(settings=settings_document(DEFAULT_SETTINGS), at=at())
    assert evolve_settings(NEVER_SET, event) == TenantSettingsState(DEFAULT_SETTINGS, 1)


def test_the_same_settings_again_record_nothing_and_a_change_records_the_whole():
    state = TenantSettingsState(DEFAULT_SETTINGS, 3)
    assert decide_settings(ReplaceSettings(DEFAULT_SETTINGS, at(1)), state) == []
    changed = dataclasses.replace(DEFAULT_SETTINGS, business_hours=HOURS,
                                  sweep=SweepWindows(5, 2))
    [event] = decide_settings(ReplaceSettings(changed, at(1)), state)
    assert isinstance(event, SettingsChanged)
    assert event.settings["sweep"] == {"pending_days": 5, "solved_days": 2}
    assert event.settings["business_hours"]["weekly"] == {"0": [["09:00", "17:00"]]}
    after = evolve_settings(state, event)
    assert after.version == 4 and after.value == changed
    assert after.value.policy.calendar == HOURS


def test_a_shift_must_end_after_it_starts():
    night = Calendar(timezone="UTC", weekly={2: [("08:00", "12:00"), ("22:00", "06:00")]})
    with pytest.raises(ValidationFailed) as info:
        decide_settings(ReplaceSettings(dataclasses.replace(DEFAULT_SETTINGS,
                                                            business_hours=night), at()),
                        NEVER_SET)
    assert info.value.field == "business_hours.weekly.2.1"


def test_only_settings_changes_evolve_the_settings():
    with pytest.raises(CorruptStream):
        evolve_settings(NEVER_SET, WebhookConfigured(url="https://x.example", event_types=(),
                                                     enabled=True, at=at()))


def test_the_value_keeps_its_rules_in_a_canonical_form():
    value = TenantSettings(paused_states=(TicketState.SOLVED, TicketState.ON_HOLD),
                           widget_origins=("HTTPS://B.example", "http://a.example:80"))
    assert value.paused_states == (TicketState.ON_HOLD, TicketState.SOLVED)
    assert value.widget_origins == ("http://a.example", "https://b.example")
    for bad in ({"paused_states": (TicketState.OPEN,)},
                {"targets": {Priority.LOW: SlaTarget(1, 2)}},
                {"targets": {**DEFAULT_SETTINGS.targets, Priority.LOW: SlaTarget(10, 5)}},
                {"widget_origins": ("https://a.example/",)},
                {"widget_origins": ("https://a.example", "HTTPS://A.example")}):
        with pytest.raises(ValueError):
            TenantSettings(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        SweepWindows(0, 4)


def test_the_document_reads_back_as_the_value_it_renders():
    value = dataclasses.replace(DEFAULT_SETTINGS, business_hours=HOURS,
                                widget_origins=("https://shop.example",))
    doc = settings_document(value)
    assert list(doc) == ["sla_targets", "business_hours", "paused_states", "sweep",
                         "group_sla_targets", "text_search", "widget_origins"]
    assert settings_from_document(doc) == value
    # File limits are rendered once set (tenants on the defaults record what they did).
    limited = dataclasses.replace(value, files=FileLimits(max_file_bytes=1000, per_message=2))
    assert settings_document(limited)["attachments"] == {"max_file_bytes": 1000,
                                                         "per_message": 2}
    assert settings_from_document(settings_document(limited)) == limited
    for bad in ({**doc, "colour": "blue"}, {**doc, "sweep": {"pending_days": 1}},
                {**doc, "paused_states": "pending"}, ["not", "an", "object"]):
        with pytest.raises((ValueError, TypeError)):
            settings_from_document(bad)


def test_group_scoped_access_is_off_unless_set_and_only_a_boolean():
    assert "group_scoped_access" not in settings_document(DEFAULT_SETTINGS)
    on = dataclasses.replace(DEFAULT_SETTINGS, group_scoped_access=True)
    document = settings_document(on)
    assert document["group_scoped_access"] is True
    assert settings_from_document(document) == on
    with pytest.raises(ValueError, match="group_scoped_access must be true or false"):
        settings_from_document(document | {"group_scoped_access": "yes"})
