"""Given/when/then helpers for ticket tests: plain functions, no fixtures."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from domain.events import Event
from domain.ids import MessageId, TicketId
from domain.sla import SlaPolicy
from domain.ticket import Ticket, fold
from domain.ticket.commands import AddMessage, ChangeState, Command, OpenTicket
from domain.ticket.decide import decide
from domain.values import Actor, ActorKind, Requester, TicketState, Visibility

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)  # a Monday
H = 3_600_000
TICKET = TicketId(uuid.UUID("00000000-0000-4000-8000-000000000001"))
AGENT = Actor(kind=ActorKind.AGENT, id="agent-1")
CUSTOMER = Actor(kind=ActorKind.CUSTOMER, id="intake-key-1")
SYSTEM = Actor(kind=ActorKind.SYSTEM, id="scheduler")
POLICY = SlaPolicy()


def at(hours: float = 0, minutes: float = 0) -> datetime:
    return T0 + timedelta(hours=hours, minutes=minutes)


def mid(n: int) -> MessageId:
    return MessageId(uuid.UUID(int=n))


def open_cmd(**kw: object) -> OpenTicket:
    data: dict[str, object] = {
        "ticket_id": TICKET,
        "subject": "Printer on fire",
        "body": "It is on fire.",
        "requester": Requester(email="ann@example.com", name="Ann"),
        "actor": CUSTOMER,
        "at": T0,
    }
    data.update(kw)
    return OpenTicket.model_validate(data)


def reply(at_: datetime, actor: Actor = AGENT, visibility: Visibility = Visibility.PUBLIC,
          n: int = 1, body: str = "hello") -> AddMessage:
    return AddMessage(message_id=mid(n), body=body, visibility=visibility, actor=actor, at=at_)


def move(to: TicketState, at_: datetime, actor: Actor = AGENT) -> ChangeState:
    return ChangeState(to=to, actor=actor, at=at_)


def given(*commands: Command, policy: SlaPolicy = POLICY) -> list[Event]:
    """Events of a history built by deciding commands in turn (so tests state intent)."""
    events: list[Event] = []
    for command in commands:
        events += decide(command, fold(events), policy)
    return events


def state_of(events: list[Event]) -> Ticket:
    state = fold(events)
    assert state is not None
    return state


def when(history: list[Event], command: Command, policy: SlaPolicy = POLICY) -> list[Event]:
    return decide(command, fold(history), policy)


def path_to(state: TicketState) -> list[Command]:
    """Commands taking a fresh ticket (after open) to ``state``."""
    steps = {
        TicketState.OPEN: [],
        TicketState.PENDING: [TicketState.PENDING],
        TicketState.ON_HOLD: [TicketState.ON_HOLD],
        TicketState.SOLVED: [TicketState.SOLVED],
        TicketState.CLOSED: [TicketState.SOLVED, TicketState.CLOSED],
    }[state]
    return [open_cmd(), *(move(s, at(i + 1)) for i, s in enumerate(steps))]
