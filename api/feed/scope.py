"""Which rooms a connection may hold under group-scoped access (docs/teamwork.md).

The hub reads and fans out events once per tenant for every connection, outside any
caller's row-level scope, so a room is checked against the caller's scope here: when it
is subscribed, and again at every re-check of the credential (``WS_AUTH_RECHECK_SECONDS``),
so a change of the setting or of a group's members reaches open sockets too. A scoped
agent holds ticket rooms of tickets it may see (and other stream rooms), never the
tenant room, whose fan-out is not filtered per ticket.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from api.feed.messages import Room
from api.http.principal import Principal
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore

Q = load_queries(Path(__file__).with_name("queries.sql"))


async def out_of_scope(store: EventStore, principal: Principal, rooms: Iterable[Room]
                       ) -> list[Room]:
    """The rooms among ``rooms`` that ``principal`` may not hold, read under its own
    armed actor."""
    wanted = list(rooms)
    if not wanted:
        return []
    streams = [r.stream_id for r in wanted if r.stream_id is not None]
    async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
        row = await s.conn.fetchrow(Q["hidden_streams"], principal.tenant_id, streams)
    if not row["scoped"]:
        return []
    hidden = set(row["hidden"])
    # The notifications room is the agent's own; each notice is checked as it goes out.
    return [r for r in wanted if (r.stream_id is None and not r.notices)
            or r.stream_id in hidden]


__all__ = ["out_of_scope"]
