"""Data upgrades that ``helpdesk migrate`` runs after the SQL migrations.

Some changes need Python to bring existing rows up to date (a read model rendered by
the domain's code, say). Each step runs per tenant, as the owner role under that
tenant's context with the operator as actor (so any event it appends is on the audit
trail), and is idempotent: it only touches what is not yet up to date, so running
``helpdesk migrate`` again changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from domain.ids import TenantId
from domain.sla_calendar import CreateCalendar
from domain.target_policy import CreatePolicy, legacy_policies
from domain.ticket.commands import ChangeRequester
from domain.values import Requester
from eventstore.pool import connect
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork, arm
from eventstore.types import StoreActor
from handlers import sla_policies
from handlers.contacts import stage
from handlers.requesters import resolve_requester
from handlers.tenants import operator_actor
from handlers.tickets import run_command
from projections import people
from projections import sla_policies as sla_reads
from projections.analytics import count_staff_notes, fill_summary_cells
from projections.inline import fill_views
from projections.search import index_missing
from projections.tenant_settings import load_settings
from projections.ticket_versions import fill_version_views

Q = load_queries(Path(__file__).with_name("queries.sql"))

Step = Callable[[UnitOfWork], Awaitable[int]]


async def _ticket_views(uow: UnitOfWork) -> int:
    return await fill_views(uow.conn, uow.tenant_id)


SYSTEM = StoreActor("system", "migrate")
"""Who links old tickets to contacts: the system, not the operator who ran it."""


async def _link_requesters(uow: UnitOfWork, *, batch: int = 500) -> int:
    """Resolve the requester of every ticket linked to no contact (opened before
    contacts existed): its contact is created if no contact has the e-mail, and the
    ticket gets a ``RequesterChanged``, which also renders its document anew. Appended
    by the ``system`` actor; a ticket once linked is never picked again."""
    await arm(uow.conn, uow.tenant_id, SYSTEM)
    linked = 0
    try:
        while True:
            rows = await people.unlinked_tickets(uow.conn, uow.tenant_id, batch)
            for ticket_id, stored in rows:
                at = datetime.now(UTC)
                # No requester locks: one per e-mail, held to the tenant's commit, would
                # fill the server's lock table on a large tenant. A merge running at the
                # same moment can leave a ticket on the contact merged away (whose reads
                # redirect to the survivor).
                requester, created = await resolve_requester(
                    uow.conn, uow.tenant_id,
                    Requester(email=stored["email"], name=stored.get("name")), at, lock=False)
                for contact_id, event in created:
                    await stage(uow, contact_id, 0, [event])
                await run_command(uow, ticket_id, ChangeRequester(requester=requester, at=at))
            linked += len(rows)
            # Sent under the system actor now, before the next step re-arms the operator.
            await uow.flush()
            if len(rows) < batch:
                return linked
    finally:
        await arm(uow.conn, uow.tenant_id, operator_actor())


async def _search_index(uow: UnitOfWork) -> int:
    return await index_missing(uow.conn, uow.tenant_id)


async def _version_views(uow: UnitOfWork) -> int:
    return await fill_version_views(uow.conn, uow.tenant_id)


async def _staff_notes(uow: UnitOfWork) -> int:
    return await count_staff_notes(uow.conn, uow.tenant_id)


async def _summary_cells(uow: UnitOfWork) -> int:
    return await fill_summary_cells(uow.conn, uow.tenant_id)


async def _sla_policies(uow: UnitOfWork) -> int:
    """A tenant without SLA policies gets those equivalent to its settings' targets
    (``domain.target_policy.legacy_policies``): its business hours, if it has any, as
    a calendar, and one policy per group target and per priority, the default last;
    appended as events by the operator. Returns the policies created (none once the
    tenant has any)."""
    if await sla_reads.all_policies(uow.conn, uow.tenant_id):
        return 0
    settings = await load_settings(uow.conn, uow.tenant_id)
    at = datetime.now(UTC)
    calendar_id = None
    if settings.business_hours is not None:
        calendar = await sla_policies.create_calendar(uow, CreateCalendar(
            calendar_id=uuid.uuid4(), name="Business hours", hours=settings.business_hours,
            at=at))
        calendar_id = calendar.id
    made = legacy_policies(
        {p: (t.first_response_ms, t.resolution_ms) for p, t in settings.targets.items()},
        {g: {p: (t.first_response_ms, t.resolution_ms) for p, t in targets.items()}
         for g, targets in settings.group_targets.items()})
    # The default first (a tenant's first policy is its default), then the rest in the
    # order they are tried: the position keeps it.
    *others, (name, _, targets) = made
    await sla_policies.create_policy(uow, CreatePolicy(
        policy_id=uuid.uuid4(), name=name, default=True, targets=targets,
        calendar_id=calendar_id, at=at))
    for position, (name, conditions, targets) in enumerate(others):
        await sla_policies.create_policy(uow, CreatePolicy(
            policy_id=uuid.uuid4(), name=name, position=position, conditions=conditions,
            targets=targets, calendar_id=calendar_id, at=at))
    return len(made)


STEPS: tuple[tuple[str, Step], ...] = (
    ("ticket documents rendered", _ticket_views),
    ("kept ticket versions rendered as their tickets", _version_views),
    ("tickets linked to contacts", _link_requesters),
    ("tickets, contacts and organizations indexed for search", _search_index),
    ("analytics staff notes counted from ticket events", _staff_notes),
    ("analytics summary cells filled from ticket rows", _summary_cells),
    ("SLA policies made from the settings' targets", _sla_policies),
)
"""Every step, in the order they run; each returns how many rows it changed."""


async def upgrade(owner_dsn: str, *, log: Callable[[str], None] = lambda _m: None
                  ) -> dict[str, int]:
    """Run every step for every tenant; returns rows changed per step."""
    changed = {name: 0 for name, _ in STEPS}
    conn = await connect(owner_dsn)
    try:
        async with conn.transaction():
            await conn.execute("SET LOCAL ROLE helpdesk_owner")
            await conn.execute(Q["arm_worker"])
            tenants = [TenantId(r["id"]) for r in await conn.fetch(Q["all_tenant_ids"])]
        for tenant in tenants:
            async with conn.transaction():
                await conn.execute("SET LOCAL ROLE helpdesk_owner")
                await arm(conn, tenant, operator_actor())
                session = UnitOfWork(conn, tenant)
                for name, step in STEPS:
                    changed[name] += await step(session)
                await session.flush()
    finally:
        await conn.close()
    for name, n in changed.items():
        if n:
            log(f"{name}: {n}")
    return changed


__all__ = ["STEPS", "upgrade"]
