"""``sla.warn_pass``: warn the running SLA clocks that have used the tenant's warning
share of their target (``sla_warning_percent`` in the settings; null: none).

One job per tenant, periodic (every minute: a warning lands at most a pass after the
moment), seeded for every tenant by ``jobs.seed_tenants``. Each ticket due a warning
goes through the write path with ``WarnSla`` in its own transaction, actor ``system``:
the domain decides again under the ticket's row lock and appends ``SlaWarning`` once
per clock cycle (it latches on the clock, as a breach does). Rules act on it like on
any ticket event (``event is SlaWarning``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from pathlib import Path

from domain.ids import TenantId
from domain.sla import warn_due
from domain.ticket.commands import WarnSla
from eventstore.errors import ConcurrencyError
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from eventstore.types import SYSTEM
from handlers.ticket_state import load_ticket
from handlers.tickets import execute
from projections.tenant_settings import load_settings
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

Q = load_queries(Path(__file__).with_name("sla_warnings.sql"))
KIND = "sla.warn_pass"
EVERY = timedelta(minutes=1)

log = logging.getLogger("helpdesk.scheduler")


async def warn_tenant(store: EventStore, tenant_id: TenantId, now: datetime) -> int:
    """Warn every clock due a warning; returns how many ``SlaWarning`` were appended."""
    async with store.unit_of_work(tenant_id, SYSTEM, readonly=True) as s:
        settings = await load_settings(s.conn, tenant_id)
        percent = settings.sla_warning_percent
        if percent is None:
            return 0
        calendar = settings.policy.calendar
        left = None if not calendar.is_continuous else 100 - percent
        ids = [r["id"] for r in await s.conn.fetch(Q["warn_candidates"], tenant_id, now, left)]
    warned = 0
    for ticket_id in ids:
        try:
            async with store.unit_of_work(tenant_id, SYSTEM) as s:
                ticket = await load_ticket(s.conn, tenant_id, ticket_id)
                if ticket is None:
                    continue
                for metric, clock in ticket.clocks.items():
                    if warn_due(clock, calendar, now, percent):
                        result = await execute(s, ticket_id,
                                               WarnSla(metric=metric, percent=percent, at=now))
                        warned += len(result.events)
        except ConcurrencyError:
            log.info("sla warning of %s raced a command; the next pass decides", ticket_id)
    return warned


async def handle(ctx: JobContext, job: Job) -> None:
    if job.tenant_id is None:
        raise ValueError(f"{KIND} needs a tenant")
    await warn_tenant(ctx.store, job.tenant_id, ctx.clock.now())


def register(registry: Registry, every: timedelta = EVERY) -> None:
    """Add the per-tenant periodic ``sla.warn_pass`` to ``registry``."""
    registry.periodic(KIND, every, handle, per_tenant=True)


__all__ = ["EVERY", "KIND", "handle", "register", "warn_tenant"]
