"""Pure domain of the helpdesk: the ticket aggregate, its events, SLA clocks and
business hours. No I/O; imports only the standard library and pydantic.

Import each name from the module that defines it (``domain.events``,
``domain.ticket.events``, ``domain.sla``, ...): the package re-exports nothing, so a name
has one home."""
