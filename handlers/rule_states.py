"""Each ticket as it stood right after an event, for the rule engine's conditions.

The engine reads events some time after they commit (milliseconds normally, seconds
under load); by then the ticket row may hold later events. A condition must see the
ticket right after the event it matches, so ``TicketStates.after`` gives the state at
the event's stream version:

* the state it gave for the ticket's previous version, evolved with the event in
  memory (the engine reads every ticket event in order, so this is the usual case and
  costs no statement);
* else the ticket's row, when it is at that version (a ticket the engine had not seen
  since this process started, and nothing after the event yet);
* else a fold of the ticket's events up to that version, from the state it knew (an
  older version), or from the start.

States are folded from committed events only, never from what a batch stages, so a
rolled-back batch leaves nothing wrong behind; events are immutable, so the state of a
ticket at a version is the same in every process and a bounded memory of them (least
recently used out) is only a saving. The requester's name and e-mail are not read
from sealed fields here (they fold as empty text); no condition asks for them, and
actions load the ticket afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from uuid import UUID

import asyncpg

from domain.errors import CorruptStream
from domain.ids import TenantId
from domain.ticket import Ticket
from domain.ticket.state import evolve
from projections import rules as read_model
from projections.base import Envelope

REMEMBERED = 10_000
"""How many tickets' latest states one engine keeps."""


class TicketStates:
    """The state of tickets right after their events (see the module)."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._known: OrderedDict[tuple[TenantId, UUID], Ticket] = OrderedDict()
        self.folds = 0
        """How many times a state had to be folded from the store."""

    def continues(self, tenant_id: TenantId, envelope: Envelope) -> bool:
        """Whether the state right after ``envelope`` follows from memory alone."""
        known = self._known.get((tenant_id, envelope.stream_id))
        return known is not None and known.version in (envelope.version - 1, envelope.version)

    async def after(self, conn: asyncpg.Connection, tenant_id: TenantId, envelope: Envelope,
                    row: Ticket | None) -> Ticket | None:
        """The ticket right after ``envelope``; ``row`` is its row's state as read in
        this batch (None: no row, or not read because memory continues). None: no
        such ticket."""
        key = (tenant_id, envelope.stream_id)
        version = envelope.version
        known = self._known.get(key)
        state: Ticket | None = None
        if known is not None and known.version == version:
            state = known
        elif known is not None and known.version == version - 1:
            try:
                state = evolve(known, envelope.event)
            except CorruptStream:
                state = None
        if state is None:
            if row is None and known is None:
                return None
            if row is not None and (row.version == version or version == 0):
                state = row
            else:
                base = known if known is not None and known.version < version else None
                self.folds += 1
                state = base
                for event in await read_model.ticket_events(
                        conn, tenant_id, envelope.stream_id,
                        0 if base is None else base.version, version):
                    state = evolve(state, event)
                if state is None:
                    return None
        self._known[key] = state
        self._known.move_to_end(key)
        while len(self._known) > self.size:
            self._known.popitem(last=False)
        return state


__all__ = ["REMEMBERED", "TicketStates"]
