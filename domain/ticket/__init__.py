"""The ticket aggregate in one place: its commands (domain/ticket/commands.py), the
events it appends (domain/ticket/events.py), the decisions that turn a command and a
state into events (domain/ticket/decide.py), and the state those events build
(domain/ticket/state.py).

The base class of its events is every aggregate's (domain/events.py), and
domain/event_types.py lists its events with every other stream's: one vocabulary is
what the mapper (domain/mapper.py), upcasting, the changes feed and the live feed read.
"""

from __future__ import annotations

from domain.ticket.state import TRANSITIONS, Ticket, evolve, fold

__all__ = ["TRANSITIONS", "Ticket", "evolve", "fold"]
