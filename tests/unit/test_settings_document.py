"""Stored settings documents read as the domain's value, laid over the defaults, with the
domain's rules; the wire model keeps the same rules and renders the same document."""

from __future__ import annotations

import pytest

from domain.errors import ValidationFailed
from domain.sla import DEFAULT_TARGETS, CALENDAR_24x7
from domain.values import Priority, TicketState
from projections.tenant_settings import DEFAULT_SETTINGS, read_document, settings_document


def test_no_row_reads_as_the_defaults():
    doc = read_document(None)
    assert doc == DEFAULT_SETTINGS
    settings = doc.settings()
    assert settings.policy.targets == DEFAULT_TARGETS
    assert settings.policy.calendar == CALENDAR_24x7
    assert (settings.sweep.pending_days, settings.sweep.solved_days) == (7, 4)


def test_a_partial_document_keeps_the_defaults_it_leaves_out():
    read = read_document({"sla_targets": {"normal": {"first_response_ms": 60_000}},
                          "sweep": {"solved_days": 2}})
    doc = read.settings()
    assert doc.targets[Priority.NORMAL].first_response_ms == 60_000
    assert doc.targets[Priority.NORMAL].resolution_ms == \
        DEFAULT_TARGETS[Priority.NORMAL].resolution_ms
    assert doc.targets[Priority.URGENT].first_response_ms == \
        DEFAULT_TARGETS[Priority.URGENT].first_response_ms
    assert (doc.sweep.pending_days, doc.sweep.solved_days) == (7, 2)
    # A full document, as GET /v1/settings shows it.
    assert set(read.document()) == {"sla_targets", "business_hours", "paused_states", "sweep",
                                   "group_sla_targets", "text_search", "widget_origins"}
    assert doc.text_search == "simple"
    assert doc.widget_origins == ()


def test_stored_and_requested_documents_pass_the_same_rules():
    doc = read_document({"paused_states": ["solved", "on_hold"]})
    assert doc.settings().paused_states == (TicketState.ON_HOLD, TicketState.SOLVED)
    assert doc.document()["paused_states"] == ["on_hold", "solved"]
    assert doc.settings().policy.paused_states == {TicketState.ON_HOLD, TicketState.SOLVED}
    for bad in ({"sla_targets": {"someday": {"first_response_ms": 1, "resolution_ms": 2}}},
                {"sla_targets": {"low": {"first_response_ms": 10, "resolution_ms": 5}}},
                {"paused_states": ["open"]},
                {"sweep": {"pending_days": 0}},
                {"colour": "blue"},
                ["not", "an", "object"]):
        with pytest.raises(ValidationFailed) as info:
            read_document(bad)
        assert info.value.field == "settings"


def test_docs_settings_md_documents_every_key_and_its_example_is_a_valid_document():
    import json
    import re
    from pathlib import Path

    from api.schemas.settings import FileLimitsDoc, SlaTargetDoc, SweepDoc, TenantSettingsDoc
    from domain.business_hours import Calendar, inverted_shifts

    text = (Path(__file__).parents[2] / "docs" / "settings.md").read_text()
    for model in (TenantSettingsDoc, SlaTargetDoc, SweepDoc, Calendar, FileLimitsDoc):
        for name in model.model_fields:
            assert f"`{name}`" in text, f"docs/settings.md does not name {name}"
    example = re.search(r"```json\n(.*?)```", text, re.S)
    assert example is not None
    body = json.loads(example.group(1))
    doc = TenantSettingsDoc.model_validate(body)
    assert doc.business_hours is not None and not inverted_shifts(doc.business_hours)
    # The wire model's value renders as the document the wire model reads, and as a
    # stored document reads.
    assert settings_document(doc.to_settings()) == doc.model_dump(mode="json")
    assert read_document(body).document() == doc.model_dump(mode="json")


def test_widget_origins_are_origins_only_in_the_form_browsers_send():
    doc = read_document({"widget_origins": ["HTTPS://Shop.Example.COM:443",
                                            "http://localhost:3000", "http://[::1]:8080"]})
    assert doc.settings().widget_origins == ("http://[::1]:8080", "http://localhost:3000",
                                             "https://shop.example.com")
    for bad in ("https://shop.example.com/", "https://shop.example.com/widget",
                "https://*.example.com", "*", "null", "shop.example.com",
                "ftp://shop.example.com", "https://user@shop.example.com",
                "https://shop.example.com?x=1", "https://shop.example.com:99999",
                " https://shop.example.com", "https://-shop.example.com",
                "https://shop.example.com#top", "https://bücher.example"):
        with pytest.raises(ValidationFailed):
            read_document({"widget_origins": [bad]})
    with pytest.raises(ValidationFailed):
        read_document({"widget_origins": ["https://a.example", "HTTPS://A.example"]})
