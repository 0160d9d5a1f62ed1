"""The body of ``GET/PUT /v1/settings``: the settings document on the wire.

A PUT must give every key but the optional ones; unknown keys are a 422. The rules
are the domain's (``domain.tenant_settings``), run here as validators so a request
that breaks one is refused field by field, and ``to_settings`` makes the domain's
value of a valid body. The document's shape is ``projections.tenant_settings``'s, which
renders the value the GET answers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from domain.attachment import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_PER_MESSAGE,
    MAX_FILE_BYTES_CAP,
    PER_MESSAGE_CAP,
    FileLimits,
)
from domain.business_hours import Calendar
from domain.mail_templates import KINDS as TEMPLATE_KINDS
from domain.mail_templates import MAX_BODY, MAX_SUBJECT, MailTemplate
from domain.sla import SlaTarget
from domain.tenant_settings import (
    MAX_SWEEP_DAYS,
    MAX_TARGET_MS,
    MAX_WIDGET_ORIGINS,
    MailNotices,
    SweepWindows,
    TenantSettings,
    brand_colour,
    by_group,
    every_priority,
    paused_states,
    widget_origins,
)
from domain.values import Priority, TicketState
from projections.search import TEXT_SEARCH_CONFIGS
from projections.tenant_settings import text_search_config

_DOC = ConfigDict(extra="forbid", frozen=True)


class SlaTargetDoc(BaseModel):
    """Targets of one priority, in business milliseconds."""

    model_config = _DOC

    first_response_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]
    resolution_ms: Annotated[StrictInt, Field(gt=0, le=MAX_TARGET_MS)]

    @model_validator(mode="after")
    def _ordered(self) -> SlaTargetDoc:
        if self.first_response_ms > self.resolution_ms:
            raise ValueError("first_response_ms must not exceed resolution_ms")
        return self

    def target(self) -> SlaTarget:
        return SlaTarget(self.first_response_ms, self.resolution_ms)


class SweepDoc(BaseModel):
    """Days of inactivity before the sweep solves a pending ticket / closes a solved one."""

    model_config = _DOC

    pending_days: Annotated[StrictInt, Field(ge=1, le=MAX_SWEEP_DAYS)]
    solved_days: Annotated[StrictInt, Field(ge=1, le=MAX_SWEEP_DAYS)]


class FileLimitsDoc(BaseModel):
    model_config = _DOC

    max_file_bytes: Annotated[StrictInt, Field(ge=1, le=MAX_FILE_BYTES_CAP)] = \
        DEFAULT_MAX_FILE_BYTES
    """The largest file an upload may be (413 ``file_too_large`` beyond)."""
    per_message: Annotated[StrictInt, Field(ge=0, le=PER_MESSAGE_CAP)] = DEFAULT_PER_MESSAGE
    """How many files one message may carry (422 ``too_many_attachments`` beyond)."""


class MailNotificationsDoc(BaseModel):
    """Which notification mail is sent, once the tenant has a mailbox with SMTP."""

    model_config = _DOC

    invitation: StrictBool = True
    portal_link: StrictBool = True
    acknowledgement: StrictBool = False
    assignment: StrictBool = False
    breach: StrictBool = False
    follow: StrictBool = True


class MailTemplateDoc(BaseModel):
    """A notification template: Jinja2 source, rendered in the sandbox
    (docs/email.md lists each kind's placeholders)."""

    model_config = _DOC

    subject: Annotated[str, Field(min_length=1, max_length=MAX_SUBJECT)]
    body: Annotated[str, Field(min_length=1, max_length=MAX_BODY)]


TemplateKind = Literal["invitation", "portal_link", "acknowledgement", "assignment", "breach",
                       "follow"]
assert set(TemplateKind.__args__) == set(TEMPLATE_KINDS)  # type: ignore[attr-defined]

TextSearchConfig = Annotated[str, Field(json_schema_extra={"enum": list(TEXT_SEARCH_CONFIGS)})]


class TenantSettingsDoc(BaseModel):
    """The whole settings document; a PUT must give every key."""

    model_config = _DOC

    sla_targets: dict[Priority, SlaTargetDoc]
    business_hours: Calendar | None
    paused_states: list[TicketState]
    sweep: SweepDoc
    group_sla_targets: dict[UUID, dict[Priority, SlaTargetDoc]] = Field(default_factory=dict)
    text_search: TextSearchConfig = "simple"
    """The text-search configuration of search (projections/search.py); optional in a
    PUT, so documents written before it existed stay valid."""
    widget_origins: list[str] = Field(default_factory=list, max_length=MAX_WIDGET_ORIGINS)
    """The origins the embeddable widget may be called from
    (``domain.tenant_settings.widget_origin``); optional, ``[]`` (the default) turns the
    widget off."""
    sla_warning_percent: Annotated[StrictInt, Field(ge=1, le=99)] | None = None
    """Warn a running SLA clock (``SlaWarning``) once this share of its target has
    passed, in percent; optional, null (the default) warns nothing."""
    group_scoped_access: StrictBool = False
    """Agents see and act on the tickets of their groups, the tickets in no group and
    the tickets assigned to them, and no other (docs/teamwork.md); optional, false (the
    default) lets every agent see the whole tenant. Admins and auditors always do."""

    brand_colour: str | None = Field(default=None, max_length=16)
    """The colour of the customer portal and the widget, ``#rrggbb``; optional, null
    (the default) draws them in the pages' own blue."""

    attachments: FileLimitsDoc = Field(default_factory=lambda: FileLimitsDoc())
    """Limits on files; optional, the defaults (20 MiB a file, 20 files a message)."""

    mail_notifications: MailNotificationsDoc = Field(
        default_factory=lambda: MailNotificationsDoc())
    """Which notification mail the desk sends (docs/email.md); optional, invitations and
    portal links only by default."""
    mail_templates: dict[TemplateKind, MailTemplateDoc] = Field(default_factory=dict)
    """The tenant's own notification templates by kind; optional, a kind left out uses
    the default. A template that does not compile or names a placeholder its kind lacks
    is a 422."""
    stranger_replies: Literal["message", "ticket"] = "message"
    """A mail on a ticket from an address that is neither its requester nor one of its
    CCs: a public message on the ticket (the default) or a new ticket."""

    @field_validator("sla_targets")
    @classmethod
    def _every_priority(cls, value: dict[Priority, SlaTargetDoc]) -> dict[Priority, SlaTargetDoc]:
        return every_priority(value)

    @field_validator("group_sla_targets")
    @classmethod
    def _canonical_groups(cls, value: dict[UUID, dict[Priority, SlaTargetDoc]]
                          ) -> dict[UUID, dict[Priority, SlaTargetDoc]]:
        return by_group(value)

    @field_validator("text_search")
    @classmethod
    def _config(cls, value: str) -> str:
        return text_search_config(value)

    @field_validator("brand_colour")
    @classmethod
    def _colour(cls, value: str | None) -> str | None:
        return None if value is None else brand_colour(value)

    @field_validator("widget_origins")
    @classmethod
    def _origins(cls, value: list[str]) -> list[str]:
        return widget_origins(value)

    @field_validator("paused_states")
    @classmethod
    def _pausable(cls, value: list[TicketState]) -> list[TicketState]:
        return paused_states(value)

    def fingerprint(self) -> dict[str, Any]:
        """The body as JSON, for the idempotency record."""
        return self.model_dump(mode="json")

    def to_settings(self) -> TenantSettings:
        """The domain's value of this body."""
        return TenantSettings(
            targets={p: t.target() for p, t in self.sla_targets.items()},
            business_hours=self.business_hours,
            paused_states=tuple(self.paused_states),
            sweep=SweepWindows(self.sweep.pending_days, self.sweep.solved_days),
            group_targets={g: {p: t.target() for p, t in targets.items()}
                           for g, targets in self.group_sla_targets.items()},
            text_search=self.text_search,
            widget_origins=tuple(self.widget_origins),
            files=FileLimits(self.attachments.max_file_bytes, self.attachments.per_message),
            sla_warning_percent=self.sla_warning_percent,
            brand_colour=self.brand_colour,
            group_scoped_access=self.group_scoped_access,
            mail_notifications=MailNotices(**self.mail_notifications.model_dump()),
            mail_templates={k: MailTemplate(t.subject, t.body)
                            for k, t in self.mail_templates.items()},
            stranger_replies=self.stranger_replies,
        )


__all__ = ["MailNotificationsDoc", "MailTemplateDoc", "SlaTargetDoc", "SweepDoc",
           "TenantSettingsDoc"]
