"""One authenticated WebSocket connection: the client's ops, the writer, the watchdog.

Three tasks per connection: the reader handles ops (subscribe, unsubscribe, ping,
presence),
the writer drains the outbox to the socket, and the watchdog sends heartbeats and
re-checks the API key so a revoked key is cut off (and the rooms against the caller's
group scope, api/feed/scope.py). The first to finish ends the
connection. A malformed op gets an ``error`` message; it never ends the connection.

Presence (api/feed/presence.py): a ``presence`` op says the caller's agent is viewing
a ticket, typing on it, or gone from it. The ticket is checked once per connection
under the caller's own row-level security (another tenant's ticket, or one outside its
groups under group-scoped access, is refused and nothing is said to anyone); presence
ops are rate-limited per connection; a socket that closes clears its presence.

A client that stops reading: once its socket has taken nothing for
``WS_STALL_SECONDS`` while a message waits, every subscription of the connection is
ended with a ``gap`` written at once, right behind what the socket already holds, and
the unsent backlog is discarded. If the socket still has not drained another
``WS_STALL_SECONDS`` later, the connection is closed with 4408 (too slow). A client
that reads slowly but keeps up never waits that long and gets neither.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from api.feed import messages as msg
from api.feed.flow import CLOSE_TOO_SLOW, SocketFlow, flow_of
from api.feed.hub import Hub
from api.feed.messages import BadRoom, Room
from api.feed.outbox import Outbox, Outgoing
from api.feed.presence import STATES, Agent
from api.feed.scope import out_of_scope
from api.feed.tasks import until_first_ends
from api.http.access import event_types_for, permissions_of
from api.http.auth import Principal, resolve
from api.root import Services
from eventstore.errors import EventStoreError, StoreUnavailable
from eventstore.sqlfile import load_queries

log = logging.getLogger("helpdesk.ws")

MAX_ROOMS = 100
CLOSE_REVOKED = 4401
CLOSE_INTERNAL_ERROR = 1011
MAX_PING_ID = 128  # characters of a string ping id
# The largest message a client may send (the server's own messages are not bounded by
# it). Ops are a few hundred bytes; uvicorn's default would accept 16 MiB to parse.
MAX_CLIENT_MESSAGE = 64 * 1024
# Presence ops a connection may send: a burst of PRESENCE_BURST, then PRESENCE_RATE a
# second (the console sends one every few seconds, and on a keystroke at most every 2 s).
PRESENCE_BURST = 10
PRESENCE_RATE = 2.0
MAX_TICKET_ID = 64  # characters of a presence op's ticket_id looked at before parsing
PRESENCE_FIELDS = frozenset({"op", "ticket_id", "state"})

Q = load_queries(Path(__file__).with_name("queries.sql"))


class TokenBucket:
    """``capacity`` tokens, refilled at ``rate`` a second on ``clock`` (seconds)."""

    def __init__(self, capacity: int, rate: float, clock: Any) -> None:
        self.capacity = float(capacity)
        self.rate = rate
        self.clock = clock
        self.tokens = float(capacity)
        self.at = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Revoked(Exception):
    """The connection's API key was revoked (or deleted) while it was open, its sign-in
    session ended, or the agent it acts as was deactivated: the socket closes with
    ``code``."""

    def __init__(self, code: int = CLOSE_REVOKED, reason: str = "api key revoked") -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class TooSlow(Exception):
    """The client's socket did not drain, even after its subscriptions were ended."""


