"""The ticket aggregate in one place: its commands (``commands``), the decisions that
turn a command and a state into events (``decide``), and the state those events build
(``state``: ``Ticket``, ``evolve``).

Its events live with every other aggregate's in domain/events.py, the one registry
the mapper (domain/mapper.py) serialises from, as the group's, the contact's and the
tenant's do: the event vocabulary is the store's contract, and one list of it is what
upcasting, the changes feed and the live feed read.
"""

from __future__ import annotations

from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangeFields,
    ChangePriority,
    ChangeRequester,
    ChangeState,
    ChangeTags,
    CheckSla,
    Command,
    OpenTicket,
)
from domain.ticket.decide import decide, decide_follow_up
from domain.ticket.state import TRANSITIONS, Ticket, evolve, fold

__all__ = ["TRANSITIONS", "AddMessage", "Assign", "ChangeFields", "ChangePriority",
           "ChangeRequester", "ChangeState", "ChangeTags", "CheckSla", "Command",
           "OpenTicket", "Ticket", "decide", "decide_follow_up", "evolve", "fold"]
