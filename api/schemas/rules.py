"""Request and response bodies of the rule routes (``/v1/rules``, the dry run). Requests
forbid unknown fields (422); the conditions' and actions' own rules are the domain's
(``domain.rule_parts``), answered as 422 naming the part."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from api.schemas import PatchBody, StorableJson
from domain.rule import POSITION_MAX, RULE_NAME_MAX, Rule
from domain.rule_parts import ACTION_TYPES, ACTIONS_MAX, CONDITIONS_MAX, OPS, Since

_IN = ConfigDict(extra="forbid")


class ConditionIn(BaseModel):
    model_config = _IN

    field: str = Field(max_length=200, description="One of " + ", ".join(sorted(OPS))
                       + ", or fields.<key> for a ticket field.")
    op: str = Field(max_length=20)
    value: StorableJson = None


class ActionIn(BaseModel):
    model_config = _IN

    type: str = Field(max_length=40, description="One of " + ", ".join(sorted(ACTION_TYPES))
                      + "; send_mail takes {to: requester | assignee | group, group_id, "
                      "template: {subject, body}}.")
    value: StorableJson = None


class TimeIn(BaseModel):
    """A time rule's trigger."""

    model_config = _IN

    since: Since = Field(description="The clock: since the ticket was created, last "
                                     "updated, put pending, or last replied to in public "
                                     "by the customer or an agent.")
    hours: int = Field(description="At least 1.")
    business: bool = Field(default=False, description="Count the tenant's business hours "
                                                      "only (else calendar time).")


class RuleIn(BaseModel):
    model_config = _IN

    name: str = Field(min_length=1, max_length=RULE_NAME_MAX)
    position: int = Field(default=0, ge=0, le=POSITION_MAX,
                          description="Rules run by position, then oldest first.")
    active: bool = True
    conditions: list[ConditionIn] = Field(default_factory=list, max_length=CONDITIONS_MAX)
    actions: list[ActionIn] = Field(min_length=1, max_length=ACTIONS_MAX)
    time: TimeIn | None = Field(default=None, description="Make it a rule on time: it "
                                "fires once per episode of its clock, not on events.")


class RulePatch(PatchBody):
    """Only the parts given change; ``conditions`` and ``actions`` replace the lists."""

    # Checked as every PATCH body is, but published as the plain object it has always
    # been (nullable fields, no minProperties): clients built from it keep working.
    model_config = ConfigDict(json_schema_extra=None)

    name: str | None = Field(default=None, min_length=1, max_length=RULE_NAME_MAX)
    position: int | None = Field(default=None, ge=0, le=POSITION_MAX)
    active: bool | None = None
    conditions: list[ConditionIn] | None = Field(default=None, max_length=CONDITIONS_MAX)
    actions: list[ActionIn] | None = Field(default=None, min_length=1, max_length=ACTIONS_MAX)
    time: TimeIn | None = None


class ConditionOut(BaseModel):
    field: str
    op: str
    value: JsonValue


class ActionOut(BaseModel):
    type: str
    value: JsonValue


class TimeOut(BaseModel):
    since: str
    hours: int
    business: bool


class RuleOut(BaseModel):
    id: UUID
    name: str
    position: int
    active: bool
    conditions: list[ConditionOut]
    actions: list[ActionOut]
    time: TimeOut | None
    version: int
    created_at: datetime
    updated_at: datetime


class RulePage(BaseModel):
    data: list[RuleOut]
    next_cursor: str | None


class RuleClockOut(BaseModel):
    since: Since
    hours: int
    business: bool
    started_at: datetime | None = Field(description="When the clock's episode began "
                                                    "(null: the clock is not running).")
    hours_run: float | None = Field(description="Hours the clock has run by now "
                                                "(business hours when the rule counts them).")
    hours_remaining: float | None = Field(description="Hours until the rule is due; 0 once "
                                                      "it is.")


class DryRunRuleOut(BaseModel):
    rule_id: UUID
    name: str
    active: bool
    matches: bool = Field(description="Whether the rule would fire on the ticket now (a "
                                      "rule on time: at the next pass).")
    reasons: list[str] = Field(description="Why it would not: each condition that fails, and "
                                           "for a rule on time what its clock lacks.")
    clock: RuleClockOut | None = Field(default=None, description="A rule on time: its clock "
                                                                 "on this ticket.")


class FiringOut(BaseModel):
    trigger_seq: int
    rule_id: UUID
    depth: int
    first_seq: int | None
    last_seq: int | None
    outcome: str = Field(description="fired, refused (the ticket refused an action; "
                                     "nothing of the rule's was kept) or stopped (chain "
                                     "depth reached)")
    detail: str | None
    fired_at: datetime


class DryRunOut(BaseModel):
    ticket_id: UUID
    rules: list[DryRunRuleOut] = Field(description="Every rule of the tenant, in the order "
                                                   "they run.")
    fired: list[FiringOut] = Field(description="What rules did on the ticket, newest first.")


def rule_document(rule: Rule) -> dict[str, Any]:
    """The API document of a rule (``RuleOut``)."""
    return rule.model_dump(mode="json")
