"""One page of a stream's history (a ticket's, a field's), read where lag is tolerated."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import Response

from api.http.auth import Principal
from api.http.lagging import source_headers
from api.http.pagination import PageAsked, paginate_int, scope_of
from api.schemas.events import render_event
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import RecordedEvent

if TYPE_CHECKING:
    from api.root import Services

ReadPage = Callable[[UnitOfWork, int, int], Awaitable[list[RecordedEvent]]]
"""``(session, after version, how many) -> events``; raises to refuse (a 404, say)."""


async def history_page(services: Services, principal: Principal, response: Response,
                       list_name: str, filters: dict[str, Any], asked: PageAsked,
                       read_page: ReadPage) -> dict[str, Any]:
    """``{"data", "next_cursor"}`` of the page ``asked`` of a stream's events in version
    order, read on the replica while it is fit (``Read-From`` and ``Read-Lag-Seconds``
    say where)."""
    codec, limit, cursor = services.cursors, asked.limit, asked.cursor
    scope = scope_of(principal.tenant_id, list_name, filters)
    after = 0 if cursor is None else codec.decode_int(scope, cursor)

    async def read(store: EventStore) -> list[RecordedEvent]:
        async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
            return await read_page(s, after, limit + 1)

    rows, source = await services.reads.run(read)
    events, nxt = paginate_int(codec, scope, rows, limit, lambda e: e.version)
    response.headers.update(source_headers(source))
    return {"data": [render_event(e) for e in events], "next_cursor": nxt}


__all__ = ["ReadPage", "history_page"]
