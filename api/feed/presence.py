"""Presence in ticket rooms: which agents are viewing a ticket, and which are typing.

Presence is ephemeral: never an event, never a row. Each process keeps a board of the
entries it knows, one per (tenant, ticket, connection): the agent, when its viewing
lapses and when its typing lapses. A client refreshes its entry (the console every few
seconds); an entry not refreshed lapses by itself, typing after ``typing_seconds``
(back to viewing), viewing after ``viewing_seconds`` (gone). A socket that closes
clears its entries at once.

Across processes: a change made on one process goes out as a notification on
``helpdesk_presence`` (LISTEN/NOTIFY, on a listen connection of the board's own), and
every process applies it to its own board. The payload carries the time to live in
seconds, not an instant, so each process times the lapse on its own clock and hosts
whose clocks differ agree on how long an entry lasts. A notification lost (a listen
connection down, a process gone) heals by itself: the next refresh brings the entry
back, and the lapse takes away what nobody refreshes.

What subscribers of a ticket's room are told is one ``presence`` message per agent
whose state there changes (an agent with two tabs on one ticket is one presence: typing
if either types); a refresh that changes nothing sends nothing. An agent is not told of
its own presence. The clock is injected (``clock``, seconds since the epoch), so tests
move time instead of sleeping; ``sweep`` applies the lapses due.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import asyncpg
import orjson

from domain.ids import TenantId
from domain.mapper import format_datetime
from eventstore.background import cancel_and_wait
from eventstore.errors import StoreUnavailable
from eventstore.listener import Listener
from eventstore.notifier import SEND
from eventstore.store import EventStore

log = logging.getLogger("helpdesk.ws")

CHANNEL = "helpdesk_presence"
VIEWING = "viewing"
TYPING = "typing"
GONE = "gone"
STATES = (VIEWING, TYPING, GONE)
"""What a client may say of itself on a ticket."""
MAX_NAME = 200  # characters of an agent's name carried in a notification
MAX_SWEEP_WAIT = 1.0  # seconds between sweeps at most (a clock moved by a test)

Cast = Callable[[TenantId, uuid.UUID, str, str], None]
"""``cast(tenant, ticket, text, agent_id)``: send ``text`` to the ticket room's
subscribers in this process, except those of agent ``agent_id``."""


@dataclass(frozen=True, slots=True)
class Agent:
    """Who is present: the agent's id and name."""

    id: str
    name: str


@dataclass(slots=True)
class Entry:
    """One connection's presence on one ticket."""

    agent: Agent
    viewing_until: float
    typing_until: float = 0.0

    def state(self, now: float) -> str:
        if now >= self.viewing_until:
            return GONE
        return TYPING if now < self.typing_until else VIEWING

    def until(self, now: float) -> float:
        """When the state lapses (typing to viewing, viewing to gone)."""
        return self.typing_until if now < self.typing_until else self.viewing_until


Key = tuple[TenantId, uuid.UUID]  # (tenant, ticket)


def _iso(instant: float) -> str:
    return format_datetime(datetime.fromtimestamp(instant, UTC))