class StreamConnection:
    """Runs the feed protocol for one authenticated socket."""

    def __init__(self, websocket: WebSocket, services: Services, hub: Hub,
                 principal: Principal, secret: str) -> None:
        self.ws = websocket
        self.services = services
        self.hub = hub
        self.principal = principal
        self.secret = secret
        agent_id = str(principal.agent_id) if principal.agent_id is not None else None
        self.outbox = Outbox(principal.tenant_id, services.settings.ws_send_queue,
                             event_types_for(permissions_of(principal.role,
                                                            principal.scopes)),
                             agent_id=agent_id)
        self.presence_id = uuid.uuid4().hex
        self.presence_agent: Agent | None = None
        self.presence_tickets: set[uuid.UUID] = set()  # checked: the caller may see them
        self.presence_budget = TokenBucket(PRESENCE_BURST, PRESENCE_RATE,
                                           asyncio.get_running_loop().time)

    async def run(self) -> None:
        """Serve until the client leaves or the key is revoked."""
        self.hub.attach(self.outbox)
        try:
            failures = await until_first_ends(self._read(), self._write(), self._watch())
        finally:
            self.hub.detach(self.outbox)
            await self._leave(self.presence_tickets)
        revoked = [exc for exc in failures if isinstance(exc, Revoked)]
        if any(isinstance(exc, TooSlow) for exc in failures):
            log.info("feed client %s stopped reading; closed with %d",
                     self.principal.key_id, CLOSE_TOO_SLOW)
        elif revoked:
            with contextlib.suppress(RuntimeError, OSError):
                await self.ws.close(revoked[0].code, revoked[0].reason)
        elif failures:
            # A bug, not the client's doing: logged, and the client told so by the
            # standard close code rather than left with a dropped socket.
            exc = failures[0]
            log.error("feed connection failed", exc_info=exc)
            with contextlib.suppress(RuntimeError, OSError):
                await self.ws.close(CLOSE_INTERNAL_ERROR, "internal error")

    async def _write(self) -> None:
        flow = flow_of(self.ws)
        if flow is not None:
            await self._write_watching(flow)
            return
        while True:  # a server without the flow extension: the queue bound alone
            item = await self.outbox.next()
            try:
                await self.ws.send_text(item.text)
            except (WebSocketDisconnect, RuntimeError, OSError):
                return

    async def _write_watching(self, flow: SocketFlow) -> None:
        stall = self.services.settings.ws_stall_seconds
        try:
            while True:
                item = await self.outbox.next()
                if flow.paused():
                    self.outbox.waits += 1
                    if not await flow.drained(stall):
                        self._stalled(flow, item)
                        if not await flow.drained(stall):
                            flow.close_now(CLOSE_TOO_SLOW, "too slow: the socket did not drain")
                            raise TooSlow()
                        continue
                flow.write_now(item.text)
        except ConnectionError:
            return

    def _stalled(self, flow: SocketFlow, item: Outgoing) -> None:
        """The socket has taken nothing for the stall time: gaps go out ahead of all."""
        if item.sub is None:
            self.outbox.push_front(item)  # a reply or heartbeat, still owed
        # else it belongs to a subscription about to be ended: its gap covers it
        gaps = self.hub.stall(self.outbox)
        log.info("feed client %s stalled; ending %d subscription(s) with a gap",
                 self.principal.key_id, len(gaps))
        for gap in gaps:
            flow.write_now(gap)

    async def _watch(self) -> None:
        settings = self.services.settings
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + settings.ws_heartbeat_seconds
        next_check = loop.time() + settings.ws_auth_recheck_seconds
        while True:
            await asyncio.sleep(max(min(next_beat, next_check) - loop.time(), 0))
            now = loop.time()
            if now >= next_beat:
                self.outbox.put_control(msg.control("heartbeat"))
                next_beat = now + settings.ws_heartbeat_seconds
            if now >= next_check:
                next_check = now + settings.ws_auth_recheck_seconds
                try:
                    current = await resolve(self.services, self.secret, expiry=False)
                except StoreUnavailable:
                    # Fail open while the database is away; the next check decides.
                    continue
                if current is None or current.key_id != self.principal.key_id:
                    if self.principal.credential == "session":
                        raise Revoked(reason="session ended")
                    raise Revoked()
                if current.barred is not None:
                    raise Revoked(4403, current.barred[1])
                await self._drop_out_of_scope()

    async def _drop_out_of_scope(self) -> None:
        """End the rooms the caller may no longer hold (group-scoped access turned on,
        or the agent left a ticket's group), each with an ``unsubscribed`` message
        whose ``reason`` is ``out_of_scope``."""
        held = [sub.room for sub in self.outbox.subscriptions.values()]
        try:
            refused = await out_of_scope(self.services.store, self.principal, held)
        except StoreUnavailable:
            return  # fail open while the database is away, as the key check does
        for room in refused:
            if self.hub.unsubscribe(self.outbox, room.name):
                self.outbox.put_control(msg.control("unsubscribed", room=room.name,
                                                    reason="out_of_scope"))
        if self.presence_tickets:
            # Present on a ticket it may no longer see: gone from it, checked again if
            # it says otherwise.
            try:
                hidden = await out_of_scope(self.services.store, self.principal,
                                            [Room(f"ticket:{t}", t)
                                             for t in self.presence_tickets])
            except StoreUnavailable:
                return
            await self._leave({room.stream_id for room in hidden if room.stream_id})

    async def _read(self) -> None:
        while True:
            try:
                raw = await self.ws.receive()
            except (WebSocketDisconnect, RuntimeError):
                return
            if raw["type"] == "websocket.disconnect":
                return
            text = raw.get("text")
            if text is None:
                self.outbox.put_control(msg.error("bad_message", "send JSON text frames"))
                continue
            await self.handle(text)

    async def handle(self, text: str) -> None:
        """Handle one client message; every problem becomes an ``error`` message."""
        try:
            op = orjson.loads(text)
        except orjson.JSONDecodeError:
            self.outbox.put_control(msg.error("bad_message", "not valid JSON"))
            return
        if not isinstance(op, dict):
            self.outbox.put_control(msg.error("bad_message", "a message is a JSON object"))
            return
        name = op.get("op")
        if name == "subscribe":
            await self._subscribe(op)
        elif name == "unsubscribe":
            self._unsubscribe(op)
        elif name == "ping":
            reply: dict[str, Any] = {}
            if "id" in op:
                ping_id = op["id"]
                # Echoed back, so held to a scalar of bounded size.
                if not ((isinstance(ping_id, int) and not isinstance(ping_id, bool))
                        or (isinstance(ping_id, str) and len(ping_id) <= MAX_PING_ID)):
                    self.outbox.put_control(msg.error(
                        "bad_message",
                        f"a ping id is an integer or a string of at most {MAX_PING_ID} "
                        "characters", op="ping"))
                    return
                reply["id"] = ping_id
            self.outbox.put_control(msg.control("pong", **reply))
        elif name == "presence":
            await self._presence(op)
        elif name == "auth":
            self.outbox.put_control(msg.error("already_authenticated",
                                              "this connection is already authenticated",
                                              op="auth"))
        else:
            self.outbox.put_control(msg.error(
                "unknown_op", "op must be one of subscribe, unsubscribe, ping, presence",
                op=name if isinstance(name, str) else None))

    async def _subscribe(self, op: dict[str, Any]) -> None:
        try:
            room = Room.parse(op.get("room"))
        except BadRoom as exc:
            self.outbox.put_control(msg.error("bad_room", str(exc), op="subscribe"))
            return
        after_seq = op.get("after_seq")
        if after_seq is not None and (
            isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < 0
        ):
            self.outbox.put_control(msg.error("bad_after_seq",
                                              "after_seq is a non-negative integer",
                                              op="subscribe", room=room.name))
            return
        if room.notices and self.principal.agent_id is None:
            self.outbox.put_control(msg.error(
                "not_an_agent", "notifications are an agent's: this key acts as no agent",
                op="subscribe", room=room.name))
            return
        if room.name in self.outbox.subscriptions:
            self.outbox.put_control(msg.error("already_subscribed",
                                              f"already subscribed to {room.name}",
                                              op="subscribe", room=room.name))
            return
        if len(self.outbox.subscriptions) >= MAX_ROOMS:
            self.outbox.put_control(msg.error("too_many_rooms",
                                              f"at most {MAX_ROOMS} rooms per connection",
                                              op="subscribe", room=room.name))
            return
        try:
            if await out_of_scope(self.services.store, self.principal, [room]):
                self.outbox.put_control(msg.error(
                    "out_of_scope",
                    "group-scoped access: this agent may not read this room (the tenant "
                    "room, or a ticket outside its groups); subscribe to the rooms of "
                    "tickets it may see", op="subscribe", room=room.name))
                return
            await self.hub.subscribe(self.outbox, room, after_seq, self.principal)
            board = self.services.presence
            if (board is not None and room.stream_id is not None
                    and room.name.startswith(msg.TICKET_PREFIX)
                    and room.name in self.outbox.subscriptions):
                # Who is on the ticket already, right behind the room's marker (nothing
                # when nobody is: a client that knows nothing of presence sees no change).
                present = board.present(self.principal.tenant_id, room.stream_id,
                                        but=self.outbox.agent_id)
                if present:
                    self.outbox.put_control(msg.control(
                        "presence_list", room=room.name, ticket_id=str(room.stream_id),
                        present=present))
        except EventStoreError as exc:
            log.warning("subscribe failed: %s", exc)
            self.outbox.put_control(msg.error("unavailable",
                                              "the event store is unavailable; retry",
                                              op="subscribe", room=room.name))

    def _unsubscribe(self, op: dict[str, Any]) -> None:
        try:
            room = Room.parse(op.get("room"))
        except BadRoom as exc:
            self.outbox.put_control(msg.error("bad_room", str(exc), op="unsubscribe"))
            return
        if not self.hub.unsubscribe(self.outbox, room.name):
            self.outbox.put_control(msg.error("not_subscribed",
                                              f"not subscribed to {room.name}",
                                              op="unsubscribe", room=room.name))
            return
        self.outbox.put_control(msg.control("unsubscribed", room=room.name))

    async def _presence(self, op: dict[str, Any]) -> None:
        """``{"op": "presence", "ticket_id": ..., "state": "viewing" | "typing" | "gone"}``."""
        def refuse(code: str, detail: str) -> None:
            self.outbox.put_control(msg.error(code, detail, op="presence"))

        board = self.services.presence
        if board is None:
            refuse("unavailable", "this process does not serve presence")
            return
        extra = sorted(set(op) - PRESENCE_FIELDS)
        if extra:
            refuse("bad_message", f"a presence op has ticket_id and state only, not {extra}")
            return
        raw, state = op.get("ticket_id"), op.get("state")
        try:
            if not isinstance(raw, str) or len(raw) > MAX_TICKET_ID:
                raise ValueError(raw)
            ticket_id = uuid.UUID(raw)
        except ValueError:
            refuse("bad_message", "ticket_id is a ticket's id (a UUID string)")
            return
        if state not in STATES:
            refuse("bad_message", "state is one of " + ", ".join(STATES))
            return
        if self.principal.agent_id is None:
            refuse("not_an_agent", "presence is a person's: use a sign-in or a key that "
                   "acts as an agent")
            return
        if not self.presence_budget.take():
            refuse("rate_limited", f"at most {PRESENCE_RATE:g} presence ops a second "
                   f"(bursts of {PRESENCE_BURST}); this one was dropped")
            return
        tenant_id = self.principal.tenant_id
        try:
            if ticket_id not in self.presence_tickets:
                if state == "gone":
                    return  # not present there: nothing to clear
                async with self.services.store.unit_of_work(tenant_id, self.principal.actor,
                                                            readonly=True) as s:
                    row = await s.conn.fetchrow(Q["presence_target"], tenant_id, ticket_id,
                                                self.principal.agent_id)
                if not row["visible"]:
                    refuse("unknown_ticket", "no ticket with this id that this agent may "
                           "see (another tenant's, or outside its groups under group-scoped "
                           "access); nothing was sent")
                    return
                if self.presence_agent is None:
                    self.presence_agent = Agent(str(self.principal.agent_id),
                                                row["agent_name"] or "An agent")
                self.presence_tickets.add(ticket_id)
            assert self.presence_agent is not None
            if state == "gone":
                self.presence_tickets.discard(ticket_id)
            await board.say(tenant_id, ticket_id, self.presence_id, self.presence_agent,
                            state)
        except EventStoreError as exc:
            log.warning("presence failed: %s", exc)
            refuse("unavailable", "the database is unavailable; retry")

    async def _leave(self, tickets: set[uuid.UUID]) -> None:
        """Clear the connection's presence on ``tickets``."""
        board = self.services.presence
        if board is None or not tickets:
            return
        gone = set(tickets)
        self.presence_tickets -= gone
        await board.leave(self.principal.tenant_id, self.presence_id, gone)
