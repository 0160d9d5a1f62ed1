"""Tenant settings as stored: the JSON document in ``tenant_settings.settings``, and
its mapping to the domain's value (``domain.tenant_settings.TenantSettings``).

Document shape::

    {
      "sla_targets": {"urgent": {"first_response_ms": 3600000, "resolution_ms": 28800000}, ...},
      "business_hours": null | {"timezone": "Europe/Berlin",
                                "weekly": {"0": [["09:00", "17:00"]], ...},
                                "holidays": ["2026-12-25"]},
      "paused_states": ["pending", "solved"],
      "sweep": {"pending_days": 7, "solved_days": 4},
      "group_sla_targets": {"<group id>": {"urgent": {...}, ...}, ...},
      "text_search": "simple",
      "widget_origins": ["https://www.example.com", "http://localhost:3000"]
    }

``group_sla_targets`` is optional (``{}``): a group's targets for the priorities it
names; a (group, priority) it does not name uses ``sla_targets``. ``widget_origins``
is optional (``[]``: the embeddable widget is off): the web origins the tenant's widget
may call ``/v1/widget/...`` from (``widget_origin``).

The same document is the ``SettingsChanged`` payload and the body of ``/v1/settings``
(whose wire model is ``api.schemas.settings``). ``settings_document`` renders a value
as the document; a stored document is read by laying it over the defaults first
(``read_document``), so a document written before a key existed, or naming only some
priorities or fields, reads as the defaults for what it leaves out, and then becomes
a value, which keeps the domain's rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
from pydantic import ValidationError

from domain.business_hours import Calendar
from domain.errors import ValidationFailed
from domain.ids import TenantId
from domain.sla import SlaTarget
from domain.tenant_settings import DEFAULT_SETTINGS as DEFAULT_VALUE
from domain.tenant_settings import SweepWindows, TenantSettings, widget_origin
from domain.values import Priority, TicketState
from eventstore.sqlfile import load_queries
from projections.search import TEXT_SEARCH_CONFIGS

Q = load_queries(Path(__file__).with_name("queries.sql"))

KEYS = ("sla_targets", "business_hours", "paused_states", "sweep", "group_sla_targets",
        "text_search", "widget_origins")
"""The document's keys, in the order it is rendered."""


def _target(target: SlaTarget) -> dict[str, int]:
    return {"first_response_ms": target.first_response_ms,
            "resolution_ms": target.resolution_ms}


def settings_document(settings: TenantSettings) -> dict[str, Any]:
    """The JSON document of a value (ints and strings only), as stored and recorded."""
    calendar = settings.business_hours
    return {
        "sla_targets": {p.value: _target(t) for p, t in settings.targets.items()},
        "business_hours": None if calendar is None else calendar.model_dump(mode="json"),
        "paused_states": [s.value for s in settings.paused_states],
        "sweep": {"pending_days": settings.sweep.pending_days,
                  "solved_days": settings.sweep.solved_days},
        "group_sla_targets": {str(g): {p.value: _target(t) for p, t in targets.items()}
                              for g, targets in settings.group_targets.items()},
        "text_search": settings.text_search,
        "widget_origins": list(settings.widget_origins),
    }