class PresenceBoard:
    """This process's view of presence, kept in step with every other process's."""

    def __init__(self, store: EventStore, cast: Cast, *, viewing_seconds: float = 30.0,
                 typing_seconds: float = 6.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.cast = cast
        self.viewing_seconds = viewing_seconds
        self.typing_seconds = min(typing_seconds, viewing_seconds)
        self.clock = clock
        self.origin = uuid.uuid4().hex
        """This process's mark on the notifications it sends (it applied them already)."""
        self.tickets: dict[Key, dict[str, Entry]] = {}
        """Entries by ticket, then by connection."""
        self.told: dict[tuple[TenantId, uuid.UUID, str], str] = {}
        """What each ticket room was last told of each agent present (gone: absent)."""
        self.listener: Listener | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    # --- lifecycle -----------------------------------------------------------------

    def start(self, listen_dsn: str) -> None:
        self.listener = Listener(listen_dsn, CHANNEL, self.notified, lambda: None)
        self.listener.start()
        self._sweeper = asyncio.create_task(self._sweep_loop(), name="helpdesk-presence")

    async def stop(self) -> None:
        await cancel_and_wait(self._sweeper)
        if self.listener is not None:
            await self.listener.stop()
        self.tickets.clear()
        self.told.clear()

    # --- what clients say ----------------------------------------------------------

    async def say(self, tenant_id: TenantId, ticket_id: uuid.UUID, connection: str,
                  agent: Agent, state: str) -> None:
        """Record ``state`` of ``connection`` on a ticket here and tell every other
        process; raises ``StoreUnavailable`` when the database cannot carry it (then
        nothing changed)."""
        agent = Agent(agent.id, agent.name[:MAX_NAME])
        await self._send([self._note(tenant_id, ticket_id, connection, agent, state)])
        self._apply(tenant_id, ticket_id, connection, agent, state)

    async def leave(self, tenant_id: TenantId, connection: str,
                    tickets: Iterable[uuid.UUID]) -> None:
        """The connection is gone (or may no longer see these tickets): clear its
        entries here at once, and tell the other processes if the database lets us
        (if not, their entries lapse by themselves)."""
        notes = []
        for ticket_id in list(tickets):
            entry = self.tickets.get((tenant_id, ticket_id), {}).get(connection)
            if entry is None:
                continue
            self._apply(tenant_id, ticket_id, connection, entry.agent, GONE)
            notes.append(self._note(tenant_id, ticket_id, connection, entry.agent, GONE))
        if notes:
            try:
                await self._send(notes)
            except StoreUnavailable as exc:
                log.warning("could not send presence: %s", exc)

    def present(self, tenant_id: TenantId, ticket_id: uuid.UUID,
                but: str | None = None) -> list[dict[str, Any]]:
        """Who is on a ticket now, one item per agent (but the agent ``but``)."""
        now = self.clock()
        agents = {entry.agent.id: entry.agent
                  for entry in self.tickets.get((tenant_id, ticket_id), {}).values()}
        out = []
        for agent_id, agent in sorted(agents.items(), key=lambda kv: kv[1].name):
            if agent_id == but:
                continue
            state, until = self._agent_state(tenant_id, ticket_id, agent_id, now)
            if state != GONE:
                out.append({"agent": {"id": agent.id, "name": agent.name}, "state": state,
                            "expires_at": _iso(until)})
        return out

    def tickets_of(self, tenant_id: TenantId, connection: str) -> list[uuid.UUID]:
        """The tickets ``connection`` has an entry on."""
        return [ticket for (tenant, ticket), entries in self.tickets.items()
                if tenant == tenant_id and connection in entries]

    # --- across processes ----------------------------------------------------------

    def _note(self, tenant_id: TenantId, ticket_id: uuid.UUID, connection: str,
              agent: Agent, state: str) -> str:
        """The notification of a change, as ``notified`` reads it."""
        return orjson.dumps({"tenant": str(tenant_id), "ticket": str(ticket_id),
                             "connection": connection,
                             "agent": {"id": agent.id, "name": agent.name},
                             "state": state, "origin": self.origin,
                             "expires_in": self._ttl(state)}).decode()

    async def _send(self, notes: list[str]) -> None:
        try:
            async with self.store.connection() as conn:
                await conn.fetchval(SEND, CHANNEL, notes)
        except (asyncpg.PostgresError, OSError, TimeoutError, asyncpg.InterfaceError) as exc:
            raise StoreUnavailable(f"database unavailable: {exc}") from exc

    def notified(self, payload: str) -> None:
        """Apply another process's change (our own were applied when sent)."""
        try:
            note = orjson.loads(payload)
            if note["origin"] == self.origin:
                return
            state = note["state"]
            if state not in STATES:
                raise ValueError(state)
            tenant_id = TenantId(uuid.UUID(note["tenant"]))
            ticket_id = uuid.UUID(note["ticket"])
            agent = Agent(str(note["agent"]["id"]), str(note["agent"]["name"]))
            connection = str(note["connection"])
            ttl = float(note["expires_in"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            log.warning("ignoring malformed presence notification %r", payload[:200])
            return
        self._apply(tenant_id, ticket_id, connection, agent, state,
                    ttl=min(max(ttl, 0.0), self.viewing_seconds))

    # --- the board -----------------------------------------------------------------

    def _ttl(self, state: str) -> float:
        return {VIEWING: self.viewing_seconds, TYPING: self.typing_seconds, GONE: 0.0}[state]

    def _agent_state(self, tenant_id: TenantId, ticket_id: uuid.UUID, agent_id: str,
                     now: float) -> tuple[str, float]:
        """The agent's presence over all its connections: typing if any types."""
        best, until = GONE, now
        for entry in self.tickets.get((tenant_id, ticket_id), {}).values():
            if entry.agent.id != agent_id:
                continue
            state = entry.state(now)
            if state == GONE:
                continue
            if best == GONE or (state == TYPING and best == VIEWING):
                best, until = state, entry.until(now)
            elif state == best:
                until = max(until, entry.until(now))
        return best, until

    def _apply(self, tenant_id: TenantId, ticket_id: uuid.UUID, connection: str,
               agent: Agent, state: str, ttl: float | None = None) -> None:
        now = self.clock()
        key = (tenant_id, ticket_id)
        entries = self.tickets.setdefault(key, {})
        if state == GONE:
            entries.pop(connection, None)
        else:
            ttl = self._ttl(state) if ttl is None else ttl
            entry = entries.get(connection)
            if state == TYPING:
                # Typing is viewing too: both are refreshed.
                viewing = max(entry.viewing_until if entry else 0.0,
                              now + self.viewing_seconds)
                entries[connection] = Entry(agent, viewing, now + ttl)
            else:
                # Viewing and not (or no longer) typing.
                entries[connection] = Entry(agent, now + ttl)
            self._changed.set()
        if not entries:
            del self.tickets[key]
        self._settle(tenant_id, ticket_id, agent, now)

    def _settle(self, tenant_id: TenantId, ticket_id: uuid.UUID, agent: Agent,
                now: float) -> None:
        """Tell the room if the agent's presence is not what it was last told."""
        state, until = self._agent_state(tenant_id, ticket_id, agent.id, now)
        told = (tenant_id, ticket_id, agent.id)
        if self.told.get(told, GONE) == state:
            return
        if state == GONE:
            del self.told[told]
        else:
            self.told[told] = state
        frame: dict[str, Any] = {"type": "presence", "room": f"ticket:{ticket_id}",
                                 "ticket_id": str(ticket_id),
                                 "agent": {"id": agent.id, "name": agent.name},
                                 "state": state}
        if state != GONE:
            frame["expires_at"] = _iso(until)
        self.cast(tenant_id, ticket_id, orjson.dumps(frame).decode(), agent.id)

    def sweep(self) -> float | None:
        """Apply every lapse due by the clock; returns when the next one falls due."""
        now = self.clock()
        upcoming: float | None = None
        lapsed: list[tuple[TenantId, uuid.UUID, Agent]] = []
        for key in list(self.tickets):
            entries = self.tickets[key]
            for connection, entry in list(entries.items()):
                if entry.state(now) == GONE:
                    del entries[connection]
                    lapsed.append((*key, entry.agent))
                    continue
                if now >= entry.typing_until > 0:
                    entry.typing_until = 0.0  # typing lapsed: viewing from here on
                    lapsed.append((*key, entry.agent))
                until = entry.until(now)
                upcoming = until if upcoming is None else min(upcoming, until)
            if not entries:
                del self.tickets[key]
        for tenant_id, ticket_id, agent in lapsed:
            self._settle(tenant_id, ticket_id, agent, now)
        return upcoming

    async def _sweep_loop(self) -> None:
        while True:
            upcoming = self.sweep()
            self._changed.clear()
            wait = MAX_SWEEP_WAIT if upcoming is None else min(
                max(upcoming - self.clock(), 0.01), MAX_SWEEP_WAIT)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), wait)

    def stats(self) -> dict[str, int]:
        return {"tickets": len(self.tickets),
                "entries": sum(len(e) for e in self.tickets.values())}


__all__ = ["CHANNEL", "GONE", "STATES", "TYPING", "VIEWING", "Agent", "PresenceBoard"]
