"""Tenant settings: the JSON document in ``tenant_settings.settings``, its one model.

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

One model serves every reader and writer. ``PUT /v1/settings`` validates a request
body with it (every key required); a stored document is read by laying it over the
defaults first (``read_document``), so a document written before a key existed, or
naming only some priorities or fields, reads as the defaults for what it leaves out,
and then passes the same validation. The write path and the sweep take the domain's
view of it (``TenantSettingsDoc.settings``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import asyncpg
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from domain.business_hours import Calendar
from domain.errors import ValidationFailed
from domain.ids import TenantId
from domain.sla import DEFAULT_PAUSED_STATES, DEFAULT_TARGETS, SlaPolicy, SlaTarget
from domain.values import Priority, TicketState
from eventstore.sqlfile import load_queries
from projections.search import TEXT_SEARCH_CONFIGS

Q = load_queries(Path(__file__).with_name("queries.sql"))

DEFAULT_PENDING_DAYS = 7
DEFAULT_SOLVED_DAYS = 4
DAY_MS = 86_400_000
MAX_TARGET_MS = 366 * DAY_MS
PAUSABLE = frozenset({TicketState.PENDING, TicketState.ON_HOLD, TicketState.SOLVED})
MAX_WIDGET_ORIGINS = 50

_ORIGIN = re.compile(
    r"^(?P<scheme>https?)://"
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def widget_origin(value: str) -> str:
    """A web origin as a browser sends it in ``Origin``: ``http`` or ``https``, a host
    (a DNS name in ASCII, punycode for others, or an IP literal) and an optional port,
    and nothing else: no path (not even ``/``), query, user or wildcard. Returned in
    the form browsers send (scheme and host in lower case, a default port left out),
    so it compares equal to the header; anything else raises ``ValueError``."""
    match = _ORIGIN.match(value.lower()) if len(value) <= 300 else None
    if match is None:
        raise ValueError(f"{value!r} is not an origin: write scheme://host or "
                         "scheme://host:port (http or https; no path, not even a "
                         "trailing /, no wildcard)")
    scheme, host, port = match.group("scheme", "host", "port")
    if port is not None and not 1 <= int(port) <= 65535:
        raise ValueError(f"{value!r} has a port out of range")
    keep = port is not None and int(port) != _DEFAULT_PORTS[scheme]
    return f"{scheme}://{host}" + (f":{int(port)}" if keep else "")


@dataclass(frozen=True, slots=True)
class SweepWindows:
    """After how many days untouched a pending ticket is solved, a solved one closed."""

    pending_days: int = DEFAULT_PENDING_DAYS
    solved_days: int = DEFAULT_SOLVED_DAYS


@dataclass(frozen=True, slots=True)
class TenantSettings:
    """A tenant's settings as the domain uses them: the SLA policy, and sweeps."""

    policy: SlaPolicy = field(default_factory=SlaPolicy)
    sweep: SweepWindows = field(default_factory=SweepWindows)


class SlaTargetDoc(BaseModel):
    """Targets of one priority, in business milliseconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_response_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]
    resolution_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]

    @model_validator(mode="after")
    def _ordered(self) -> SlaTargetDoc:
        if self.first_response_ms > self.resolution_ms:
            raise ValueError("first_response_ms must not exceed resolution_ms")
        return self


class SweepDoc(BaseModel):
    """Days of inactivity before the sweep solves a pending ticket / closes a solved one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pending_days: Annotated[StrictInt, Field(ge=1, le=365)]
    solved_days: Annotated[StrictInt, Field(ge=1, le=365)]


TextSearchConfig = Annotated[str, Field(json_schema_extra={"enum": list(TEXT_SEARCH_CONFIGS)})]


def _known_config(value: str) -> str:
    if value not in TEXT_SEARCH_CONFIGS:
        raise ValueError("text_search must be one of " + ", ".join(TEXT_SEARCH_CONFIGS))
    return value


