"""Replacing a tenant's settings (SLA targets, business hours, paused states, sweep
windows, ...). The value and its rules are ``domain.tenant_settings``; the stored
document and its mapping ``projections.tenant_settings``. A change is also
``SettingsChanged`` on the tenant stream, in the same transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from domain.business_hours import Calendar, inverted_shifts
from domain.events import SettingsChanged
from domain.tenant_settings import TenantSettings
from eventstore.sqlfile import load_queries
from eventstore.store import Session
from handlers.errors import Invalid, VersionMismatch
from handlers.tenant_events import record
from projections.groups import unknown_groups
from projections.search import reindex
from projections.tenant_settings import load_document, settings_document

Q = load_queries(Path(__file__).with_name("queries.sql"))


@dataclass(frozen=True, slots=True)
class ReplaceSettings:
    """Replace the whole of the settings, if they are at ``expected_version`` (None:
    any)."""

    settings: TenantSettings
    at: datetime
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class SettingsState:
    document: dict[str, Any]
    version: int


async def replace_settings(uow: Session, command: ReplaceSettings) -> SettingsState:
    """Store the document; the same document again changes nothing and records
    nothing (once one was stored). A business-hours shift must end after it starts."""
    _refuse_inverted_shifts(command.settings.business_hours)
    groups = list(command.settings.group_targets)
    unknown = await unknown_groups(uow.conn, uow.tenant_id, groups) if groups else []
    if unknown:
        reason = f"no group {unknown[0]} in this tenant"
        raise Invalid("unknown_group", reason, reason=reason,
                      field=f"group_sla_targets.{unknown[0]}", kind="unknown_group")
    current, version = await load_document(uow.conn, uow.tenant_id)
    if command.expected_version is not None and command.expected_version != version:
        raise VersionMismatch(f"the settings are at version {version}", version)
    doc = settings_document(command.settings)
    if current.document() == doc and version > 0:
        return SettingsState(doc, version)
    row = await uow.conn.fetchrow(Q["put_settings"], uow.tenant_id, doc, command.at)
    assert row is not None
    if current.settings().text_search != command.settings.text_search:
        # The index and the queries must be built with the same configuration.
        await reindex(uow.conn, uow.tenant_id)
    await record(uow, SettingsChanged(settings=doc, at=command.at))
    return SettingsState(doc, row["version"])


def _refuse_inverted_shifts(calendar: Calendar | None) -> None:
    if calendar is None:
        return
    for weekday, index in inverted_shifts(calendar):
        start, end = calendar.weekly[weekday][index]
        reason = (f"a shift must end after it starts, not {start}-{end}; a shift across "
                  "midnight is two shifts, one ending at 24:00 and the next day's "
                  "starting at 00:00")
        raise Invalid("validation_failed", reason, reason=reason,
                      field=f"business_hours.weekly.{weekday}.{index}")


async def get_settings(uow: Session) -> SettingsState:
    doc, version = await load_document(uow.conn, uow.tenant_id)
    return SettingsState(doc.document(), version)


__all__ = ["ReplaceSettings", "SettingsState", "get_settings", "replace_settings"]
