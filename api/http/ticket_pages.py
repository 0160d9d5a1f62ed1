"""One page of tickets as every ticket list answers it: keyset, signed cursor, the
stored documents passed through (no decoding, validation or re-encoding)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import orjson
from fastapi import Response

from api.http.pagination import PageAsked, paginate
from api.http.problems import invalid_parameter
from api.http.reply import JsonReply
from domain.ids import TenantId
from eventstore.store import UnitOfWork
from eventstore.types import StoreActor
from projections.reads import TicketFilters, list_tickets
from projections.ticket_versions import SeqAhead, instant_of, list_as_of, seq_at

if TYPE_CHECKING:
    from api.root import Services

Guard = Callable[[UnitOfWork], Awaitable[Response | None]]
"""Run first in the page's unit of work: a response to send instead (a 308, say), or
None to go on; it may raise a ``Problem``."""


@dataclass(frozen=True, slots=True)
class AsOf:
    """A moment of the desk's past: a seq, or an instant (the last seq recorded by it)."""

    seq: int | None = None
    at: datetime | None = None


async def as_of_seq(uow: UnitOfWork, as_of: AsOf) -> tuple[int, datetime | None]:
    """The seq ``as_of`` names and the instant it describes (its event's, or the one
    asked for); a seq ahead of the tenant's head is 400."""
    seq = as_of.seq if as_of.seq is not None else await seq_at(
        uow.conn, uow.tenant_id, as_of.at)  # type: ignore[arg-type]
    try:
        recorded = await instant_of(uow.conn, uow.tenant_id, seq)
    except SeqAhead as exc:
        raise invalid_parameter(f"as_of_seq {exc.seq} is ahead of the tenant's head "
                                f"({exc.head})", "as_of_seq") from exc
    return seq, as_of.at or recorded


async def ticket_page(services: Services, tenant_id: TenantId, actor: StoreActor,
                      scope: bytes, filters: TicketFilters, asked: PageAsked,
                      guard: Guard | None = None, order: str = "created",
                      as_of: AsOf | None = None) -> Response:
    """The page ``asked`` of tickets under ``filters`` in ``order`` (newest first by
    default); ``scope`` signs the cursor, and names the order when it is not the
    default, so a cursor serves only the order it came from. With ``as_of``, the
    tickets as they stood then (newest first; ``scope`` names the moment), and the
    answer names its seq. Read as ``actor``, whose row-level scope applies
    (group-scoped access, migration 0600)."""
    codec, limit, cursor = services.cursors, asked.limit, asked.cursor
    after = codec.decode(scope, cursor) if cursor is not None else None
    extra: dict[str, Any] = {}
    async with services.store.unit_of_work(tenant_id, actor, readonly=True) as uow:
        if guard is not None:
            instead = await guard(uow)
            if instead is not None:
                return instead
        if as_of is None:
            rows = await list_tickets(uow.conn, tenant_id, filters, after, limit + 1,
                                      order)
        else:
            seq, _ = await as_of_seq(uow, as_of)
            rows = await list_as_of(uow.conn, tenant_id, seq, filters, after, limit + 1)
            extra["as_of_seq"] = seq
    page, next_cursor = paginate(codec, scope, rows, limit, lambda t: (t.sort_key, t.id))
    return JsonReply(200, {"data": [orjson.Fragment(t.view) for t in page],
                           "next_cursor": next_cursor, **extra}).response()


__all__ = ["AsOf", "Guard", "as_of_seq", "ticket_page"]
