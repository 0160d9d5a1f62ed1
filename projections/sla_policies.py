"""The inline read models of calendar and SLA policy streams: ``sla_calendars`` (each
calendar as it is), ``sla_calendar_versions`` (each version's hours, kept for good)
and ``sla_policies``, written by ``handlers.sla_policies`` in the command's own
transaction, next to the events."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.business_hours import Calendar
from domain.ids import TenantId
from domain.sla_calendar import SlaCalendar
from domain.target_policy import TargetPolicy
from eventstore.sqlfile import load_queries
from eventstore.types import Write
from projections.rows import RecordRows, records_of_rows

Q = load_queries(Path(__file__).with_name("sla_policies.sql"))

CalendarVersion = tuple[UUID, int]


load_calendar = RecordRows(SlaCalendar, Q["get_calendar"], Q["calendar_for_update"]).load


async def count_calendars(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    count: int = await conn.fetchval(Q["count_calendars"], tenant_id)
    return count


async def put_calendar(write: Write, tenant_id: TenantId, calendar: SlaCalendar) -> None:
    """Write the calendar's row and its version's hours."""
    await write(Q["put_calendar"], tenant_id, calendar.id, calendar.name,
                calendar.hours.model_dump(mode="json"), calendar.version,
                calendar.created_at, calendar.updated_at)


async def calendar_versions(conn: asyncpg.Connection, tenant_id: TenantId,
                            wanted: set[CalendarVersion]) -> dict[CalendarVersion, Calendar]:
    """The hours of each ``(calendar id, version)`` asked for that exists."""
    if not wanted:
        return {}
    pairs = sorted(wanted, key=lambda p: (str(p[0]), p[1]))
    rows = await conn.fetch(Q["calendar_versions"], tenant_id, [p[0] for p in pairs],
                            [p[1] for p in pairs])
    return {(r["calendar_id"], r["version"]): Calendar.model_validate(r["hours"])
            for r in rows}


async def current_calendars(conn: asyncpg.Connection, tenant_id: TenantId,
                            ids: set[UUID]) -> dict[UUID, tuple[int, Calendar]]:
    """Each calendar's current version and hours."""
    if not ids:
        return {}
    rows = await conn.fetch(Q["current_calendars"], tenant_id, sorted(ids, key=str))
    return {r["id"]: (r["version"], Calendar.model_validate(r["hours"])) for r in rows}


async def list_calendars(conn: asyncpg.Connection, tenant_id: TenantId,
                         after: tuple[datetime, UUID] | None, limit: int) -> list[SlaCalendar]:
    at, last = after if after is not None else (None, None)
    return await records_of_rows(conn, SlaCalendar, Q["list_calendars"], tenant_id, at, last,
                                 limit)


load_policy = RecordRows(TargetPolicy, Q["get_policy"], Q["policy_for_update"]).load


async def lock_policies(conn: asyncpg.Connection, tenant_id: TenantId) -> None:
    """Serialise changes to the tenant's set of policies until commit."""
    await conn.execute(Q["lock_policies"], tenant_id)


async def all_policies(conn: asyncpg.Connection, tenant_id: TenantId) -> list[TargetPolicy]:
    """Every policy of the tenant, in no particular order (``in_order`` orders them)."""
    return await records_of_rows(conn, TargetPolicy, Q["all_policies"], tenant_id)


async def has_policies(conn: asyncpg.Connection, tenant_id: TenantId) -> bool:
    """Whether the tenant has any SLA policy (then they, not its settings, set clocks)."""
    return bool(await conn.fetchval(Q["has_policies"], tenant_id))


async def policies_ask_organization(conn: asyncpg.Connection, tenant_id: TenantId) -> bool:
    """Whether any policy of the tenant has a condition on the requester's organization."""
    return bool(await conn.fetchval(Q["policies_ask_organization"], tenant_id))


async def put_policy(write: Write, tenant_id: TenantId, policy: TargetPolicy) -> None:
    dumped: dict[str, Any] = policy.model_dump(mode="json")
    await write(Q["put_policy"], tenant_id, policy.id, policy.name, policy.position,
                policy.default, dumped["conditions"], dumped["targets"], policy.calendar_id,
                policy.version, policy.created_at, policy.updated_at)


async def list_policies(conn: asyncpg.Connection, tenant_id: TenantId,
                        after: tuple[datetime, UUID] | None, limit: int) -> list[TargetPolicy]:
    at, last = after if after is not None else (None, None)
    return await records_of_rows(conn, TargetPolicy, Q["list_policies"], tenant_id, at, last,
                                 limit)


async def delete_policy(write: Write, tenant_id: TenantId, policy_id: UUID) -> None:
    await write(Q["delete_policy"], tenant_id, policy_id)


async def delete_calendar(write: Write, tenant_id: TenantId, calendar_id: UUID) -> None:
    await write(Q["delete_calendar"], tenant_id, calendar_id)


async def policies_on_calendar(conn: asyncpg.Connection, tenant_id: TenantId,
                               calendar_id: UUID) -> list[tuple[UUID, str]]:
    """The ``(id, name)`` of each policy that runs on the calendar, oldest first."""
    return [(r["id"], r["name"]) for r in await conn.fetch(Q["policies_on_calendar"],
                                                           tenant_id, calendar_id)]


__all__ = ["CalendarVersion", "all_policies", "calendar_versions", "count_calendars",
           "current_calendars", "delete_calendar", "delete_policy", "has_policies",
           "list_calendars", "list_policies",
           "load_calendar", "load_policy", "lock_policies", "policies_ask_organization",
           "policies_on_calendar", "put_calendar", "put_policy"]
