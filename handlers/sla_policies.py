"""Calendars and SLA policies: creating and changing them.

Each calendar and each policy is an aggregate with its own stream; their rows are
written in the same transaction as their events (``projections.sla_policies``). The
aggregates keep their own rules (``domain.sla_calendar``, ``domain.target_policy``);
here are those that need the tenant's rows:

* a policy's calendar is a calendar of the tenant;
* a condition on a ticket field names a field the tenant defined, with a value of its
  type; one on a group or an organization names one of the tenant's;
* the tenant's policies, once it has any, keep exactly one default (so the first
  policy made is the default), and there are at most ``POLICIES_MAX`` of them;
* a calendar a policy runs on is not deleted (409 naming the policies), nor is the
  default policy (409);
* a new order of the policies names each of them exactly once, at the version the
  caller saw.

A deleted policy's open clocks keep the targets and calendar they recorded: no verdict
moves because a policy went, and no deadline of a running clock either. The ticket's
next re-match (a change of priority, group or organization, or ``apply`` of the policy
that matches it now) moves them on, with an ``SlaRetargeted`` naming the deleted one.

Every refusal is a 422 naming the part (``targets.next_reply_ms``), and nothing is saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from uuid import UUID

import asyncpg

from domain.events import Event
from domain.ids import TenantId
from domain.sla import SlaPolicy
from domain.sla_calendar import (
    CALENDARS_MAX,
    ChangeCalendar,
    CreateCalendar,
    SlaCalendar,
    decide_calendar,
    decide_delete_calendar,
    evolve_calendar,
)
from domain.target_policy import (
    POLICIES_MAX,
    ChangePolicy,
    CreatePolicy,
    DefaultPolicyKept,
    TargetPolicy,
    check_policy_set,
    decide_delete_policy,
    decide_policy,
    evolve_policy,
    in_order,
    reorder,
)
from domain.values import UtcDatetime
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, refused_as
from handlers.records import LockedRecords
from handlers.rules import check_field_conditions
from handlers.ticket_state import CommandState
from projections import sla_policies as read_model
from projections.fields import load_catalog
from projections.groups import load_group
from projections.people import load_contact, load_organization

# --- calendars ---------------------------------------------------------------------------


_CALENDARS = LockedRecords(
    "calendar", "calendar", "invalid_calendar", decide_calendar, evolve_calendar,
    lambda uow, i: read_model.load_calendar(uow.conn, uow.tenant_id, i, for_update=True))


async def create_calendar(uow: UnitOfWork, command: CreateCalendar) -> SlaCalendar:
    """Create a calendar; 422 ``too_many_calendars`` past ``CALENDARS_MAX``."""

    async def write(uow: UnitOfWork, calendar: SlaCalendar) -> None:
        await read_model.lock_policies(uow.conn, uow.tenant_id)
        if await read_model.count_calendars(uow.conn, uow.tenant_id) >= CALENDARS_MAX:
            raise Invalid("too_many_calendars",
                          f"a tenant has at most {CALENDARS_MAX} calendars")
        await read_model.put_calendar(uow.write, uow.tenant_id, calendar)

    return await _CALENDARS.create(uow, command, write)


async def change_calendar(uow: UnitOfWork, calendar_id: UUID, command: ChangeCalendar, *,
                          expected_version: int | None = None) -> SlaCalendar:
    """Change a calendar's name or hours: a new version, which clocks that start from
    now on run on; clocks already running keep the version they started on."""

    async def write(uow: UnitOfWork, before: SlaCalendar, after: SlaCalendar) -> None:
        await read_model.put_calendar(uow.write, uow.tenant_id, after)

    return await _CALENDARS.change(uow, calendar_id, expected_version,
                                  lambda state: _CALENDARS.decided(command, state), write)


async def delete_calendar(uow: UnitOfWork, calendar_id: UUID, at: UtcDatetime, *,
                          expected_version: int | None = None) -> SlaCalendar:
    """Delete a calendar no policy runs on (409 ``calendar_in_use`` naming those that
    do); its stream ends with ``CalendarDeleted``, and its hours at every version stay
    for the clocks that ran on them. Returns the calendar as it last was, one version
    on."""
    await read_model.lock_policies(uow.conn, uow.tenant_id)

    async def write(uow: UnitOfWork, before: SlaCalendar, after: SlaCalendar) -> None:
        users = await read_model.policies_on_calendar(uow.conn, uow.tenant_id, calendar_id)
        if users:
            raise Conflict("calendar_in_use",
                           "SLA policies run on this calendar: "
                           + ", ".join(f"{name!r} ({pid})" for pid, name in users)
                           + "; give them another calendar first",
                           policies=[{"id": str(pid), "name": name} for pid, name in users])
        await read_model.delete_calendar(uow.write, uow.tenant_id, calendar_id)

    return await _CALENDARS.change(uow, calendar_id, expected_version,
                                  lambda state: decide_delete_calendar(state, at), write)


async def get_calendar(uow: UnitOfWork, calendar_id: UUID) -> SlaCalendar | None:
    return await read_model.load_calendar(uow.conn, uow.tenant_id, calendar_id)


# --- policies ----------------------------------------------------------------------------


_POLICIES = LockedRecords(
    "policy", "SLA policy", "invalid_sla_policy", decide_policy, evolve_policy,
    lambda uow, i: read_model.load_policy(uow.conn, uow.tenant_id, i, for_update=True))


async def _check_in_tenant(uow: UnitOfWork, policy: TargetPolicy) -> None:
    conn, tenant = uow.conn, uow.tenant_id
    if policy.calendar_id is not None and await read_model.load_calendar(
            conn, tenant, policy.calendar_id) is None:
        raise Invalid("invalid_sla_policy", f"calendar_id: no calendar {policy.calendar_id}",
                      field="calendar_id")
    try:
        check_field_conditions(policy.conditions, await load_catalog(conn, tenant))
    except Invalid as exc:
        raise Invalid("invalid_sla_policy", str(exc), field=exc.field,
                      reason=exc.reason) from exc
    for i, c in enumerate(policy.conditions):
        at = f"conditions.{i}.value"
        if c.field == "group_id" and c.value is not None and await load_group(
                conn, tenant, UUID(c.value)) is None:
            raise Invalid("invalid_sla_policy", f"{at}: no group {c.value}", field=at)
        if c.field == "organization_id" and c.value is not None and await load_organization(
                conn, tenant, UUID(c.value)) is None:
            raise Invalid("invalid_sla_policy", f"{at}: no organization {c.value}", field=at)


async def _check_set(uow: UnitOfWork, policy: TargetPolicy) -> None:
    others = [p for p in await read_model.all_policies(uow.conn, uow.tenant_id)
              if p.id != policy.id]
    if len(others) >= POLICIES_MAX:
        raise Invalid("too_many_sla_policies", f"a tenant has at most {POLICIES_MAX} policies")
    with refused_as("invalid_sla_policy"):
        check_policy_set([*others, policy])


async def create_policy(uow: UnitOfWork, command: CreatePolicy) -> TargetPolicy:
    """Create a policy; the tenant's first is its default, and the only default."""

    async def write(uow: UnitOfWork, policy: TargetPolicy) -> None:
        await read_model.lock_policies(uow.conn, uow.tenant_id)
        await _check_in_tenant(uow, policy)
        await _check_set(uow, policy)
        await read_model.put_policy(uow.write, uow.tenant_id, policy)

    return await _POLICIES.create(uow, command, write)


