"""The changes feed: every event of the tenant after a seq, for clients that mirror the
desk into their own systems.

A client keeps one number, the last seq it applied, and asks for what came after it.
The tenant's seq is gapless and commits in order (an append holds the tenant's head
row to its commit), and each page is read at a committed head in one snapshot, so a
client that applies every page in order sees every event exactly once: no time
windows, no duplicates to weed out. Filters (``types``, ``stream_type``) narrow what a
page carries; its ``next_after_seq`` still moves past the events they skipped. Agents
get every stream they read elsewhere (tickets, contacts, organizations, groups, ticket
fields) but the tenant's own; admins get everything. The live feed follows the same
rule (``api.http.access.event_types_for``).

Events come in the live feed's envelope (``docs/websocket.md``) with ``seq`` and
``stream_type`` beside it; ``client/mirror.py`` folds pages into tickets, messages,
contacts and organizations exactly as ``GET`` shows them. It tolerates lag, so it reads through
``services.reads`` (the replica while it is fit) and says where in ``Read-From``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from api.http.access import event_types_for, permissions_of
from api.http.answer_headers import READ_FROM, READ_LAG, sends
from api.http.deps import Authorized, ServicesDep
from api.http.lagging import source_headers
from api.http.params import ANY_OF, EventTypeName, StreamTypeName
from api.http.problem_docs import errors
from api.http.routing import StrictRoute
from domain.event_types import EVENT_TYPES, STREAM_KINDS, STREAM_TYPES
from domain.mapper import current_data, format_datetime
from eventstore.reads import ChangesPage
from eventstore.store import EventStore

router = APIRouter(tags=["changes"], route_class=StrictRoute)

INT64 = 2**63 - 1
DEFAULT_CHANGES = 100
MAX_CHANGES = 1000
WINDOW = 10_000
"""The most seqs one page looks at: a filter that matches little answers a short page
at once (with ``next_after_seq`` past what it skipped) instead of reading the whole
history in one request."""


class ChangeActorOut(BaseModel):
    kind: str
    id: str


class ChangeOut(BaseModel):
    seq: int
    stream_id: UUID
    stream_type: str = Field(description="the kind of stream: " + ", ".join(STREAM_KINDS))
    version: int
    type: str
    data: dict[str, Any]
    recorded_at: datetime
    actor: ChangeActorOut


class ChangesOut(BaseModel):
    data: list[ChangeOut]
    next_after_seq: int = Field(
        description="pass as `after_seq` for the next page; past events a filter skipped")
    head_seq: int = Field(description="the tenant's last committed seq when read; the "
                                      "client is caught up when `next_after_seq` reaches it")


def _data(type_: str, schema_version: int, text: str) -> Any:
    """The payload in its current shape: passed through as stored when it is already
    (no decoding and encoding again), upcast otherwise."""
    cls = EVENT_TYPES.get(type_)
    if cls is None or schema_version == cls.SCHEMA_VERSION:
        return orjson.Fragment(text)
    return current_data(type_, schema_version, orjson.loads(text))


def _change(row: Any) -> dict[str, Any]:
    type_ = row["type"]
    return {
        "seq": row["seq"], "stream_id": str(row["stream_id"]),
        "stream_type": STREAM_TYPES.get(type_, "unknown"), "version": row["version"],
        "type": type_, "data": _data(type_, row["schema_version"], row["data_json"]),
        "recorded_at": format_datetime(row["recorded_at"]),
        "actor": {"kind": row["actor_kind"], "id": row["actor_id"]},
    }


def _types(types: list[str] | None, stream_type: list[str] | None,
           permissions: frozenset[str]) -> list[str] | None:
    """The event types a page may carry (None: all): the filters', within what the
    caller's permissions read (``event_types_for``). Cursors move past the rest like past a
    filter."""
    wanted = set(types) if types else None
    if stream_type:
        allowed = {cls.TYPE for kind in stream_type for cls in STREAM_KINDS[kind]}
        wanted = allowed if wanted is None else wanted & allowed
    readable = event_types_for(permissions)
    if readable is not None:
        wanted = set(readable) if wanted is None else wanted & readable
    return None if wanted is None else sorted(wanted)


@router.get("/v1/changes", response_model=ChangesOut,
            responses=errors() | sends(200, required=(READ_FROM, READ_LAG)),
            summary="The tenant's events after a seq, in seq order, for mirroring")
async def changes(
    principal: Authorized,
    services: ServicesDep,
    after_seq: Annotated[int, Query(ge=0, le=INT64 - WINDOW,
                                    description="the last seq the client applied")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_CHANGES)] = DEFAULT_CHANGES,
    types: Annotated[list[EventTypeName] | None,
                     Query(max_length=50, description=ANY_OF)] = None,
    stream_type: Annotated[list[StreamTypeName] | None, Query(description=ANY_OF)] = None,
) -> Response:
    wanted = _types(types, stream_type, permissions_of(principal.role, principal.scopes))

    async def read(store: EventStore) -> ChangesPage:
        async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
            if wanted == []:  # filters that exclude everything: skip the window
                head = (await s.head())[0]
                return ChangesPage([], max(after_seq, min(after_seq + WINDOW, head)), head)
            return await s.read_changes(after_seq, limit, window=WINDOW, types=wanted)

    page, source = await services.reads.run(read)
    body = {"data": [_change(r) for r in page.events], "next_after_seq": page.next_after_seq,
            "head_seq": page.head_seq}
    return Response(orjson.dumps(body), media_type="application/json",
                    headers=source_headers(source))
