"""``/v1/analytics``: summary, volume, backlog and agent activity (analyst and admin).

Answers come from the async read models; each says how fresh it is: ``as_of_seq``
(the last event applied), ``lag`` (events behind the tenant head) and ``rebuilding``.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query

from api.auth import Principal, require
from api.deps import ServicesDep
from api.problem_docs import errors
from api.problems import Problem
from api.routing import StrictRoute
from projections import analytics_reads as reads

router = APIRouter(prefix="/v1/analytics", tags=["analytics"], route_class=StrictRoute)

AnalystDep = Annotated[Principal, Depends(require("analyst", "admin"))]
MAX_DAYS = 366
DEFAULT_DAYS = 30


def _range(services: ServicesDep, start: date | None, end: date | None) -> tuple[date, date]:
    end = end or services.clock.now().date()
    start = start or end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end:
        raise Problem(400, "invalid_range", "`from` must not be after `to`")
    if (end - start).days >= MAX_DAYS:
        raise Problem(400, "invalid_range", f"a range covers at most {MAX_DAYS} days")
    return start, end


From = Annotated[date | None, Query(alias="from", description="first UTC day (inclusive)")]
To = Annotated[date | None, Query(alias="to", description="last UTC day (inclusive)")]


@router.get("/summary", responses=errors())
async def summary(
    principal: AnalystDep,
    services: ServicesDep,
    start: From = None,
    end: To = None,
    group_by: Annotated[Literal["priority", "source", "assignee", "day"] | None,
                        Query()] = None,
) -> dict[str, Any]:
    """Tickets created in the range: counts, first reply and resolution medians and p90,
    SLA achievement per metric, reopen and one-touch rates; in total and by group."""
    lo, hi = _range(services, start, end)
    return await reads.summary(services.pool, principal.tenant_id, lo, hi, group_by)


@router.get("/volume", responses=errors())
async def volume(principal: AnalystDep, services: ServicesDep, start: From = None,
                 end: To = None) -> dict[str, Any]:
    """Created, solved, reopened and breached per UTC day, split by priority and source."""
    lo, hi = _range(services, start, end)
    return await reads.volume(services.pool, principal.tenant_id, lo, hi)


@router.get("/backlog", responses=errors())
async def backlog(principal: AnalystDep, services: ServicesDep) -> dict[str, Any]:
    """Open work now, by state, priority and age bucket."""
    return await reads.backlog(services.pool, principal.tenant_id, services.clock.now())


@router.get("/agents", responses=errors())
async def agents(principal: AnalystDep, services: ServicesDep, start: From = None,
                 end: To = None) -> dict[str, Any]:
    """Per agent over the range: tickets assigned, public replies, tickets solved."""
    lo, hi = _range(services, start, end)
    return await reads.agents(services.pool, principal.tenant_id, lo, hi)