async def change_policy(uow: UnitOfWork, policy_id: UUID, command: ChangePolicy, *,
                        expected_version: int | None = None) -> TargetPolicy:
    """Change a policy's parts: clocks that start from now on follow the new version;
    those running keep theirs until retargeted (``apply``, or a ticket's change)."""
    await read_model.lock_policies(uow.conn, uow.tenant_id)

    async def write(uow: UnitOfWork, before: TargetPolicy, after: TargetPolicy) -> None:
        await _check_in_tenant(uow, after)
        await read_model.put_policy(uow.write, uow.tenant_id, after)

    return await _POLICIES.change(uow, policy_id, expected_version,
                                lambda state: _POLICIES.decided(command, state), write)


async def delete_policy(uow: UnitOfWork, policy_id: UUID, at: UtcDatetime, *,
                        expected_version: int | None = None) -> TargetPolicy:
    """Delete a policy but the default (409 ``sla_policy_is_default``): no ticket is
    matched to it from the next command on; its stream ends with ``SlaPolicyDeleted``
    and the clocks running on it keep what they recorded (the module's docstring).
    Returns the policy as it last was, one version on."""
    await read_model.lock_policies(uow.conn, uow.tenant_id)

    def decide(state: TargetPolicy) -> list[Event]:
        try:
            return decide_delete_policy(state, at)
        except DefaultPolicyKept as exc:
            raise Conflict("sla_policy_is_default", exc.message) from exc

    async def write(uow: UnitOfWork, before: TargetPolicy, after: TargetPolicy) -> None:
        await read_model.delete_policy(uow.write, uow.tenant_id, policy_id)

    return await _POLICIES.change(uow, policy_id, expected_version, decide, write)


