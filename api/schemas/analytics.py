"""Response shapes of ``/v1/analytics``, for the OpenAPI document and as a contract.

The answers are built as plain dicts by ``projections.analytics_reads`` (and may come
from the cache); these models only describe and check them. Definitions of every
figure are in docs/analytics.md.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Freshness(_Model):
    as_of_seq: int = Field(description="the last tenant event the read model has applied, "
                                       "as read where the answer was read (`read_from`)")
    lag: int = Field(description="events committed on the primary but not in this answer: "
                                 "the primary's tenant head less `as_of_seq`; read from the "
                                 "replica, this includes the events it has not replayed yet")
    lag_seconds: float = Field(description="how far the replica was behind the primary when "
                                           "the answer was read, in seconds (measured every "
                                           "READ_PROBE_SECONDS); 0 when read from the primary")
    rebuilding: bool = Field(description="the read model is being rebuilt; figures are "
                                         "partial until it is done")
    read_from: Literal["primary", "replica"] = Field(
        description="where the answer was read: the streaming replica (READ_DATABASE_URL) "
                    "while it is fit, else the primary")


class Percentiles(_Model):
    median: int | None = Field(description="milliseconds; null when no ticket has one")
    p90: int | None = Field(description="milliseconds; null when no ticket has one")


class SlaAchievement(_Model):
    first_response: float | None = Field(description="tickets with no breach / tickets")
    next_reply: float | None = Field(description="tickets with no breach / tickets")
    resolution: float | None = Field(description="tickets with no breach / tickets")
    periodic_update: float | None = Field(
        description="periodic updates met / periodic updates judged (each ended by a "
                    "public reply or a solve, or breached); null when none was")
    requester_wait: float | None = Field(
        description="tickets whose requester-wait clock neither breached nor was solved "
                    "over budget / tickets it ran on; null when it ran on none")
    agent_work: float | None = Field(
        description="tickets whose agent-work clock neither breached nor was solved over "
                    "budget / tickets it ran on; null when it ran on none")


class Satisfaction(_Model):
    rated: int = Field(description="solved or closed tickets whose requester rated them "
                                   "(by their latest rating)")
    good: int = Field(description="those whose latest rating is good")
    score: float | None = Field(description="good / rated; null when none is rated")
    response_rate: float | None = Field(
        description="rated / solved (the solved or closed tickets, each of which its "
                    "requester could rate); null when none is solved")


class Stats(_Model):
    tickets: int
    solved: int
    first_reply_ms: Percentiles
    first_reply_business_ms: Percentiles
    resolution_ms: Percentiles
    resolution_open_ms: Percentiles
    requester_wait_ms: Percentiles = Field(
        description="business time the requester waited by the latest solve, on the "
                    "calendar and target recorded on the clock (solved tickets whose "
                    "policy measures requester wait)")
    agent_work_ms: Percentiles = Field(
        description="business time the ticket was open (summed over its open periods) "
                    "by the latest solve, on the calendar and target recorded on the "
                    "clock (solved tickets whose policy measures agent work)")
    sla_achievement: SlaAchievement = Field(
        description="share met of each metric's target (0-1)")
    reopen_rate: float | None
    one_touch_rate: float | None
    deflected: int = Field(
        description="tickets solved or closed with no public message and no internal "
                    "note from staff (docs/analytics.md)")
    deflection_rate: float | None = Field(
        description="deflected / solved; null when none is solved")
    satisfaction: Satisfaction = Field(
        description="satisfaction ratings of the solved tickets (docs/analytics.md)")


class GroupStats(Stats):
    key: str = Field(description="the group: a priority, a source, an agent id (or "
                                 "'none'), a group or organization id (or 'none'), a UTC "
                                 "day, or a field's value (an option's value, 'true' or "
                                 "'false'; 'none' without one)")
    name: str | None = Field(description="with group_by `group`, `organization` or "
                                         "`assignee`: the group's, organization's or "
                                         "agent's name as it is now, read with the figures "
                                         "(so a role that may not list them, such as "
                                         "analyst, still sees names); null for 'none', "
                                         "for an id that names none, and for other "
                                         "groupings")


class PercentileMethod(_Model):
    exact: bool = Field(description="true: every median and p90 is nearest-rank over the "
                                    "ticket rows, a value some ticket had; false (a "
                                    "range of more than 5,000 tickets, in total or "
                                    "grouped by priority, source, assignee, day or a "
                                    "field): read from duration histograms kept per day "
                                    "and group (docs/analytics.md)")
    relative_error: float = Field(description="the largest difference between a reported "
                                              "median or p90 and the exact nearest-rank "
                                              "value, relative to it: 0 when exact, else "
                                              "1/32 (durations under 32 ms are exact)")


class Summary(Freshness):
    from_: str = Field(alias="from", description="first UTC day (inclusive)")
    to: str = Field(description="last UTC day (inclusive)")
    group_by: str | None = Field(description="priority, source, assignee, group, "
                                 "organization, day, or field.<key> (a checkbox, "
                                 "dropdown or multiselect field)")
    percentiles: PercentileMethod
    total: Stats
    groups: list[GroupStats]


class Counts(_Model):
    created: int
    solved: int
    reopened: int
    breached: int


class VolumeDay(Counts):
    day: str = Field(description="a UTC day")
    by_priority: dict[str, Counts]
    by_source: dict[str, Counts]
    by_field: dict[str, Counts] | None = Field(
        description="with group_by: by the value the ticket held at the event's time (a "
                    "multiselect under each option it held; tickets without a value are "
                    "in no entry)")


class Volume(Freshness):
    from_: str = Field(alias="from")
    to: str
    group_by: str | None = Field(description="field.<key>, when asked for")
    days: list[VolumeDay] = Field(description="days with any activity, in order")


class BacklogRow(_Model):
    state: str
    priority: str
    age: Literal["lt_1d", "1d_3d", "3d_7d", "gte_7d"] = Field(
        description="time since the ticket was created")
    tickets: int


class Backlog(Freshness):
    now: str
    total: int
    rows: list[BacklogRow]


class AgentRow(_Model):
    kind: Literal["agent", "api_key", "unknown"] = Field(
        description="`agent`: a person; `api_key`: an API key that acted as itself (an "
        "admin key linked to no agent); `unknown`: an id naming neither, which no API "
        "call records")
    id: str = Field(description="the agent's id, or the API key's id")
    name: str | None = Field(description="the agent's name, or the API key's name")
    agent_id: UUID | None = Field(description="the agent's id; null unless `kind` is agent")
    assigned: int
    replies: int
    solved: int


class Agents(Freshness):
    from_: str = Field(alias="from")
    to: str
    agents: list[AgentRow]
