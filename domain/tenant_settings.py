"""A tenant's settings as the domain holds them: SLA targets, business hours, paused
states, sweep windows, the text-search configuration and the widget's origins.

``TenantSettings`` is the value; its rules are checked when one is made, whatever it
is made from (a request body in ``api.schemas.settings``, a stored document in
``projections.tenant_settings``), so a value that exists keeps them. The rule
functions raise ``ValueError`` with the message a person reads, so the wire model can
run the same ones as validators.

The JSON document is the ``SettingsChanged`` payload (and so the stored row and the
API body): ``settings_document`` renders a value as it, ``settings_from_document``
reads one back. Laying a stored document over the defaults, and which text-search
configurations exist, are ``projections.tenant_settings``'s.

The settings are an aggregate on the tenant stream (``ReplaceSettings`` decided by
``decide_settings`` into ``SettingsChanged``), their state the row with its version
(docs/architecture.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar
from uuid import UUID

from domain.attachment import FileLimits
from domain.business_hours import Calendar, CALENDAR_24x7, inverted_shifts
from domain.errors import CorruptStream, ValidationFailed
from domain.events import Event, SettingsChanged
from domain.mail_templates import KINDS as TEMPLATE_KINDS
from domain.mail_templates import MailTemplate, TemplateInvalid, check_template
from domain.sla import DEFAULT_PAUSED_STATES, DEFAULT_TARGETS, SlaPolicy, SlaTarget
from domain.values import Priority, TicketState

DEFAULT_PENDING_DAYS = 7
DEFAULT_SOLVED_DAYS = 4
DAY_MS = 86_400_000
MAX_TARGET_MS = 366 * DAY_MS
MAX_SWEEP_DAYS = 365
PAUSABLE = frozenset({TicketState.PENDING, TicketState.ON_HOLD, TicketState.SOLVED})
MAX_WIDGET_ORIGINS = 50
DEFAULT_TEXT_SEARCH = "simple"

_ORIGIN = re.compile(
    r"^(?P<scheme>https?)://"
    r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
    r"(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*)"
    r"(?::(?P<port>[0-9]{1,5}))?$")
_DEFAULT_PORTS = {"http": 80, "https": 443}

T = TypeVar("T")


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


BRAND_COLOUR = re.compile(r"#[0-9a-f]{6}")


def brand_colour(value: str) -> str:
    """A colour in its canonical form, ``#rrggbb`` in lower case; ``ValueError`` for
    anything else (no names, no shorthand, no alpha: the pages mix it with white and
    black text by its figures, so it must be one exact colour)."""
    canonical = value.strip().lower()
    if not BRAND_COLOUR.fullmatch(canonical):
        raise ValueError("brand_colour is a colour written #rrggbb, such as #0b5fff")
    return canonical


def widget_origins(values: Iterable[str]) -> list[str]:
    """Origins in their browser form (``widget_origin``), each once, in a canonical
    order (so equal settings make equal events)."""
    origins = [widget_origin(v) for v in values]
    if len(set(origins)) != len(origins):
        raise ValueError("widget_origins lists an origin twice")
    if len(origins) > MAX_WIDGET_ORIGINS:
        raise ValueError(f"widget_origins lists at most {MAX_WIDGET_ORIGINS} origins")
    return sorted(origins)


def paused_states(states: Iterable[TicketState]) -> list[TicketState]:
    """States that pause clocks (pending, on_hold, solved), each once, in state order."""
    value = list(states)
    wrong = [s.value for s in value if s not in PAUSABLE]
    if wrong:
        raise ValueError("only pending, on_hold and solved can pause clocks; not "
                         + ", ".join(wrong))
    if len(set(value)) != len(value):
        raise ValueError("paused_states lists a state twice")
    return sorted(value, key=list(TicketState).index)


def every_priority(targets: Mapping[Priority, T]) -> dict[Priority, T]:
    """Targets for every priority, in priority order."""
    missing = [p.value for p in Priority if p not in targets]
    if missing:
        raise ValueError("targets are required for every priority; missing: "
                         + ", ".join(missing))
    return {p: targets[p] for p in Priority}


def by_group(targets: Mapping[UUID, Mapping[Priority, T]]) -> dict[UUID, dict[Priority, T]]:
    """Group targets in a canonical order (groups by id, then priority order)."""
    return {g: {p: targets[g][p] for p in Priority if p in targets[g]}
            for g in sorted(targets, key=str)}


def check_target(first_response_ms: int, resolution_ms: int) -> None:
    """One priority's targets: whole milliseconds above 0, at most ``MAX_TARGET_MS``,
    the first response no later than the resolution."""
    for ms in (first_response_ms, resolution_ms):
        if type(ms) is not int or not 0 < ms <= MAX_TARGET_MS:
            raise ValueError(f"a target is a whole number of milliseconds from 1 to "
                             f"{MAX_TARGET_MS}")
    if first_response_ms > resolution_ms:
        raise ValueError("first_response_ms must not exceed resolution_ms")


@dataclass(frozen=True, slots=True)
class SweepWindows:
    """After how many days untouched a pending ticket is solved, a solved one closed."""

    pending_days: int = DEFAULT_PENDING_DAYS
    solved_days: int = DEFAULT_SOLVED_DAYS

    def __post_init__(self) -> None:
        for days in (self.pending_days, self.solved_days):
            if type(days) is not int or not 1 <= days <= MAX_SWEEP_DAYS:
                raise ValueError(f"sweep days are whole numbers from 1 to {MAX_SWEEP_DAYS}")


STRANGER_REPLIES = ("message", "ticket")
"""What a mail on a ticket from an address that is neither its requester nor a CC
becomes: a public message on that ticket, or a ticket of its own."""


@dataclass(frozen=True, slots=True)
class MailNotices:
    """Which notification mail the desk sends (once it has a mailbox with SMTP)."""

    invitation: bool = True
    portal_link: bool = True
    acknowledgement: bool = False
    assignment: bool = False
    breach: bool = False
    follow: bool = True
    """Followers' mail (a message, a state change or an assignment by someone else):
    on, as the agents chose to follow."""

    def __post_init__(self) -> None:
        for name in TEMPLATE_KINDS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"mail_notifications.{name} must be true or false")

    def document(self) -> dict[str, bool]:
        return {name: getattr(self, name) for name in TEMPLATE_KINDS}


def mail_templates(value: Mapping[str, MailTemplate]) -> dict[str, MailTemplate]:
    """A tenant's own templates, by known kind, in the kinds' order (only their shape:
    whether they compile is ``check_templates``', on a change)."""
    unknown = sorted(set(value) - set(TEMPLATE_KINDS))
    if unknown:
        raise ValueError(f"no mail template kind {unknown[0]!r}; the kinds are "
                         + ", ".join(TEMPLATE_KINDS))
    return {k: value[k] for k in TEMPLATE_KINDS if k in value}


@dataclass(frozen=True)
class TenantSettings:
    """A tenant's settings, their rules kept: targets for every priority, states that
    may pause, origins in their canonical form. ``policy`` is the SLA view the write
    path decides with; ``business_hours`` None is calendar time."""

    targets: Mapping[Priority, SlaTarget] = field(default_factory=lambda: dict(DEFAULT_TARGETS))
    business_hours: Calendar | None = None
    paused_states: tuple[TicketState, ...] = tuple(paused_states(DEFAULT_PAUSED_STATES))
    sweep: SweepWindows = field(default_factory=SweepWindows)
    group_targets: Mapping[UUID, Mapping[Priority, SlaTarget]] = field(default_factory=dict)
    text_search: str = DEFAULT_TEXT_SEARCH
    widget_origins: tuple[str, ...] = ()
    files: FileLimits = field(default_factory=FileLimits)
    sla_warning_percent: int | None = None
    """The share of an SLA target at which a running clock is warned (``SlaWarning``),
    in percent; None: no warnings."""
    brand_colour: str | None = None
    """The colour the customer pages (portal and widget) are drawn in, ``#rrggbb`` in
    lower case (``brand_colour``); None: the pages' own blue."""
    group_scoped_access: bool = False
    """Whether agents see only the tickets of their groups, those in no group and those
    assigned to them (enforced by row-level security, migration 0600)."""
    mail_notifications: MailNotices = field(default_factory=MailNotices)
    mail_templates: Mapping[str, MailTemplate] = field(default_factory=dict)
    """The tenant's own notification templates by kind; a kind left out uses the
    default (``domain.mail_templates.DEFAULTS``)."""
    stranger_replies: str = "message"
    """One of ``STRANGER_REPLIES``."""

    def __post_init__(self) -> None:
        # Canonical forms, so equal settings compare (and record) equal.
        set_ = object.__setattr__
        set_(self, "mail_templates", mail_templates(self.mail_templates))
        if self.stranger_replies not in STRANGER_REPLIES:
            raise ValueError("stranger_replies is message or ticket")
        set_(self, "targets", every_priority(self.targets))
        set_(self, "group_targets", by_group(self.group_targets))
        set_(self, "paused_states", tuple(paused_states(self.paused_states)))
        set_(self, "widget_origins", tuple(widget_origins(self.widget_origins)))
        if self.brand_colour is not None:
            set_(self, "brand_colour", brand_colour(self.brand_colour))
        if self.sla_warning_percent is not None and not 1 <= self.sla_warning_percent <= 99:
            raise ValueError("sla_warning_percent must be 1 to 99")
        for target in [*self.targets.values(),
                       *(t for g in self.group_targets.values() for t in g.values())]:
            check_target(target.first_response_ms, target.resolution_ms)

    @cached_property
    def policy(self) -> SlaPolicy:
        """The SLA policy to decide with."""
        return SlaPolicy(
            targets=dict(self.targets), paused_states=frozenset(self.paused_states),
            group_targets={g: dict(t) for g, t in self.group_targets.items()},
            # No business hours: the clocks run on calendar time.
            calendar=CALENDAR_24x7 if self.business_hours is None else self.business_hours)


DEFAULT_SETTINGS = TenantSettings()
"""What a tenant that never set anything runs on."""


# --- the JSON document -----------------------------------------------------------------

KEYS = ("sla_targets", "business_hours", "paused_states", "sweep", "group_sla_targets",
        "text_search", "widget_origins", "attachments", "sla_warning_percent",
        "brand_colour", "group_scoped_access", "mail_notifications", "mail_templates",
        "stranger_replies")
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
        # Only when set: the documents (and SettingsChanged payloads) of tenants on the
        # defaults stay as they were before files had limits.
        **({"attachments": settings.files.document()}
           if settings.files != FileLimits() else {}),
        # The same for tenants that warn nothing.
        **({} if settings.sla_warning_percent is None
           else {"sla_warning_percent": settings.sla_warning_percent}),
        **({} if settings.brand_colour is None else {"brand_colour": settings.brand_colour}),
        # And for tenants whose agents see the whole tenant.
        **({"group_scoped_access": True} if settings.group_scoped_access else {}),
        # And for tenants that mail as the defaults say, with the default templates.
        **({"mail_notifications": settings.mail_notifications.document()}
           if settings.mail_notifications != MailNotices() else {}),
        **({"mail_templates": {k: t.document() for k, t in settings.mail_templates.items()}}
           if settings.mail_templates else {}),
        **({"stranger_replies": settings.stranger_replies}
           if settings.stranger_replies != "message" else {}),
    }


