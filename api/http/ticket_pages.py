"""One page of tickets as every ticket list answers it: keyset, signed cursor, the
stored documents passed through (no decoding, validation or re-encoding)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import orjson
from fastapi import Response

from api.http.pagination import paginate
from api.http.reply import JsonReply
from domain.ids import TenantId
from eventstore.store import UnitOfWork
from eventstore.types import StoreActor
from projections.reads import TicketFilters, list_tickets

if TYPE_CHECKING:
    from api.root import Services

Guard = Callable[[UnitOfWork], Awaitable[Response | None]]
"""Run first in the page's unit of work: a response to send instead (a 308, say), or
None to go on; it may raise a ``Problem``."""


async def ticket_page(services: Services, tenant_id: TenantId, actor: StoreActor,
                      scope: bytes, filters: TicketFilters, limit: int, cursor: str | None,
                      guard: Guard | None = None, order: str = "created") -> Response:
    """Tickets under ``filters`` in ``order`` (newest first by default); ``scope`` signs
    the cursor, and names the order when it is not the default, so a cursor serves
    only the order it came from. Read as ``actor``, whose row-level scope applies
    (group-scoped access, migration 0600)."""
    codec = services.cursors
    after = codec.decode(scope, cursor) if cursor is not None else None
    async with services.store.session(tenant_id, actor, readonly=True) as session:
        if guard is not None:
            instead = await guard(session)
            if instead is not None:
                return instead
        rows = await list_tickets(session.conn, tenant_id, filters, after, limit + 1, order)
    page, next_cursor = paginate(codec, scope, rows, limit, lambda t: (t.sort_key, t.id))
    return JsonReply(200, {"data": [orjson.Fragment(t.view) for t in page],
                           "next_cursor": next_cursor}).response()


__all__ = ["Guard", "ticket_page"]
