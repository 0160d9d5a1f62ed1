"""The ticket aggregate in one place: its commands (domain/ticket/commands.py), the
decisions that turn a command and a state into events (domain/ticket/decide.py), and
the state those events build (domain/ticket/state.py).

Its events live with every other aggregate's in domain/events.py, the one registry
the mapper (domain/mapper.py) serialises from, as the group's, the contact's and the
tenant's do: the event vocabulary is the store's contract, and one list of it is what
upcasting, the changes feed and the live feed read.
"""

from __future__ import annotations

from domain.ticket.state import TRANSITIONS, Ticket, evolve, fold

__all__ = ["TRANSITIONS", "Ticket", "evolve", "fold"]
