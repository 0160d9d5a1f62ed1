"""The analytics projection: per-ticket metrics, daily volume and agent activity.

Definitions are in ``docs/analytics.md``. A batch is folded in memory (ticket rows
loaded once, counters summed per key) and written with one ``unnest`` upsert per
table, so a rebuild costs a few statements per 500 events rather than several per
event. Counters are added (``x = x + excluded.x``); ticket rows are overwritten whole.

Verdicts do not move: a figure counted in business time (``first_reply_business_ms``)
is counted on the calendar the ticket's clocks started on, which is the tenant's
business hours as the ``SettingsChanged`` events before its ``TicketOpened`` left them
(``CalendarHistory``), never the settings as they are now. A rebuild after the hours
change therefore writes every past figure as it was.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from domain.business_hours import Calendar, CALENDAR_24x7, business_ms_between
from domain.events import Event
from domain.ids import TenantId
from domain.sla import ClockBasis, SlaClock
from domain.ticket.decide import RUNS_IN
from domain.ticket.events import (
    FieldValuesChanged,
    MessageAdded,
    PriorityChanged,
    SatisfactionRated,
    SlaBreached,
    SlaRetargeted,
    StateChanged,
    TicketAssigned,
    TicketOpened,
    TicketSplitFrom,
)
from domain.values import ActorKind, SlaMetric, TicketState, Visibility
from eventstore.sqlfile import load_queries
from projections import analytics_cells as cells
from projections import sla_policies as sla_reads
from projections.analytics_cells import field_texts
from projections.base import Envelope

Q = load_queries(Path(__file__).with_name("queries.sql"))
log = logging.getLogger("helpdesk.projections")

OPEN_STATES = (TicketState.OPEN.value, TicketState.PENDING.value, TicketState.ON_HOLD.value)
_SOLVED = TicketState.SOLVED.value


_MS = timedelta(milliseconds=1)


def _ms(a: datetime, b: datetime) -> int:
    return max(0, (b - a) // _MS)


@dataclass(slots=True)
class TicketRow:
    """One row of ``analytics_tickets``, in the column order of ``upsert_tickets``."""

    ticket_id: Any
    priority: str
    source: str
    state: str
    assignee: str | None
    created_at: datetime
    state_since: datetime
    first_reply_at: datetime | None = None
    first_reply_ms: int | None = None
    first_reply_business_ms: int | None = None
    solved_at: datetime | None = None
    solves: int = 0
    resolution_ms: int | None = None
    open_ms: int = 0
    resolution_open_ms: int | None = None
    reopens: int = 0
    public_agent_replies: int = 0
    breaches_first_response: int = 0
    breaches_next_reply: int = 0
    breaches_resolution: int = 0
    last_seq: int = 0
    staff_notes: int | None = 0
    """Internal notes by agents; None on a row counted before they were (migration
    0651), until ``count_staff_notes`` counts them from its events."""
    requester_wait_measured: bool = False
    """A requester-wait clock ran on the ticket (its policy measured it)."""
    requester_wait_missed: bool = False
    """It breached, or a solve found its budget spent."""
    requester_wait_ms: int | None = None
    """Business time the requester waited by the latest solve (None: not solved)."""
    periodic_updates: int = 0
    """Periodic updates judged: each ended by a public reply or a solve, or breached."""
    periodic_updates_met: int = 0
    periodic_update_due_at: datetime | None = None
    """When the update owed now is due (None: none owed, or it breached already)."""
    rating: str | None = None
    """The requester's latest satisfaction rating (``good``, ``bad``); None: unrated."""
    agent_work_measured: bool = False
    """An agent-work clock ran on the ticket (its policy measured it)."""
    agent_work_missed: bool = False
    """It breached, or a solve found its budget spent."""
    agent_work_ms: int | None = None
    """Business time the ticket was open by the latest solve (None: not solved)."""


