"""Replacing a tenant's settings (SLA targets, business hours, paused states, sweep
windows, ...).

The settings are an aggregate (``domain.tenant_settings``) on the tenant stream; the
``tenant_settings`` row (``projections.tenant_settings`` reads it) is its state, with
its version, written in the same transaction as ``SettingsChanged``. Here are the
rules that need the tenant's rows: every group with targets is a group of the tenant,
the version the caller expects is the current one, and a tenant whose clocks run on
SLA policies (docs/sla.md) is told so when it changes the settings' SLA targets, which
would set no clock, rather than having them stored and ignored. A new text-search
configuration rebuilds the tenant's search index in the same transaction.
"""

from __future__ import annotations

from pathlib import Path

from domain.errors import ValidationFailed
from domain.tenant_settings import (
    ReplaceSettings,
    TenantSettings,
    TenantSettingsState,
    decide_settings,
    evolve_settings,
)
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, VersionMismatch
from handlers.tenant_events import record_all
from projections.groups import unknown_groups
from projections.search import reindex
from projections.sla_policies import has_policies, lock_policies
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
    await _refuse_superseded(uow, state.value, command.settings)
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


def superseded_changes(before: TenantSettings, after: TenantSettings) -> list[str]:
    """The SLA target keys ``after`` changes from ``before``: those SLA policies take
    over. ``business_hours`` is not one of them: it still sets the hours of rules
    (docs/rules.md), though no clock runs on it once there are policies."""
    changed = []
    if dict(before.targets) != dict(after.targets):
        changed.append("sla_targets")
    if ({g: dict(t) for g, t in before.group_targets.items()}
            != {g: dict(t) for g, t in after.group_targets.items()}):
        changed.append("group_sla_targets")
    return changed


async def _refuse_superseded(uow: UnitOfWork, before: TenantSettings,
                             after: TenantSettings) -> None:
    changed = superseded_changes(before, after)
    if not changed:
        return
    # Under the lock a first policy is created with, so none appears before commit.
    await lock_policies(uow.conn, uow.tenant_id)
    if await has_policies(uow.conn, uow.tenant_id):
        raise Conflict(
            "sla_settings_superseded",
            f"{' and '.join(changed)} set no SLA clock on this tenant: its clocks run on "
            "its SLA policies; change targets at /v1/sla-policies and business hours "
            "at /v1/calendars", fields=changed)


async def get_settings(uow: UnitOfWork) -> TenantSettingsState:
    doc, version = await load_document(uow.conn, uow.tenant_id)
    return TenantSettingsState(doc.settings(), version)


__all__ = ["ReplaceSettings", "get_settings", "replace_settings"]
