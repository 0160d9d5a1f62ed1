"""Request and response bodies of ``/v1/calendars`` and ``/v1/sla-policies``. Requests
forbid unknown fields (422); the rules of hours, conditions and targets are the
domain's (``domain.sla_calendar``, ``domain.target_policy``), answered as 422 naming
the part."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from api.schemas import PatchBody, StorableJson
from api.schemas.rules import ConditionOut
from domain.sla_calendar import CALENDAR_NAME_MAX, HOLIDAYS_MAX, SlaCalendar
from domain.target_policy import (
    POLICIES_MAX,
    POLICY_CONDITIONS_MAX,
    POLICY_FIELDS,
    POLICY_NAME_MAX,
    TargetPolicy,
)
from domain.validation import POSITION_MAX

_IN = ConfigDict(extra="forbid")


class HoursIn(BaseModel):
    """Weekly shifts in a time zone, minus holidays."""

    model_config = _IN

    timezone: str = Field(max_length=64, description="An IANA zone, e.g. Europe/Berlin.")
    weekly: dict[str, list[list[str]]] = Field(
        description='By weekday, "0" (Monday) to "6" (Sunday): shifts ["HH:MM", "HH:MM"] '
                    'that end after they start ("24:00" is midnight) and do not overlap.')
    holidays: list[str] = Field(default_factory=list, max_length=HOLIDAYS_MAX,
                                description="Dates YYYY-MM-DD (years 1-9999) on which no "
                                            "business time passes, in the calendar's zone.")


class CalendarIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=CALENDAR_NAME_MAX)
    hours: HoursIn


class CalendarPatch(PatchBody):
    """Only the parts given change; ``hours`` replaces the whole of the hours."""

    name: str | None = Field(default=None, min_length=1, max_length=CALENDAR_NAME_MAX)
    hours: HoursIn | None = None


class HoursOut(BaseModel):
    timezone: str
    weekly: dict[str, list[list[str]]]
    holidays: list[str]


class CalendarOut(BaseModel):
    id: UUID
    name: str
    hours: HoursOut
    version: int
    created_at: datetime
    updated_at: datetime


class CalendarPage(BaseModel):
    data: list[CalendarOut]
    next_cursor: str | None


class PolicyConditionIn(BaseModel):
    model_config = _IN

    field: str = Field(max_length=200, description="One of " + ", ".join(sorted(POLICY_FIELDS))
                       + ", or fields.<key> for a ticket field.")
    op: str = Field(max_length=20, description="As a rule's condition on the same field.")
    value: StorableJson = None


def _target() -> Any:
    return Field(default=None, ge=1, description="Business milliseconds, at most 366 days; "
                                                 "null or left out: not measured.")


class TargetsIn(BaseModel):
    model_config = _IN

    first_reply_ms: int | None = _target()
    next_reply_ms: int | None = _target()
    periodic_update_ms: int | None = _target()
    requester_wait_ms: int | None = _target()
    resolution_ms: int | None = _target()
    agent_work_ms: int | None = _target()


class PolicyIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=POLICY_NAME_MAX)
    position: int = Field(default=0, ge=0, le=POSITION_MAX,
                          description="Policies are tried by position, then oldest first; "
                                      "the default last.")
    default: bool = Field(default=False, description="The policy that always matches: no "
                          "conditions; the tenant's first policy must be it.")
    conditions: list[PolicyConditionIn] = Field(default_factory=list,
                                                max_length=POLICY_CONDITIONS_MAX)
    targets: TargetsIn
    calendar_id: UUID | None = Field(default=None, description="A calendar of the tenant "
                                     "(null: calendar time, every instant counts).")


class PolicyPatch(PatchBody):
    """Only the parts given change; null ``calendar_id`` goes back to calendar time."""

    nullable = frozenset({"calendar_id"})

    name: str | None = Field(default=None, min_length=1, max_length=POLICY_NAME_MAX)
    position: int | None = Field(default=None, ge=0, le=POSITION_MAX)
    conditions: list[PolicyConditionIn] | None = Field(default=None,
                                                       max_length=POLICY_CONDITIONS_MAX)
    targets: TargetsIn | None = None
    calendar_id: UUID | None = None


class TargetsOut(BaseModel):
    first_reply_ms: int | None
    next_reply_ms: int | None
    periodic_update_ms: int | None
    requester_wait_ms: int | None
    resolution_ms: int | None
    agent_work_ms: int | None = Field(
        default=None, description="The time the ticket is open (docs/sla.md); null: not "
                                  "measured.")


class PolicyOut(BaseModel):
    id: UUID
    name: str
    position: int
    default: bool
    conditions: list[ConditionOut]
    targets: TargetsOut
    calendar_id: UUID | None
    version: int
    created_at: datetime
    updated_at: datetime


class PolicyPage(BaseModel):
    data: list[PolicyOut]
    next_cursor: str | None


class PolicyAtVersionIn(BaseModel):
    model_config = _IN

    id: UUID
    version: int = Field(ge=1, le=2**31 - 1,
                         description="The version the caller saw: 412 if it is not the "
                                     "policy's.")


class PolicyOrderIn(BaseModel):
    """Every policy of the tenant, once each, in the order they are to be tried, the
    default last."""

    model_config = _IN

    policies: list[PolicyAtVersionIn] = Field(min_length=1, max_length=POLICIES_MAX)


class PolicyOrderOut(BaseModel):
    data: list[PolicyOut] = Field(description="Every policy, in the order now tried.")


class PolicyAppliedOut(BaseModel):
    policy_id: UUID
    policy_version: int
    tickets: int = Field(description="Open tickets matched to the policy whose clocks "
                                     "moved to its current version.")


def calendar_document(calendar: SlaCalendar) -> dict[str, Any]:
    """The API document of a calendar (``CalendarOut``)."""
    return calendar.model_dump(mode="json")


def policy_document(policy: TargetPolicy) -> dict[str, Any]:
    """The API document of a policy (``PolicyOut``)."""
    return policy.model_dump(mode="json")