def _object(value: Any, keys: tuple[str, ...], *, required: bool = True) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object with {', '.join(keys)}")
    unknown = sorted(set(value) - set(keys))
    missing = [k for k in keys if k not in value] if required else []
    if unknown or missing:
        raise ValueError(f"unknown keys {unknown}, missing keys {missing}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("expected a list")
    return value


def _targets(value: Any) -> dict[Priority, SlaTarget]:
    if not isinstance(value, dict):
        raise ValueError("targets must be an object by priority")
    return {Priority(name): SlaTarget(**_object(t, ("first_response_ms", "resolution_ms")))
            for name, t in value.items()}


def text_search_config(value: Any) -> str:
    """A text-search configuration search knows (projections/search.py)."""
    if value not in TEXT_SEARCH_CONFIGS:
        raise ValueError("text_search must be one of " + ", ".join(TEXT_SEARCH_CONFIGS))
    return str(value)


def settings_from_document(document: Any) -> TenantSettings:
    """The value of a whole document (every key but the optional ones); ``ValueError``
    for one that does not fit."""
    doc = _object(document, KEYS, required=False)
    for key in KEYS[:4]:
        if key not in doc:
            raise ValueError(f"{key} is required")
    hours = doc["business_hours"]
    origins = _list(doc.get("widget_origins", []))
    if not all(isinstance(o, str) for o in origins):
        raise ValueError("widget_origins must be strings")
    groups = doc.get("group_sla_targets", {})
    if not isinstance(groups, dict):
        raise ValueError("group_sla_targets must be an object by group id")
    return TenantSettings(
        targets=_targets(doc["sla_targets"]),
        business_hours=None if hours is None else Calendar.model_validate(hours),
        paused_states=tuple(TicketState(s) for s in _list(doc["paused_states"])),
        sweep=SweepWindows(**_object(doc["sweep"], ("pending_days", "solved_days"))),
        group_targets={UUID(g): _targets(t) for g, t in groups.items()},
        text_search=text_search_config(doc.get("text_search", "simple")),
        widget_origins=tuple(origins),
    )


@dataclass(frozen=True, slots=True)
class SettingsDocument:
    """A settings document read: the value, and the document it renders as now."""

    value: TenantSettings

    def settings(self) -> TenantSettings:
        """The domain's value: the SLA policy to decide with, the sweep windows, ..."""
        return self.value

    def document(self) -> dict[str, Any]:
        return settings_document(self.value)


DEFAULT_SETTINGS = SettingsDocument(DEFAULT_VALUE)


def read_document(stored: Any) -> SettingsDocument:
    """A stored document (None: no row) laid over the defaults, then read as a value.

    Raises ``ValidationFailed`` (field ``settings``) for a stored document that does
    not fit, so a corrupt row fails loudly and names itself.
    """
    if stored is None:
        return DEFAULT_SETTINGS
    if not isinstance(stored, dict):
        raise ValidationFailed("stored settings must be an object", field="settings")
    merged: dict[str, Any] = DEFAULT_SETTINGS.document()
    for key, value in stored.items():
        if key == "sla_targets" and isinstance(value, dict):
            targets: dict[str, Any] = dict(merged["sla_targets"])
            for name, target in value.items():
                default = targets.get(name)
                if isinstance(default, dict) and isinstance(target, dict):
                    targets[name] = {**default, **target}
                else:
                    targets[name] = target
            merged[key] = targets
        elif key == "sweep" and isinstance(value, dict):
            merged[key] = {**merged["sweep"], **value}
        else:
            merged[key] = value
    try:
        return SettingsDocument(settings_from_document(merged))
    except (ValueError, TypeError, ValidationError) as exc:
        raise ValidationFailed(f"stored settings are invalid: {exc}", field="settings") from exc


async def load_document(conn: asyncpg.Connection,
                        tenant_id: TenantId) -> tuple[SettingsDocument, int]:
    """The tenant's settings document and its version (0 for the defaults), read in the
    caller's tenant-armed transaction."""
    row = await conn.fetchrow(Q["tenant_settings"], tenant_id)
    if row is None:
        return DEFAULT_SETTINGS, 0
    return read_document(row["settings"]), row["version"]


async def load_settings(conn: asyncpg.Connection, tenant_id: TenantId) -> TenantSettings:
    """The tenant's settings as the domain uses them."""
    doc, _ = await load_document(conn, tenant_id)
    return doc.settings()


__all__ = [
    "DEFAULT_SETTINGS",
    "KEYS",
    "SettingsDocument",
    "SweepWindows",
    "TenantSettings",
    "load_document",
    "load_settings",
    "read_document",
    "settings_document",
    "settings_from_document",
    "text_search_config",
    "widget_origin",
]