async def reorder_policies(uow: UnitOfWork, order: Sequence[tuple[UUID, int]],
                           at: UtcDatetime) -> list[TargetPolicy]:
    """Put the tenant's policies in the order ``order`` (``(id, version)`` of each, the
    default last) in one go: all or nothing. Each policy whose position changes gets
    ``SlaPolicyChanged`` with its new one; every version named must be the policy's
    (409 ``sla_policy_changed`` otherwise, nothing changed). Returns the policies in the
    order now tried."""
    await read_model.lock_policies(uow.conn, uow.tenant_id)
    policies = await read_model.all_policies(uow.conn, uow.tenant_id)
    with refused_as("invalid_sla_policy_order"):
        positions = reorder(policies, [pid for pid, _ in order])
    known = {p.id: p for p in policies}
    for pid, version in order:
        if known[pid].version != version:
            # A version in the body, not an If-Match: a conflict with what the caller
            # read, answered as one (409), naming the policy that moved on.
            raise Conflict("sla_policy_changed",
                           f"SLA policy {known[pid].name!r} ({pid}) is at version "
                           f"{known[pid].version}, not {version}: read the policies again",
                           policy_id=str(pid), current_version=known[pid].version)
    out = []
    for policy in policies:
        position = positions.get(policy.id)
        if position is None or position == policy.position:
            out.append(policy)
            continue
        command = ChangePolicy(position=position, at=at)
        out.append(await change_policy(uow, policy.id, command,
                                       expected_version=policy.version))
    return in_order(out)


async def get_policy(uow: UnitOfWork, policy_id: UUID) -> TargetPolicy | None:
    return await read_model.load_policy(uow.conn, uow.tenant_id, policy_id)


# --- what a ticket command decides with -----------------------------------------------


async def sla_policy_for(conn: asyncpg.Connection, tenant: TenantId, settings: SlaPolicy,
                         loaded: CommandState, contact_id: UUID | None) -> SlaPolicy:
    """The SLA view a command decides with: the settings' alone while the tenant has no
    policies; else its policies' matcher (read with the ticket, ``load_for_command``),
    their calendars as they are now, with the calendar versions the ticket's clocks
    run on beside them (so pausing or retargeting a clock counts on the calendar it
    ran on), and the requester's organization when a policy asks for it."""
    matcher = loaded.sla.matcher
    if matcher is None:
        return settings
    ticket = loaded.ticket
    recorded = {c.basis.calendar_key for c in (ticket.clocks.values() if ticket else ())
                if c.basis is not None}
    missing = {k for k in recorded if k is not None and k not in matcher.calendars}
    versions = await read_model.calendar_versions(conn, tenant, missing)
    organization = None
    if contact_id is not None and loaded.sla.asks_organization:
        contact = await load_contact(conn, tenant, contact_id)
        organization = None if contact is None else contact.organization_id
    if versions or organization is not None:
        # The kept matcher is shared by the process's commands: a copy for this one.
        matcher = replace(matcher, calendars={**matcher.calendars, **versions},
                          organization_id=organization)
    return settings.model_copy(update={"matcher": matcher})


__all__ = ["change_calendar", "change_policy", "create_calendar", "create_policy",
           "delete_calendar", "delete_policy", "get_calendar", "get_policy",
           "reorder_policies", "sla_policy_for"]
