"""``POST /v1/sla-policies/{id}/apply``: the open clocks of every ticket the tenant's
policies match to this one move to its current version now.

A policy edit applies to clocks that start after it; this is how an admin makes it
apply to those already running. Each ticket is one ``RetargetSla`` command through the
ticket write path (``handlers.tickets``), so each retarget is an ``SlaRetargeted``
event naming the policy before and after, and its timer moves with it; a ticket the
policies match to another policy, or whose clocks already run on this version, is left
as it is. One transaction for all of them: the answer says how many moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from domain.ticket.commands import RetargetSla
from eventstore.store import UnitOfWork
from handlers.errors import Missing
from handlers.ticket_state import open_ticket_ids
from handlers.tickets import run_command
from projections import sla_policies as read_model


@dataclass(frozen=True, slots=True)
class Applied:
    version: int
    tickets: int


async def apply_policy(uow: UnitOfWork, policy_id: UUID, at: datetime) -> Applied:
    """Retarget the open clocks of the tickets ``policy_id`` matches; 404 for no policy."""
    await read_model.lock_policies(uow.conn, uow.tenant_id)
    policy = await read_model.load_policy(uow.conn, uow.tenant_id, policy_id)
    if policy is None:
        raise Missing("not_found", f"no SLA policy {policy_id}")
    moved = 0
    for ticket_id in await open_ticket_ids(uow.conn, uow.tenant_id):
        result = await run_command(uow, ticket_id, RetargetSla(policy_id=policy_id, at=at))
        moved += bool(result.events)
    return Applied(policy.version, moved)


__all__ = ["Applied", "apply_policy"]
