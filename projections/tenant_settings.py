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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from pydantic import ValidationError

from domain.errors import ValidationFailed
from domain.ids import TenantId
from domain.tenant_settings import DEFAULT_SETTINGS as DEFAULT_VALUE
from domain.tenant_settings import (
    SweepWindows,
    TenantSettings,
    settings_document,
    settings_from_document,
    widget_origin,
)
from eventstore.sqlfile import load_queries
from projections.search import TEXT_SEARCH_CONFIGS

Q = load_queries(Path(__file__).with_name("queries.sql"))

def text_search_config(value: Any) -> str:
    """A text-search configuration search knows (projections/search.py)."""
    if value not in TEXT_SEARCH_CONFIGS:
        raise ValueError("text_search must be one of " + ", ".join(TEXT_SEARCH_CONFIGS))
    return str(value)


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
        value = settings_from_document(merged)
        text_search_config(value.text_search)
        return SettingsDocument(value)
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
