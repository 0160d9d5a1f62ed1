"""``/v1/analytics``: summary, volume, backlog and agent activity (analyst and admin).

Answers come from the async read models; each says how fresh it is: ``as_of_seq``
(the last event applied, where the answer was read), ``lag`` (events behind the
primary's tenant head), ``lag_seconds`` (the replica's delay behind the primary),
``rebuilding`` and ``read_from``. They are read through ``services.reads``: on the
replica while it is fit, else on the primary (api/http/lagging.py). Summary, volume
and agents answers are cached in Redis per checkpoint (api.ops.cache).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Response

from api.http import commands
from api.http.answer_headers import READ_FROM, READ_LAG, sends
from api.http.auth import Principal
from api.http.deps import Authorized, ServicesDep
from api.http.lagging import source_headers
from api.http.params import IsoAwareDateTime, IsoDate
from api.http.problem_docs import errors
from api.http.problems import Problem, invalid_parameter
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.ticket_pages import AsOf, as_of_seq
from api.schemas import analytics as models
from domain.fields import FILTERABLE_TYPES
from domain.ids import TenantId
from eventstore.replica import Source
from eventstore.store import EventStore
from projections import analytics_reads as reads
from projections.fields import load_catalog
from projections.groups import unknown_groups
from projections.ticket_versions import backlog_as_of

router = APIRouter(prefix="/v1/analytics", tags=["analytics"], route_class=StrictRoute)

MAX_DAYS = 366
DEFAULT_DAYS = 30


def _range(services: ServicesDep, start: date | None, end: date | None) -> tuple[date, date]:
    end = end or services.clock.now().date()
    try:
        start = start or end - timedelta(days=DEFAULT_DAYS - 1)
    except OverflowError as exc:
        raise Problem(400, "invalid_range", "`to` is too early for a default `from`") from exc
    if start > end:
        raise Problem(400, "invalid_range", "`from` must not be after `to`")
    if (end - start).days >= MAX_DAYS:
        raise Problem(400, "invalid_range", f"a range covers at most {MAX_DAYS} days")
    return start, end


Compute = Callable[[EventStore], Awaitable[dict[str, Any]]]


async def _answer(services: ServicesDep, principal: Principal, key: str | None,
                  compute: Compute) -> Response:
    """Read ``compute`` where lag is tolerated, from the cache when it holds this query
    at the current checkpoint (``key`` None: never cached), and say how fresh it is.

    Cached answers are keyed by the checkpoint they were computed at, so one is never
    older than the read model it is served with. ``lag`` is counted against the
    primary's head: read there after the answer, when the answer came from the
    replica, so the replica's delay is in it.
    """
    tenant = principal.tenant_id

    async def read(store: EventStore) -> dict[str, Any]:
        if key is None:
            return await compute(store)
        fresh = await reads.current(store, tenant)
        if fresh.rebuilding:
            return await compute(store)
        body: dict[str, Any] = await services.cache.get_or_compute(
            tenant, key, fresh.as_of_seq, lambda: compute(store))
        body["lag"] = max(0, fresh.head - body["as_of_seq"])
        return body

    body, source = await services.reads.run(read)
    head = body["as_of_seq"] + body["lag"]  # the head where the answer was read
    if source.replica:
        async with services.store.unit_of_work(tenant, readonly=True) as s:
            head = max(head, (await s.head())[0])
    # Written as built: the response models document the shape, and the tests check
    # the answers against them, not every request.
    return JsonReply(200, _stamped(body, max(0, head - body["as_of_seq"]), source),
                     headers=source_headers(source)).response()


def _stamped(body: dict[str, Any], lag: int, source: Source) -> dict[str, Any]:
    """``body`` with its freshness first, in the response model's order (a cached
    answer may come from before a freshness field existed)."""
    fresh = {"as_of_seq": body["as_of_seq"], "lag": lag, "lag_seconds": source.lag_seconds,
             "rebuilding": body["rebuilding"], "read_from": source.name}
    return fresh | {k: v for k, v in body.items() if k not in fresh}


From = Annotated[IsoDate | None, Query(alias="from", description="first UTC day (inclusive)")]
To = Annotated[IsoDate | None, Query(alias="to", description="last UTC day (inclusive)")]


FIELD_GROUP = r"field\.[a-z][a-z0-9_]{0,39}"
GroupBy = Annotated[str | None, Query(
    pattern=rf"^(priority|source|assignee|group|organization|day|{FIELD_GROUP})$",
    description="`priority`, `source`, `assignee`, `group` (the group each ticket is in "
                "now), `organization` (its contact's now), `day`, or `field.<key>` for a "
                "checkbox, dropdown or multiselect ticket field")]
FieldGroupBy = Annotated[str | None, Query(
    alias="group_by", pattern=rf"^{FIELD_GROUP}$",
    description="`field.<key>`: split each day by a checkbox, dropdown or multiselect "
                "ticket field's value at the event's time")]


async def _check_field_group(services: ServicesDep, principal: Principal,
                             group_by: str | None) -> None:
    """A ``field.<key>`` group must name a field of the tenant that groups (400)."""
    if group_by is None or not group_by.startswith(reads.FIELD_GROUP):
        return
    key = group_by.removeprefix(reads.FIELD_GROUP)
    async with commands.reading(services, principal) as s:
        field = (await load_catalog(s.conn, principal.tenant_id)).get(key)
    if field is None or field.type not in FILTERABLE_TYPES:
        reason = ("is not a ticket field" if field is None
                  else f"is a {field.type} field; only checkbox, dropdown and multiselect "
                       "fields group")
        raise invalid_parameter(f"group_by: {key} {reason}", "group_by")


GroupedRead = Callable[[EventStore, TenantId, date, date, str | None],
                       Awaitable[dict[str, Any]]]


async def _grouped(services: ServicesDep, principal: Principal, name: str, read: GroupedRead,
                   start: date | None, end: date | None, group_by: str | None) -> Response:
    """A report over a range of UTC days, grouped by ``group_by``: checked, then answered
    through the cache under ``name`` with the range and the grouping."""
    lo, hi = _range(services, start, end)
    await _check_field_group(services, principal, group_by)
    return await _answer(services, principal, f"{name}:{lo}:{hi}:{group_by}",
                         lambda store: read(store, principal.tenant_id, lo, hi, group_by))


@router.get("/summary", responses=errors()
         | sends(200, required=(READ_FROM, READ_LAG)), response_model=models.Summary)
async def summary(
    principal: Authorized,
    services: ServicesDep,
    start: From = None,
    end: To = None,
    group_by: GroupBy = None,
) -> Response:
    """Tickets created in the range: counts, first reply and resolution medians and p90,
    SLA achievement per metric, reopen and one-touch rates; in total and by group (by a
    ticket field: the value each ticket holds now, as priority groups by the priority
    it has now)."""
    # "v2": groups carry name; answers cached in the older shape are not reused.
    return await _grouped(services, principal, "summary:v2", reads.summary, start, end,
                          group_by)


@router.get("/volume", responses=errors()
         | sends(200, required=(READ_FROM, READ_LAG)), response_model=models.Volume)
async def volume(principal: Authorized, services: ServicesDep, start: From = None,
                 end: To = None, group_by: FieldGroupBy = None) -> Response:
    """Created, solved, reopened and breached per UTC day, split by priority and source
    as they were at each event's time, and by a ticket field's value then."""
    # "v2": answers carry group_by and by_field; those cached in the older shape are not
    # reused.
    return await _grouped(services, principal, "volume:v2", reads.volume, start, end,
                          group_by)


@router.get("/backlog", responses=errors()
         | sends(200, required=(READ_FROM, READ_LAG)), response_model=models.Backlog)
async def backlog(
    principal: Authorized, services: ServicesDep,
    as_of_seq: Annotated[int | None, Query(ge=0, le=2**63 - 1, description=(
        "the backlog as it stood just after this seq of the tenant's events, from the "
        "tickets' kept versions (exact, whatever the analytics projection's lag); "
        "`as_of_seq` in the answer names it, `now` is when its event was recorded. A "
        "seq ahead of the head is 400."))] = None,
    as_of: Annotated[IsoAwareDateTime | None, Query(description=(
        "the backlog as it stood at this instant (ages measured then): as `as_of_seq` "
        "at the last event recorded by then"))] = None,
) -> Response:
    """Open work now, by state, priority and age bucket (not cached: ages move), or as
    it stood at a seq or an instant."""
    if as_of_seq is not None and as_of is not None:
        raise invalid_parameter("give as_of_seq or as_of, not both", "as_of_seq", "as_of")
    if as_of_seq is not None or as_of is not None:
        moment = AsOf(seq=as_of_seq, at=as_of)
        return await _answer(services, principal, None,
                             lambda store: _backlog_as_of(store, principal, moment))
    now = services.clock.now()
    return await _answer(services, principal, None,
                         lambda store: reads.backlog(store, principal.tenant_id, now))


async def _backlog_as_of(store: EventStore, principal: Principal, moment: AsOf
                         ) -> dict[str, Any]:
    async with store.unit_of_work(principal.tenant_id, readonly=True,
                                  isolation="repeatable_read") as s:
        seq, at = await as_of_seq(s, moment)
        head = (await s.head())[0]
        # Seq 0 is before the first event: no tickets, so no ages to measure.
        at = at or datetime.fromtimestamp(0, UTC)
        rows = await backlog_as_of(s.conn, principal.tenant_id, seq, at)
    return {"as_of_seq": seq, "lag": max(0, head - seq), "rebuilding": False,
            "now": at.isoformat(), "total": sum(r["tickets"] for r in rows), "rows": rows}


@router.get("/agents", responses=errors(404)
         | sends(200, required=(READ_FROM, READ_LAG)), response_model=models.Agents)
async def agents(
    principal: Authorized, services: ServicesDep, start: From = None, end: To = None,
    group_id: Annotated[UUID | None, Query(
        description="only the members of this group (as it is now); 404 if the tenant "
                    "has no such group")] = None,
) -> Response:
    """Per person over the range: tickets assigned, public replies, tickets solved. Work
    done with an API key acting as itself (an admin key linked to no agent) is its own
    row, of kind `api_key`."""
    lo, hi = _range(services, start, end)
    if group_id is not None:
        async with commands.reading(services, principal) as s:
            if await unknown_groups(s.conn, principal.tenant_id, [group_id]):
                raise Problem(404, "not_found", f"no group {group_id}")
    # "v2": rows carry kind and name; answers cached in the older shape are not reused.
    # A group's answer is not cached: its membership can change with no event the
    # analytics checkpoint counts.
    key = f"agents:v2:{lo}:{hi}" if group_id is None else None
    return await _answer(services, principal, key,
                         lambda store: reads.agents(store, principal.tenant_id, lo, hi,
                                                    group_id))