class TenantSettingsDoc(BaseModel):
    """The whole settings document; a PUT must give every key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sla_targets: dict[Priority, SlaTargetDoc]
    business_hours: Calendar | None
    paused_states: list[TicketState]
    sweep: SweepDoc
    group_sla_targets: dict[UUID, dict[Priority, SlaTargetDoc]] = Field(default_factory=dict)
    text_search: TextSearchConfig = "simple"
    """The text-search configuration of search (projections/search.py); optional in a
    PUT, so documents written before it existed stay valid."""
    widget_origins: list[str] = Field(default_factory=list, max_length=MAX_WIDGET_ORIGINS)
    """The origins the embeddable widget may be called from (``widget_origin``);
    optional, ``[]`` (the default) turns the widget off."""

    @field_validator("sla_targets")
    @classmethod
    def _every_priority(cls, value: dict[Priority, SlaTargetDoc]) -> dict[Priority, SlaTargetDoc]:
        missing = [p.value for p in Priority if p not in value]
        if missing:
            raise ValueError("targets are required for every priority; missing: "
                             + ", ".join(missing))
        return {p: value[p] for p in Priority}

    @field_validator("group_sla_targets")
    @classmethod
    def _canonical_groups(cls, value: dict[UUID, dict[Priority, SlaTargetDoc]]
                          ) -> dict[UUID, dict[Priority, SlaTargetDoc]]:
        # A canonical order, so equal settings make equal events.
        return {g: {p: value[g][p] for p in Priority if p in value[g]}
                for g in sorted(value, key=str)}

    @field_validator("text_search")
    @classmethod
    def _config(cls, value: str) -> str:
        return _known_config(value)

    @field_validator("widget_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        origins = [widget_origin(v) for v in value]
        if len(set(origins)) != len(origins):
            raise ValueError("widget_origins lists an origin twice")
        # A canonical order, so equal settings make equal events.
        return sorted(origins)

    @field_validator("paused_states")
    @classmethod
    def _pausable(cls, value: list[TicketState]) -> list[TicketState]:
        wrong = [s.value for s in value if s not in PAUSABLE]
        if wrong:
            raise ValueError("only pending, on_hold and solved can pause clocks; not "
                             + ", ".join(wrong))
        if len(set(value)) != len(value):
            raise ValueError("paused_states lists a state twice")
        # A canonical order, so equal settings make equal events.
        return sorted(value, key=list(TicketState).index)

    def document(self) -> dict[str, Any]:
        """The JSON document as stored (ints and strings only)."""
        return self.model_dump(mode="json")

    def settings(self) -> TenantSettings:
        """The domain's view: the SLA policy to decide with, and the sweep windows."""
        policy = SlaPolicy(
            targets={p: SlaTarget(t.first_response_ms, t.resolution_ms)
                     for p, t in self.sla_targets.items()},
            paused_states=frozenset(self.paused_states),
            group_targets={g: {p: SlaTarget(t.first_response_ms, t.resolution_ms)
                               for p, t in targets.items()}
                           for g, targets in self.group_sla_targets.items()},
            # No business hours: the clocks run on calendar time.
            **({} if self.business_hours is None else {"calendar": self.business_hours}),
        )
        return TenantSettings(policy=policy,
                              sweep=SweepWindows(self.sweep.pending_days, self.sweep.solved_days))


DEFAULT_SETTINGS = TenantSettingsDoc(
    sla_targets={p: SlaTargetDoc(first_response_ms=t.first_response_ms,
                                 resolution_ms=t.resolution_ms)
                 for p, t in DEFAULT_TARGETS.items()},
    business_hours=None,
    paused_states=sorted(DEFAULT_PAUSED_STATES, key=list(TicketState).index),
    sweep=SweepDoc(pending_days=DEFAULT_PENDING_DAYS, solved_days=DEFAULT_SOLVED_DAYS),
)


def read_document(stored: Any) -> TenantSettingsDoc:
    """A stored document (None: no row) laid over the defaults, then validated.

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
        return TenantSettingsDoc.model_validate(merged)
    except ValidationError as exc:
        raise ValidationFailed(f"stored settings are invalid: {exc}", field="settings") from exc


async def load_document(conn: asyncpg.Connection,
                        tenant_id: TenantId) -> tuple[TenantSettingsDoc, int]:
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
    "SweepWindows",
    "TenantSettings",
    "TenantSettingsDoc",
    "load_document",
    "load_settings",
    "read_document",
    "widget_origin",
]
