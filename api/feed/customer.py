"""``WS /v1/portal/stream``: the customer portal's live feed.

A contact signed in to the portal learns here that one of their own tickets changed:
a new public message (an agent's reply), a state change, a follow-up. The first
message is ``{"op": "auth", "token": "<portal token>", "after_seq": n}`` (``after_seq``
optional: from now); the server answers ``authenticated`` with the tenant's head, then
sends ``{"type": "event", "seq", "event": {"type", "stream_id", "version",
"recorded_at"}}`` for each event the contact may read, in seq order. The page reads
what changed over the portal's REST routes, in their reduced shapes: the feed carries
no payloads and no actors, so no staff id reaches a customer through it.

Which events those are is decided by the database, not here: the feed does not read
the staff feed's ring (which holds every event of the tenant) but reads the event
store itself, in a read-only transaction acting as the customer, where row-level
security (migration 0463) returns only the public events of the contact's own
tickets. The hub only says when to read (``Hub.watch``: a commit notification, the
listener's reconnection, or the poll timer for a lost notification).

Position: after each read the connection moves to the tenant head it read in the same
transaction (events commit in seq order, so every seq up to it was visible), so a
quiet contact on a busy tenant never scans the same rows twice. ``seq`` values are the
tenant's, so they are not contiguous for a contact; a client resumes by sending its
last seq as ``after_seq`` (more than ``WS_REPLAY_WINDOW`` behind the head, it gets a
``gap`` with the head and reloads over REST instead). The portal session is checked again every
``WS_AUTH_RECHECK_SECONDS``: signing out, a replayed refresh token or a merge closes
the socket with 4401.
"""

from __future__ import annotations

import asyncio
import contextlib

import orjson
from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect

from api.feed import messages as msg
from api.feed.hub import Hub
from api.feed.route import Refused, first_auth_message, resolved
from api.feed.tasks import until_first_ends
from api.http.auth import Principal, customer_of
from api.http.routing import StrictRoute
from api.root import Services
from domain.mapper import format_datetime
from eventstore.errors import EventStoreError, StoreUnavailable
from eventstore.types import RecordedEvent
from handlers import portal

router = APIRouter(route_class=StrictRoute)

CUSTOMER_FEED_OPERATION = "WS /v1/portal/stream"
BATCH = 200
CLOSE_ENDED = 4401


async def _auth(websocket: WebSocket, services: Services) -> tuple[Principal, str, int | None]:
    op = await first_auth_message(websocket)
    token, after = op.get("token"), op.get("after_seq")
    if not isinstance(token, str) or not token:
        raise Refused(4401, "auth needs a portal token")
    if after is not None and (isinstance(after, bool) or not isinstance(after, int)
                              or after < 0):
        raise Refused(4400, "after_seq is a non-negative integer")
    principal = await resolved(customer_of(services, token),
                               "the portal token has expired or its session has ended")
    return principal, token, after


def _event(event: RecordedEvent) -> str:
    return orjson.dumps({"type": "event", "seq": event.seq, "event": {
        "type": event.type, "stream_id": str(event.stream_id), "version": event.version,
        "recorded_at": format_datetime(event.recorded_at)}}).decode()


class CustomerFeed:
    """One contact's socket: read what the contact may see after ``position``, send
    it, wait for the next wake-up."""

    def __init__(self, websocket: WebSocket, services: Services, hub: Hub,
                 principal: Principal, token: str) -> None:
        self.ws, self.services, self.hub = websocket, services, hub
        self.principal, self.token = principal, token
        assert principal.contact_id is not None
        self.actor = portal.customer_actor(principal.contact_id)

    async def head(self) -> int:
        async with self.services.store.unit_of_work(self.principal.tenant_id, self.actor,
                                                    readonly=True) as uow:
            seq, _ = await uow.head()
        return seq

    async def read(self, position: int) -> tuple[list[RecordedEvent], int]:
        """The contact's events after ``position`` (row-level security filters them)
        and the position to read from next."""
        async with self.services.store.unit_of_work(self.principal.tenant_id, self.actor,
                                                    readonly=True) as uow:
            head, _ = await uow.head()
            rows = await uow.read_tenant(position, BATCH)
        if len(rows) == BATCH:
            return rows, rows[-1].seq
        return rows, max([head, position, *(e.seq for e in rows)])

    async def run(self, position: int) -> None:
        wake = self.hub.watch(self.principal.tenant_id)
        try:
            failures = await until_first_ends(self._send(wake, position), self._drain_client(),
                                              self._recheck())
        finally:
            self.hub.unwatch(self.principal.tenant_id, wake)
        for refused in failures:
            if isinstance(refused, Refused):
                with contextlib.suppress(RuntimeError, OSError):
                    await self.ws.close(refused.code, refused.reason)

    async def _send(self, wake: asyncio.Event, position: int) -> None:
        beat = self.services.settings.ws_heartbeat_seconds
        while True:
            wake.clear()
            try:
                rows, position = await self.read(position)
            except EventStoreError:
                rows = []  # the next wake-up reads again from the same position
            for event in rows:
                await self.ws.send_text(_event(event))
            if rows and len(rows) == BATCH:
                continue
            try:
                await asyncio.wait_for(wake.wait(), beat)
            except TimeoutError:
                await self.ws.send_text(msg.control("heartbeat"))

    async def _drain_client(self) -> None:
        # The client has nothing to say after auth; anything it sends is read and
        # dropped, and its leaving ends the connection.
        while True:
            raw = await self.ws.receive()
            if raw["type"] == "websocket.disconnect":
                return

    async def _recheck(self) -> None:
        while True:
            await asyncio.sleep(self.services.settings.ws_auth_recheck_seconds)
            try:
                current = await customer_of(self.services, self.token, expiry=False)
            except StoreUnavailable:
                continue  # fail open while the database is away; the next check decides
            if current is None or current.key_id != self.principal.key_id:
                raise Refused(CLOSE_ENDED, "the portal session has ended")


@router.websocket("/v1/portal/stream")
async def customer_stream(websocket: WebSocket) -> None:
    """The portal's live feed: the signed-in contact's own tickets' public events."""
    services: Services = websocket.state.services
    hub = services.hub
    if hub is None:
        await websocket.close(1011, "this process does not serve the feed")
        return
    await websocket.accept()
    try:
        principal, token, after = await _auth(websocket, services)
        feed = CustomerFeed(websocket, services, hub, principal, token)
        head = await feed.head()
    except Refused as exc:
        await websocket.close(exc.code, exc.reason)
        return
    except (WebSocketDisconnect, StoreUnavailable):
        return
    await websocket.send_text(msg.control(
        "authenticated", tenant_id=str(principal.tenant_id),
        contact_id=str(principal.contact_id), head_seq=head,
        heartbeat_seconds=services.settings.ws_heartbeat_seconds))
    if after is not None and head - after > services.settings.ws_replay_window:
        # Too far back to read under the policy row by row: the page reads its
        # tickets over REST and goes on from the head, as after a staff feed's gap.
        await websocket.send_text(msg.control("gap", head_seq=head))
        after = None
    with contextlib.suppress(WebSocketDisconnect, RuntimeError, OSError):
        await feed.run(head if after is None else min(after, head))
