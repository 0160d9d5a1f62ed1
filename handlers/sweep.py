"""``tickets.sweep``: pending tickets nobody touched become solved, old solved ones closed.

One job per tenant, periodic (it re-schedules itself under its dedupe key after each
run), seeded for every tenant by ``jobs.seed_tenants``. Windows come from the
tenant's settings (``sweep``: ``pending_days``, ``solved_days``). Each ticket moves
in its own transaction through the write path, with actor ``system``; the staleness
is re-checked under the ticket's row lock, so a ticket touched meanwhile is left alone.
Each move carries its reason (the rule and its window) on the ``StateChanged`` event.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from uuid import UUID

from domain.errors import DomainError
from domain.ids import TenantId
from domain.ticket.commands import ChangeState
from domain.values import Actor, ActorKind, TicketState
from eventstore.errors import ConcurrencyError
from eventstore.store import EventStore
from eventstore.types import SYSTEM
from handlers.ticket_state import load_ticket
from handlers.tickets import execute
from projections.tenant_settings import load_settings
from scheduler.jobs import Q
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

KIND = "tickets.sweep"
SWEEPER = Actor(kind=ActorKind.SYSTEM, id="sweep")
BATCH = 200

log = logging.getLogger("helpdesk.scheduler")


async def sweep_tenant(store: EventStore, tenant_id: TenantId, now: datetime) -> dict[str, int]:
    """Solve stale pending tickets and close stale solved ones; returns counts moved.

    Takes the store, not a unit of work: it lists in batches and moves each ticket in
    its own short transaction, so a ticket a command races with is left for the next
    sweep without undoing the others, and no lock is held across a tenant's tickets."""
    async with store.unit_of_work(tenant_id, SYSTEM, readonly=True) as s:
        windows = (await load_settings(s.conn, tenant_id)).sweep
    moves = [
        (TicketState.PENDING, TicketState.SOLVED, windows.pending_days),
        (TicketState.SOLVED, TicketState.CLOSED, windows.solved_days),
    ]
    counts: dict[str, int] = {}
    for from_state, to_state, days in moves:
        before = now - timedelta(days=days)
        # On the event, so the ticket's history says why it moved and on which rule.
        reason = (f"{from_state.value} with no activity for {days} days: "
                  f"{to_state.value} by the sweep")
        moved = 0
        while True:
            async with store.unit_of_work(tenant_id, SYSTEM, readonly=True) as s:
                rows = await s.conn.fetch(Q["stale_tickets"], tenant_id, from_state.value,
                                          before, BATCH)
            for row in rows:
                moved += await _move(store, tenant_id, row["id"], from_state,
                                     ChangeState(to=to_state, reason=reason, actor=SWEEPER,
                                                 at=now), before)
            if len(rows) < BATCH:
                break
        counts[to_state.value] = moved
    return counts


async def _move(store: EventStore, tenant_id: TenantId, ticket_id: UUID,
                from_state: TicketState, command: ChangeState, before: datetime) -> int:
    try:
        async with store.unit_of_work(tenant_id, SYSTEM) as s:
            ticket = await load_ticket(s.conn, tenant_id, ticket_id, for_update=True)
            if ticket is None or ticket.state is not from_state or ticket.updated_at >= before:
                return 0  # touched since the listing: not stale any more
            await execute(s, ticket_id, command)
    except (ConcurrencyError, DomainError) as exc:
        # Raced with a command; the next sweep looks again.
        log.info("sweep left ticket %s alone: %s", ticket_id, exc)
        return 0
    return 1


async def handle_sweep(ctx: JobContext, job: Job) -> None:
    if job.tenant_id is None:
        raise ValueError("tickets.sweep needs a tenant")
    counts = await sweep_tenant(ctx.store, job.tenant_id, ctx.clock.now())
    if any(counts.values()):
        log.info("swept tenant %s: %s", job.tenant_id, counts)


def register(registry: Registry, every: timedelta = timedelta(hours=1)) -> None:
    """Add the per-tenant periodic ``tickets.sweep`` to ``registry``."""
    registry.periodic(KIND, every, handle_sweep, per_tenant=True)