FOLLOWING = {metric: metric.value for metric in RUNS_IN}
"""The metrics that follow the ticket's state (the domain's table of the states each
runs in), each with the prefix of its columns, its name: ``<prefix>_measured``,
``<prefix>_missed`` and ``<prefix>_ms``, folded alike (``Fold._following``)."""


COLUMNS = tuple(f.name for f in dataclasses.fields(TicketRow))
# Shallow, unlike dataclasses.astuple, which deep-copies every UUID and datetime.
_values = operator.attrgetter(*COLUMNS)

# (day, priority, source) -> [created, solved, reopened, breached]
Daily = dict[tuple[date, str, str], list[int]]
# (day, agent) -> [assigned, replies, solved]
AgentDaily = dict[tuple[date, str], list[int]]
# (field key, day, value) -> [created, solved, reopened, breached]
FieldDaily = dict[tuple[str, date, str], list[int]]


@dataclass
class Fold:
    """The in-memory effect of a batch before it is written."""

    calendar: Calendar
    tickets: dict[Any, TicketRow]
    daily: Daily
    agents: AgentDaily
    fields: dict[Any, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Each ticket's field values now (``analytics_tickets.fields``)."""
    field_keys: frozenset[str] = frozenset()
    """The tenant's checkbox, dropdown and multiselect fields: those counted by value."""
    field_daily: FieldDaily = dataclasses.field(
        default_factory=lambda: defaultdict(lambda: [0, 0, 0, 0]))
    fields_changed: set[Any] = dataclasses.field(default_factory=set)
    calendar_of: dict[Any, Calendar] = dataclasses.field(default_factory=dict)
    """The calendar each ticket's clocks started on, where it is not ``calendar``."""
    history: CalendarHistory | None = None
    """Business hours by seq: a ticket opened in the batch runs on those in force then."""
    versions: Mapping[tuple[Any, int], Calendar] = dataclasses.field(default_factory=dict)
    """The calendar versions the batch's clocks name (an SLA policy's calendar)."""

    def _on_policy(self, ticket_id: Any, clocks: Mapping[SlaMetric, SlaClock]) -> None:
        """A first-reply clock on an SLA policy counts on the calendar recorded on it."""
        clock = clocks.get(SlaMetric.FIRST_RESPONSE)
        if clock is not None and clock.basis is not None:
            key = clock.basis.calendar_key
            self.calendar_of[ticket_id] = CALENDAR_24x7 if key is None else self.versions[key]

    def _calendar(self, ticket_id: Any) -> Calendar:
        return self.calendar_of.get(ticket_id, self.calendar)

    def _count(self, row: TicketRow, day: date, counter: int) -> None:
        """Count one of created, solved, reopened, breached for the day, by priority and
        source, and by the values the ticket holds now (at the event's time)."""
        self.daily[(day, row.priority, row.source)][counter] += 1
        for key, value in self.fields.get(row.ticket_id, {}).items():
            if key in self.field_keys:
                for text in field_texts(value):
                    self.field_daily[(key, day, text)][counter] += 1

    def apply(self, env: Envelope) -> None:
        """Fold one event into the batch state."""
        event = env.event
        day = event.at.date()
        # A ticket split off another starts here as an opened one does.
        if isinstance(event, TicketOpened | TicketSplitFrom):
            row = TicketRow(
                ticket_id=env.stream_id, priority=event.priority.value,
                source=event.source.value, state=TicketState.OPEN.value, assignee=None,
                created_at=event.at, state_since=event.at, last_seq=env.seq,
            )
            self.tickets[env.stream_id] = row
            if self.history is not None:
                self.calendar_of[env.stream_id] = self.history.at_seq(env.seq)
            self._on_policy(env.stream_id, event.clocks)
            self.fields[env.stream_id] = dict(event.fields)
            if event.fields:
                self.fields_changed.add(env.stream_id)
            self._count(row, day, 0)
            self._clocks(row, env)
            return
        row = self.tickets.get(env.stream_id)  # type: ignore[assignment]
        if row is None:
            # Only ticket streams start so; other streams are not ours.
            return
        row.last_seq = env.seq
        if isinstance(event, MessageAdded):
            if (event.visibility is Visibility.INTERNAL and event.author.kind is ActorKind.AGENT
                    and row.staff_notes is not None):
                row.staff_notes += 1
            if event.visibility is Visibility.PUBLIC and event.author.kind is ActorKind.AGENT:
                row.public_agent_replies += 1
                self.agents[(day, event.author.id)][1] += 1
                if row.first_reply_at is None:
                    row.first_reply_at = event.at
                    row.first_reply_ms = _ms(row.created_at, event.at)
                    calendar = self._calendar(env.stream_id)
                    row.first_reply_business_ms = (
                        row.first_reply_ms if calendar.is_continuous
                        else business_ms_between(calendar, row.created_at, event.at))
        elif isinstance(event, TicketAssigned):
            row.assignee = None if event.assignee is None else str(event.assignee)
            if row.assignee is not None:
                self.agents[(day, row.assignee)][0] += 1
        elif isinstance(event, PriorityChanged):
            row.priority = event.priority.value
        elif isinstance(event, StateChanged):
            self._state(row, event, day)
        elif isinstance(event, FieldValuesChanged):
            values = self.fields.setdefault(env.stream_id, {})
            for key, value in event.values.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = list(value) if isinstance(value, tuple) else value
            self.fields_changed.add(env.stream_id)
        elif isinstance(event, SlaRetargeted):
            self._on_policy(env.stream_id, event.clocks)
        elif isinstance(event, SatisfactionRated):
            row.rating = event.rating.value  # a later rating replaces this one
        elif isinstance(event, SlaBreached):
            self._count(row, day, 3)
            if event.metric is SlaMetric.FIRST_RESPONSE:
                row.breaches_first_response += 1
            elif event.metric is SlaMetric.NEXT_REPLY:
                row.breaches_next_reply += 1
            elif event.metric is SlaMetric.RESOLUTION:
                row.breaches_resolution += 1
            elif event.metric in FOLLOWING:
                setattr(row, f"{FOLLOWING[event.metric]}_missed", True)
            elif event.metric is SlaMetric.PERIODIC_UPDATE and row.periodic_update_due_at:
                row.periodic_updates += 1  # judged now, missed; its end counts no more
                row.periodic_update_due_at = None
        self._clocks(row, env)

    @staticmethod
    def _clocks(row: TicketRow, env: Envelope) -> None:
        """Periodic update, requester wait and agent work, read from the clocks the
        event recorded (their targets, and due times and budgets counted on the
        calendar each clock names), never from a policy or calendar as it is now."""
        event = env.event
        clocks: Mapping[SlaMetric, SlaClock] = getattr(event, "clocks", None) or {}
        for metric, prefix in FOLLOWING.items():
            clock = clocks.get(metric)
            if clock is not None and clock.started_at is not None:
                Fold._following(row, prefix, event, clock)
        update = clocks.get(SlaMetric.PERIODIC_UPDATE)
        if update is None:
            return
        owed = row.periodic_update_due_at
        # A public reply starts the next update (and meets the one owed); a solve
        # meets it. A retarget moves its due time; a close stops it unjudged.
        if owed is not None and isinstance(event, MessageAdded | StateChanged) and (
                update.fulfilled_at == event.at or update.started_at == event.at):
            row.periodic_updates += 1
            row.periodic_updates_met += event.at <= owed
        row.periodic_update_due_at = (update.due_at if update.running
                                      and update.breached_at is None else None)

    @staticmethod
    def _following(row: TicketRow, prefix: str, event: Event, clock: SlaClock) -> None:
        """A started clock of a metric that follows the state: measured; at the solve
        that met it, the business time it ran (its recorded target less the budget it
        kept) and whether that budget was spent."""
        setattr(row, f"{prefix}_measured", True)
        if (isinstance(event, StateChanged) and event.to_state is TicketState.SOLVED
                and clock.fulfilled_at == event.at):
            left = clock.target_ms if clock.remaining_ms is None else clock.remaining_ms
            setattr(row, f"{prefix}_ms", max(0, clock.target_ms - left))
            if left < 0:
                setattr(row, f"{prefix}_missed", True)

    def _state(self, row: TicketRow, event: StateChanged, day: date) -> None:
        if row.state == TicketState.OPEN.value:
            row.open_ms += _ms(row.state_since, event.at)
        to = event.to_state.value
        if to == _SOLVED:
            row.solved_at = event.at
            row.solves += 1
            row.resolution_ms = _ms(row.created_at, event.at)
            row.resolution_open_ms = row.open_ms
            self._count(row, day, 1)
            if row.assignee is not None:
                self.agents[(day, row.assignee)][2] += 1
        elif row.state == _SOLVED and to != TicketState.CLOSED.value:
            row.reopens += 1
            row.solved_at = None
            for prefix in FOLLOWING.values():
                setattr(row, f"{prefix}_ms", None)
            row.resolution_ms = None
            row.resolution_open_ms = None
            self._count(row, day, 2)
        row.state = to
        row.state_since = event.at


_OPENINGS = frozenset({TicketOpened.TYPE, TicketSplitFrom.TYPE})
"""The events a ticket stream starts with."""

HANDLES = frozenset({
    TicketOpened.TYPE, TicketSplitFrom.TYPE, MessageAdded.TYPE, TicketAssigned.TYPE,
    PriorityChanged.TYPE, StateChanged.TYPE, SlaBreached.TYPE, FieldValuesChanged.TYPE,
    SlaRetargeted.TYPE, SatisfactionRated.TYPE,
})


class AnalyticsProjection:
    """Builds ``analytics_tickets``, ``analytics_daily``, ``analytics_agent_daily``,
    ``analytics_field_daily`` and the summary cells (``analytics_summary_cells``)."""

    name = "analytics"
    handles = HANDLES
    tables = ("analytics_tickets", "analytics_daily", "analytics_agent_daily",
              "analytics_field_daily", "analytics_summary_cells")

    async def apply(self, conn: asyncpg.Connection, event: Envelope) -> None:
        """Apply one event (a batch of one)."""
        await self.apply_batch(conn, event.tenant_id, [event])

    async def apply_batch(
        self, conn: asyncpg.Connection, tenant_id: TenantId, events: Sequence[Envelope]
    ) -> None:
        """Fold ``events`` in memory, then write each table with one upsert."""
        if not events:
            return
        ids = list({e.stream_id for e in events})
        rows = await conn.fetch(Q["load_tickets"], tenant_id, ids)
        history = await CalendarHistory.load(conn, tenant_id, events[-1].seq)
        calendar_of, versions = await _calendars(conn, tenant_id, rows, events, history)
        fold = Fold(
            calendar=CALENDAR_24x7, calendar_of=calendar_of, history=history, versions=versions,
            tickets={r["ticket_id"]: TicketRow(**{c: r[c] for c in COLUMNS}) for r in rows},
            daily=defaultdict(lambda: [0, 0, 0, 0]),
            agents=defaultdict(lambda: [0, 0, 0]),
            fields={r["ticket_id"]: r["fields"] for r in rows},
            field_keys=frozenset(await conn.fetchval(Q["counted_field_keys"], tenant_id)),
        )
        before = {r["ticket_id"]: cells.contribution(
            fold.tickets[r["ticket_id"]], r["fields"] or {}, fold.field_keys) for r in rows}
        for env in events:
            fold.apply(env)
        imported = list({e.stream_id for e in events if e.actor_kind == "import"})
        if imported:
            _source_measures(fold, await conn.fetch(Q["imported_measures"], tenant_id,
                                                    imported))
        moved = cells.Tallies()
        for t, row in fold.tickets.items():
            moved.move(before.get(t), cells.contribution(row, fold.fields.get(t, {}),
                                                         fold.field_keys))
        # Only tickets named by the batch were loaded, so every row here was touched.
        tickets = _columns(map(_values, fold.tickets.values()), len(COLUMNS))
        daily = _columns(((*k, *v) for k, v in sorted(fold.daily.items())), 7)
        agents = _columns(((*k, *v) for k, v in sorted(fold.agents.items())), 5)
        await conn.fetchval(Q["write_batch"], tenant_id, *tickets, *daily, *agents)
        if fold.fields_changed or fold.field_daily:
            # Apart from write_batch: a tenant without fields pays nothing for them.
            changed = sorted(fold.fields_changed & fold.tickets.keys())
            values = [orjson.dumps(fold.fields[t]).decode() for t in changed]
            field_daily = _columns(((*k, *v) for k, v in sorted(fold.field_daily.items())), 7)
            await conn.fetchval(Q["write_field_batch"], tenant_id, changed, values,
                                *field_daily)
        if moved:
            await conn.execute(Q["write_summary_cells"], tenant_id, *moved.columns())

    async def reset(self, conn: asyncpg.Connection, tenant_id: TenantId) -> None:
        """Delete the tenant's analytics rows."""
        for table in self.tables:
            await conn.execute(f"DELETE FROM {table} WHERE tenant_id = $1", tenant_id)


async def fill_summary_cells(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Recompute the tenant's summary cells from its ticket rows unless they already
    count every row once (analytics that predate the cells); returns the tickets
    counted. Under the analytics checkpoint's lock, so no batch moves the rows
    meanwhile; running it again changes nothing."""
    await conn.fetchval(Q["lock_checkpoint"], AnalyticsProjection.name, tenant_id)
    if await conn.fetchval(Q["summary_cells_agree"], tenant_id):
        return 0
    rows = await conn.fetch(Q["all_analytics_tickets"], tenant_id)
    keys = frozenset(await conn.fetchval(Q["counted_field_keys"], tenant_id))
    counted = cells.Tallies()
    for r in rows:
        counted.add(cells.contribution(TicketRow(**{c: r[c] for c in COLUMNS}),
                                       r["fields"] or {}, keys))
    await conn.execute(Q["delete_summary_cells"], tenant_id)
    if counted:
        await conn.execute(Q["write_summary_cells"], tenant_id, *counted.columns())
    return len(rows)


async def count_staff_notes(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Count the staff notes of ticket rows projected before they were counted (from
    their events up to the row's own ``last_seq``, as the projection would have), and
    drop the tenant's summary cells when any changed, for ``fill_summary_cells`` to
    count them anew with their deflections; returns the rows counted. Under the
    analytics checkpoint's lock; running it again changes nothing."""
    await conn.fetchval(Q["lock_checkpoint"], AnalyticsProjection.name, tenant_id)
    counted: int = await conn.fetchval(Q["count_staff_notes"], tenant_id)
    if counted:
        await conn.execute(Q["delete_summary_cells"], tenant_id)
    return counted


def _source_measures(fold: Fold, rows: Iterable[asyncpg.Record]) -> None:
    """An imported ticket's first reply and resolution as its source measured them
    (``first_reply_minutes``, ``full_resolution_minutes``, in calendar time), in place
    of what its history's times give: the source's clocks are facts, not run again
    (docs/import.md). Its history's times stand where the source recorded nothing, and
    business time stays counted from them on a business-hours calendar."""
    for r in rows:
        row = fold.tickets.get(r["stream_id"])
        recorded = r["recorded"]  # jsonb, decoded by the pool's codec
        if row is None or not isinstance(recorded, dict):
            continue
        first = _ms_of_minutes(recorded.get("first_reply_minutes"))
        resolution = _ms_of_minutes(recorded.get("full_resolution_minutes"))
        if row.first_reply_at is not None and first is not None:
            if row.first_reply_business_ms == row.first_reply_ms:  # calendar time
                row.first_reply_business_ms = first
            row.first_reply_ms = first
        if row.resolution_ms is not None and resolution is not None:
            row.resolution_ms = resolution


def _ms_of_minutes(value: Any) -> int | None:
    """Recorded whole minutes in milliseconds; None for anything else."""
    return value * 60_000 if type(value) is int and value >= 0 else None


def _columns(rows: Iterable[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows to one list per column (``width`` empty lists when there are no rows)."""
    columns: list[list[Any]] = [[] for _ in range(width)]
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    return columns


async def _calendars(conn: asyncpg.Connection, tenant_id: TenantId,
                     rows: Sequence[asyncpg.Record], events: Sequence[Envelope],
                     history: CalendarHistory,
                     ) -> tuple[dict[Any, Calendar], dict[tuple[Any, int], Calendar]]:
    """The calendar each ticket loaded from an earlier batch and still waiting for its
    first reply counts on, and the calendar versions the batch's clocks name: a clock
    on an SLA policy names its calendar version (``ClockBasis``); one from before
    policies runs on the business hours in force when its ticket opened."""
    keys: set[tuple[Any, int]] = set()
    for env in events:
        clocks = getattr(env.event, "clocks", None)
        if isinstance(env.event, TicketOpened | TicketSplitFrom | SlaRetargeted) and clocks:
            basis = clocks.get(SlaMetric.FIRST_RESPONSE)
            if basis is not None and basis.basis is not None and basis.basis.calendar_key:
                keys.add(basis.basis.calendar_key)
    waiting = [r["ticket_id"] for r in rows if r["first_reply_at"] is None]
    recorded: dict[Any, Any] = {}
    opened: dict[Any, int] = {}
    if waiting:
        # In seq order: the last basis recorded wins (a retarget after the opening).
        for r in await conn.fetch(Q["first_reply_bases"], tenant_id, waiting):
            if r["type"] in _OPENINGS:
                opened[r["stream_id"]] = r["seq"]
            if r["basis"] is not None:
                recorded[r["stream_id"]] = ClockBasis.model_validate(r["basis"])
        keys |= {b.calendar_key for b in recorded.values() if b.calendar_key is not None}
    versions = await sla_reads.calendar_versions(conn, tenant_id, keys)
    calendar_of: dict[Any, Calendar] = {}
    for ticket in waiting:
        basis = recorded.get(ticket)
        if basis is not None:
            key = basis.calendar_key
            calendar_of[ticket] = CALENDAR_24x7 if key is None else versions[key]
        elif ticket in opened:
            calendar_of[ticket] = history.at_seq(opened[ticket])
    return calendar_of, versions


@dataclass(frozen=True, slots=True)
class CalendarHistory:
    """The tenant's business hours as each ``SettingsChanged`` up to a seq left them:
    ``(seq, calendar)`` in seq order, calendar time before the first."""

    changes: tuple[tuple[int, Calendar], ...]

    @property
    def always_continuous(self) -> bool:
        return all(c.is_continuous for _, c in self.changes)

    def at_seq(self, seq: int) -> Calendar:
        """The hours in force for an event at ``seq`` (set by a change before it)."""
        found = CALENDAR_24x7
        for changed, calendar in self.changes:
            if changed >= seq:
                break
            found = calendar
        return found

    @classmethod
    async def load(cls, conn: asyncpg.Connection, tenant_id: TenantId,
                   through: int) -> CalendarHistory:
        """Read from the tenant's ``SettingsChanged`` events, which never change."""
        rows = await conn.fetch(Q["business_hours_history"], tenant_id, through)
        return cls(tuple((r["seq"], _hours(r["hours"], tenant_id)) for r in rows))


def _hours(raw: Any, tenant_id: TenantId) -> Calendar:
    """Recorded business hours (null: calendar time)."""
    if not raw:
        return CALENDAR_24x7
    try:
        return Calendar.model_validate(raw)
    except ValueError:
        log.warning("tenant %s recorded unreadable business_hours; using calendar time",
                    tenant_id)
        return CALENDAR_24x7
