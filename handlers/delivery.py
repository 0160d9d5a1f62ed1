"""One attempt of an outbound delivery job, and how its row is settled.

Every job that hands something of a ticket to another system (a reply mailed by
``mail.send``, a reply or notice posted to Slack by ``slack.post``) has the same shape:
its row (one per thing delivered, made before the first attempt) says ``queued``,
``sent`` or ``dead``; an attempt calls the other side outside any transaction, then
settles the row in a transaction of its own:

- taken: ``sent``, with what the other side acknowledged (an SMTP queue, a Slack
  ``ts``);
- refused for good (``failure.permanent``): ``dead`` at once with the reason;
- failed: the reason is kept and the job raises, to be retried with backoff, until its
  last attempt leaves the row ``dead`` with the reason.

The settling is the caller's (``Settle``): which table, and what else it records (a
mailbox's or Slack's last use, for readiness).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from domain.ids import TenantId
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from scheduler.queue import Job

T = TypeVar("T")


class DeliveryFailed(Exception):
    """The other side did not take it; ``permanent``: and never will, retrying is vain."""

    permanent: bool = False

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason)
        self.permanent = permanent


Settle = Callable[[UnitOfWork, str, str | None, T | None], Awaitable[None]]
"""``(uow, status, reason, acknowledged)``: write the row's outcome."""


async def attempt(store: EventStore, tenant: TenantId, actor: StoreActor, job: Job,
                  send: Callable[[], Awaitable[T]], settle: Settle[T],
                  failures: tuple[type[Exception], ...] = (DeliveryFailed,)) -> T | None:
    """Run ``send`` once and settle the row (module docstring); what the other side
    acknowledged, or None when the row went ``dead``. Raises the failure when the job
    is to be retried.

    Takes the store, not a unit of work: the other side is called outside any
    transaction, and the row settled in one of its own after."""
    try:
        acknowledged = await send()
    except failures as exc:
        dead = job.attempts >= job.max_attempts or getattr(exc, "permanent", False)
        async with store.unit_of_work(tenant, actor) as uow:
            await settle(uow, "dead" if dead else "queued", str(exc)[:500], None)
        if dead:
            return None
        raise
    async with store.unit_of_work(tenant, actor) as uow:
        await settle(uow, "sent", None, acknowledged)
    return acknowledged


__all__ = ["DeliveryFailed", "Settle", "attempt"]