def _object(value: Any, keys: tuple[str, ...], *, required: bool = True) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object with {', '.join(keys)}")
    unknown = sorted(set(value) - set(keys))
    missing = [k for k in keys if k not in value] if required else []
    if unknown or missing:
        raise ValueError(f"unknown keys {unknown}, missing keys {missing}")
    return value


def _typed(value: Any, kind: type[T], message: str) -> T:
    """``value`` if it is a ``kind``; else ``ValueError`` saying ``message``."""
    if not isinstance(value, kind):
        raise ValueError(message)
    return value


def _list(value: Any) -> list[Any]:
    return _typed(value, list, "expected a list")


def _string(value: Any, name: str) -> str:
    return _typed(value, str, f"{name} must be a string")


def _targets(value: Any) -> dict[Priority, SlaTarget]:
    if not isinstance(value, dict):
        raise ValueError("targets must be an object by priority")
    return {Priority(name): SlaTarget(**_object(t, ("first_response_ms", "resolution_ms")))
            for name, t in value.items()}


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
        text_search=_string(doc.get("text_search", DEFAULT_TEXT_SEARCH), "text_search"),
        widget_origins=tuple(origins),
        files=_files(doc.get("attachments")),
        sla_warning_percent=_percent(doc.get("sla_warning_percent")),
        brand_colour=_colour(doc.get("brand_colour")),
        group_scoped_access=_flag(doc.get("group_scoped_access", False),
                                  "group_scoped_access"),
        mail_notifications=_notices(doc.get("mail_notifications")),
        mail_templates=_templates(doc.get("mail_templates", {})),
        stranger_replies=_string(doc.get("stranger_replies", "message"), "stranger_replies"),
    )


