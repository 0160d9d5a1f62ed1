"""``/v1/analytics``: summary, volume, backlog and agent activity (analyst and admin).

Answers come from the async read models; each says how fresh it is: ``as_of_seq``
(the last event applied), ``lag`` (events behind the tenant head) and ``rebuilding``.
Summary, volume and agents answers are cached in Redis per checkpoint (api.ops.cache).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from api.http.auth import Principal
from api.http.deps import Authorized, ServicesDep
from api.http.params import IsoDate
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.routing import StrictRoute
from api.schemas import analytics as models
from projections import analytics_reads as reads

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


async def _cached(
    services: ServicesDep, principal: Principal, key: str,
    compute: Callable[[], Awaitable[dict[str, Any]]],
) -> dict[str, Any]:
    """Answer from the Redis cache when it holds this query at the current checkpoint.

    Keyed by the checkpoint, so a cached answer is never older than the read model;
    ``lag`` is recomputed against the head of now. Bypassed during a rebuild.
    """
    cache = services.cache
    fresh = await reads.current(services.store, principal.tenant_id)
    if fresh.rebuilding:
        return await compute()
    body: dict[str, Any] = await cache.get_or_compute(principal.tenant_id, key,
                                                      fresh.as_of_seq, compute)
    body["lag"] = max(0, fresh.head - body["as_of_seq"])
    return body


From = Annotated[IsoDate | None, Query(alias="from", description="first UTC day (inclusive)")]
To = Annotated[IsoDate | None, Query(alias="to", description="last UTC day (inclusive)")]


@router.get("/summary", responses=errors(), response_model=models.Summary)
async def summary(
    principal: Authorized,
    services: ServicesDep,
    start: From = None,
    end: To = None,
    group_by: Annotated[Literal["priority", "source", "assignee", "day"] | None,
                        Query()] = None,
) -> dict[str, Any]:
    """Tickets created in the range: counts, first reply and resolution medians and p90,
    SLA achievement per metric, reopen and one-touch rates; in total and by group."""
    lo, hi = _range(services, start, end)
    return await _cached(services, principal, f"summary:{lo}:{hi}:{group_by}",
                         lambda: reads.summary(services.store, principal.tenant_id, lo, hi,
                                               group_by))


@router.get("/volume", responses=errors(), response_model=models.Volume)
async def volume(principal: Authorized, services: ServicesDep, start: From = None,
                 end: To = None) -> dict[str, Any]:
    """Created, solved, reopened and breached per UTC day, split by priority and source."""
    lo, hi = _range(services, start, end)
    return await _cached(services, principal, f"volume:{lo}:{hi}",
                         lambda: reads.volume(services.store, principal.tenant_id, lo, hi))


@router.get("/backlog", responses=errors(), response_model=models.Backlog)
async def backlog(principal: Authorized, services: ServicesDep) -> dict[str, Any]:
    """Open work now, by state, priority and age bucket (not cached: ages move)."""
    return await reads.backlog(services.store, principal.tenant_id, services.clock.now())


@router.get("/agents", responses=errors(), response_model=models.Agents)
async def agents(principal: Authorized, services: ServicesDep, start: From = None,
                 end: To = None) -> dict[str, Any]:
    """Per person over the range: tickets assigned, public replies, tickets solved. Work
    done with an API key acting as itself (an admin key linked to no agent) is its own
    row, of kind `api_key`."""
    lo, hi = _range(services, start, end)
    # "v2": rows carry kind and name; answers cached in the older shape are not reused.
    return await _cached(services, principal, f"agents:v2:{lo}:{hi}",
                         lambda: reads.agents(services.store, principal.tenant_id, lo, hi))
