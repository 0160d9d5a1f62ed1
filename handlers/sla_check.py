"""``sla.check``: a ticket's SLA timer fired; record the breach if there is one.

The write path keeps one ``sla.check`` job per running, unbreached clock at its due
time (dedupe key ``sla:<ticket>:<metric>``), so this handler only re-reads the ticket
through that same write path with ``CheckSla`` and lets the domain decide:

* fulfilled, paused, stopped or already breached: nothing (a resume reschedules);
* still running but due later (the due moved while this job was running, when the
  write path could not move it): the job moves itself to the new due time;
* due: ``SlaBreached`` is appended once, stamped by actor ``system``, at the moment
  of the check (never back-dated). Two schedulers racing on one ticket serialise on
  the ticket row lock; the second sees the breach latched and appends nothing.
"""

from __future__ import annotations

import logging
from uuid import UUID

from domain.errors import NotFound
from domain.ticket.commands import CheckSla
from domain.values import SlaMetric
from eventstore.errors import ConcurrencyError
from eventstore.types import SYSTEM
from handlers.tickets import SLA_CHECK, execute
from scheduler.jobs import Q
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

log = logging.getLogger("helpdesk.scheduler")

ATTEMPTS = 3


async def check_sla(ctx: JobContext, job: Job) -> None:
    """Handle one ``sla.check`` job (see the module docstring)."""
    if job.tenant_id is None:
        raise ValueError("sla.check needs a tenant")
    ticket_id = UUID(job.payload["ticket_id"])
    metric = SlaMetric(job.payload["metric"])
    for attempt in range(1, ATTEMPTS + 1):
        now = ctx.clock.now()
        try:
            async with ctx.store.unit_of_work(job.tenant_id, SYSTEM) as uow:
                result = await execute(uow, ticket_id, CheckSla(metric=metric, at=now))
                clock = result.ticket.clocks.get(metric)
                if (not result.events and clock is not None and clock.running
                        and clock.breached_at is None and clock.due_at is not None
                        and clock.due_at > now):
                    await uow.conn.execute(Q["snooze"], job.id, ctx.queue.worker_id,
                                           clock.due_at, job.tenant_id)
            return
        except NotFound:
            log.info("sla.check for unknown ticket %s: nothing to do", ticket_id)
            return
        except ConcurrencyError:
            # Another command on the ticket won the race: decide again on its result.
            if attempt == ATTEMPTS:
                raise


def register(registry: Registry) -> None:
    """Add the ``sla.check`` kind to ``registry``."""
    registry.register(SLA_CHECK, check_sla)