def _notices(value: Any) -> MailNotices:
    if value is None:
        return MailNotices()
    return MailNotices(**_object(value, TEMPLATE_KINDS, required=False))


def _templates(value: Any) -> dict[str, MailTemplate]:
    if not isinstance(value, dict):
        raise ValueError("mail_templates must be an object by kind")
    return {kind: MailTemplate(**_object(t, ("subject", "body")))
            for kind, t in value.items()}


def _files(value: Any) -> FileLimits:
    if value is None:
        return FileLimits()
    found = _object(value, ("max_file_bytes", "per_message"), required=False)
    if not all(type(v) is int for v in found.values()):
        raise ValueError("attachments limits are integers")
    return FileLimits(**found)


def _colour(value: Any) -> str | None:
    return None if value is None else _typed(value, str,
                                             "brand_colour must be a string or null")


def _flag(value: Any, name: str) -> bool:
    return _typed(value, bool, f"{name} must be true or false")


def _percent(value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError("sla_warning_percent must be an integer or null")
    return value



# --- the aggregate ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TenantSettingsState:
    """The tenant's settings as of ``version`` changes (0: never set, the defaults)."""

    value: TenantSettings
    version: int

    @property
    def document(self) -> dict[str, Any]:
        return settings_document(self.value)


@dataclass(frozen=True, slots=True)
class ReplaceSettings:
    """Replace the whole of the settings."""

    settings: TenantSettings
    at: datetime


def check_shifts(calendar: Calendar | None) -> None:
    """A shift of new business hours ends after it starts (documents stored before this
    rule keep reading as they always did: it is checked on a change only)."""
    if calendar is None:
        return
    for weekday, index in inverted_shifts(calendar):
        start, end = calendar.weekly[weekday][index]
        raise ValidationFailed(f"a shift must end after it starts, not {start}-{end}; a "
                               "shift across midnight is two shifts, one ending at 24:00 "
                               "and the next day's starting at 00:00",
                               field=f"business_hours.weekly.{weekday}.{index}")


def check_templates(templates: Mapping[str, MailTemplate]) -> None:
    """Every template compiles in the sandbox and names only its kind's placeholders
    (checked on a change: a stored template is rendered as it was accepted)."""
    for kind, template in templates.items():
        try:
            check_template(kind, template)
        except TemplateInvalid as exc:
            raise ValidationFailed(exc.message,
                                   field=f"mail_templates.{kind}.{exc.field}") from exc


def decide_settings(command: ReplaceSettings, state: TenantSettingsState) -> list[Event]:
    """The event of a replacement; the same settings again (once some were set) are
    nothing to record."""
    check_shifts(command.settings.business_hours)
    check_templates(command.settings.mail_templates)
    if command.settings == state.value and state.version > 0:
        return []
    return [SettingsChanged(settings=settings_document(command.settings), at=command.at)]


def evolve_settings(state: TenantSettingsState, event: Event) -> TenantSettingsState:
    """Apply one event to the settings."""
    if not isinstance(event, SettingsChanged):
        raise CorruptStream(f"{event.TYPE} does not change the settings")
    return TenantSettingsState(settings_from_document(event.settings), state.version + 1)


__all__ = [
    "DAY_MS",
    "DEFAULT_PENDING_DAYS",
    "DEFAULT_SETTINGS",
    "DEFAULT_SOLVED_DAYS",
    "DEFAULT_TEXT_SEARCH",
    "KEYS",
    "MAX_SWEEP_DAYS",
    "MAX_TARGET_MS",
    "MAX_WIDGET_ORIGINS",
    "PAUSABLE",
    "STRANGER_REPLIES",
    "MailNotices",
    "ReplaceSettings",
    "SweepWindows",
    "TenantSettings",
    "TenantSettingsState",
    "by_group",
    "check_shifts",
    "check_target",
    "check_templates",
    "decide_settings",
    "every_priority",
    "evolve_settings",
    "paused_states",
    "settings_document",
    "settings_from_document",
    "widget_origin",
    "widget_origins",
]
