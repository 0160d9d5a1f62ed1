"""Replacing a tenant's settings (SLA targets, business hours, paused states, sweep
windows, ...).

The settings are an aggregate (``domain.tenant_settings``) on the tenant stream; the
``tenant_settings`` row (``projections.tenant_settings`` reads it) is its state, with
its version, written in the same transaction as ``SettingsChanged``. Here are the
rules that need the tenant's rows: every group with targets is a group of the tenant,
and the version the caller expects is the current one. A new text-search
configuration rebuilds the tenant's search index in the same transaction.
"""

from __future__ import annotations

from pathlib import Path

from domain.errors import ValidationFailed
from domain.tenant_settings import (
    ReplaceSettings,
    TenantSettingsState,
    decide_settings,
    evolve_settings,
)
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Invalid, VersionMismatch
from handlers.tenant_events import record_all
from projections.groups import unknown_groups
from projections.search import reindex
from projections.tenant_settings import load_document

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def replace_settings(uow: UnitOfWork, command: ReplaceSettings, *,
                           expected_version: int | None = None) -> TenantSettingsState:
    """Store the settings, if they are at ``expected_version`` (None: any); the same
    settings again change nothing and record nothing (once some were stored)."""
    groups = list(command.settings.group_targets)
    unknown = await unknown_groups(uow.conn, uow.tenant_id, groups) if groups else []
    current, version = await load_document(uow.conn, uow.tenant_id)
    state = TenantSettingsState(current.settings(), version)
    try:
        events = decide_settings(command, state)
    except ValidationFailed as exc:
        raise Invalid("validation_failed", exc.message, reason=exc.message,
                      field=exc.field) from exc
    if unknown:
        reason = f"no group {unknown[0]} in this tenant"
        raise Invalid("unknown_group", reason, reason=reason,
                      field=f"group_sla_targets.{unknown[0]}", kind="unknown_group")
    if expected_version is not None and expected_version != version:
        raise VersionMismatch(f"the settings are at version {version}", version)
    if not events:
        return state
    after = state
    for event in events:
        after = evolve_settings(after, event)
    row = await uow.conn.fetchrow(Q["put_settings"], uow.tenant_id, after.document, command.at)
    assert row is not None and row["version"] == after.version
    if state.value.text_search != after.value.text_search:
        # The index and the queries must be built with the same configuration.
        await reindex(uow.conn, uow.tenant_id)
    await record_all(uow, events)
    return after


async def get_settings(uow: UnitOfWork) -> TenantSettingsState:
    doc, version = await load_document(uow.conn, uow.tenant_id)
    return TenantSettingsState(doc.settings(), version)


__all__ = ["ReplaceSettings", "get_settings", "replace_settings"]
