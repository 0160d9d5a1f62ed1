"""How a ticket is rendered over HTTP, in one place.

``GET /v1/tickets/{id}`` and ``GET /v1/tickets/{id}/as-of`` both answer with
``render_ticket`` of a folded ``domain.Ticket``, so a replayed past state is byte for
byte what the API showed at that version.
"""

from __future__ import annotations

from typing import Any

from domain.ticket import Ticket

TicketView = Ticket
"""The response model of a rendered ticket (the domain state, SLA clocks included)."""


def render_ticket(ticket: Ticket) -> dict[str, Any]:
    """The JSON body of a ticket response."""
    return ticket.model_dump(mode="json")


def ticket_etag(ticket: Ticket) -> str:
    """The ``ETag`` of a ticket response: its version."""
    return f'"{ticket.version}"'
