"""Tenant settings: the JSON document in ``tenant_settings.settings`` and how it reads.

Document shape (every key optional; a missing key, or no row at all, means the default)::

    {
      "sla_targets": {"urgent": {"first_response_ms": 3600000, "resolution_ms": 28800000}, ...},
      "business_hours": null | {"timezone": "Europe/Berlin",
                                "weekly": {"0": [["09:00", "17:00"]], ...},
                                "holidays": ["2026-12-25"]},
      "paused_states": ["pending", "solved"],
      "sweep": {"pending_days": 7, "solved_days": 4}
    }

``sla_targets`` may name only some priorities: the others keep their defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from pydantic import ValidationError

from domain.business_hours import Calendar
from domain.errors import ValidationFailed
from domain.ids import TenantId
from domain.sla import DEFAULT_PAUSED_STATES, DEFAULT_TARGETS, SlaPolicy, SlaTarget
from domain.values import Priority, TicketState
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))

DEFAULT_PENDING_DAYS = 7
DEFAULT_SOLVED_DAYS = 4


@dataclass(frozen=True, slots=True)
class SweepWindows:
    """After how many days untouched a pending ticket is solved, a solved one closed."""

    pending_days: int = DEFAULT_PENDING_DAYS
    solved_days: int = DEFAULT_SOLVED_DAYS


@dataclass(frozen=True, slots=True)
class TenantSettings:
    """A tenant's settings, parsed: the SLA policy the domain decides with, and sweeps."""

    policy: SlaPolicy = field(default_factory=SlaPolicy)
    sweep: SweepWindows = field(default_factory=SweepWindows)


def settings_from_json(doc: dict[str, Any] | None) -> TenantSettings:
    """Parse a settings document (None: all defaults).

    Raises ``ValidationFailed`` (with ``field`` naming the key) for a document that does
    not fit, so the settings route can answer 422 and a corrupt row fails loudly.
    """
    if doc is None:
        return TenantSettings()
    if not isinstance(doc, dict):
        raise ValidationFailed("settings must be an object", field="settings")
    targets = dict(DEFAULT_TARGETS)
    for name, value in (doc.get("sla_targets") or {}).items():
        try:
            priority = Priority(name)
        except ValueError as exc:
            raise ValidationFailed(f"unknown priority {name!r}", field="sla_targets") from exc
        targets[priority] = _target(name, value)
    calendar_doc = doc.get("business_hours")
    paused = doc.get("paused_states")
    try:
        policy_args: dict[str, Any] = {"targets": targets}
        if calendar_doc is not None:
            policy_args["calendar"] = Calendar.model_validate(calendar_doc)
        policy_args["paused_states"] = (
            DEFAULT_PAUSED_STATES if paused is None else frozenset(TicketState(s) for s in paused)
        )
        policy = SlaPolicy(**policy_args)
    except (ValidationError, ValueError, TypeError) as exc:
        raise ValidationFailed(f"invalid SLA settings: {exc}", field="settings") from exc
    return TenantSettings(policy=policy, sweep=_sweep(doc.get("sweep")))


def _target(name: str, value: Any) -> SlaTarget:
    if not isinstance(value, dict):
        raise ValidationFailed(f"target for {name} must be an object", field="sla_targets")
    first = value.get("first_response_ms", DEFAULT_TARGETS[Priority(name)].first_response_ms)
    resolution = value.get("resolution_ms", DEFAULT_TARGETS[Priority(name)].resolution_ms)
    for number in (first, resolution):
        if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
            raise ValidationFailed(
                f"targets for {name} must be positive integers (ms)", field="sla_targets"
            )
    return SlaTarget(first, resolution)


def _sweep(value: Any) -> SweepWindows:
    if value is None:
        return SweepWindows()
    if not isinstance(value, dict):
        raise ValidationFailed("sweep must be an object", field="sweep")
    pending = value.get("pending_days", DEFAULT_PENDING_DAYS)
    solved = value.get("solved_days", DEFAULT_SOLVED_DAYS)
    for number in (pending, solved):
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 3650:
            raise ValidationFailed("sweep windows are whole days from 1 to 3650", field="sweep")
    return SweepWindows(pending, solved)


async def load_settings(conn: asyncpg.Connection, tenant_id: TenantId) -> TenantSettings:
    """The tenant's settings, read in the caller's (tenant-armed) transaction."""
    doc = await conn.fetchval(Q["tenant_settings"], tenant_id)
    return settings_from_json(doc)


__all__ = [
    "SweepWindows",
    "TenantSettings",
    "load_settings",
    "settings_from_json",
]
