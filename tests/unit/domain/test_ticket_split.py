"""Given events, when a split, then events: moving chosen messages of a ticket to a new
ticket (docs/teamwork.md)."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import TicketClosed, TicketMergedAway, ValidationFailed
from domain.events import Event
from domain.ids import GroupId, MessageId, TicketId
from domain.ticket import Ticket, evolve, fold
from domain.ticket.commands import MergeTicket, SplitTicket, ThreadMessage
from domain.ticket.decide import decide, decide_merge, decide_split, opening_clocks
from domain.ticket.events import (
    MessageAdded,
    TicketGroupChanged,
    TicketOpened,
    TicketSplit,
    TicketSplitFrom,
)
from domain.values import SlaMetric, TicketState, Visibility
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    POLICY,
    TICKET,
    at,
    given,
    mid,
    move,
    open_cmd,
    reply,
    state_of,
)

NEW = TicketId(uuid.UUID(int=900))
GROUP = GroupId(uuid.UUID(int=77))


def thread_of(events: list[Event]) -> tuple[ThreadMessage, ...]:
    """The ticket's own messages as the handler reads them from its rows."""
    out = []
    for e in events:
        if isinstance(e, TicketOpened | MessageAdded):
            vis = e.visibility if isinstance(e, MessageAdded) else Visibility.PUBLIC
            out.append(ThreadMessage(message_id=e.message_id, visibility=vis,
                                     author_kind=e.author.kind, at=e.at))
    return tuple(out)


def history() -> list[Event]:
    """Opened by an agent for the customer (message 0), an agent's reply (1), the customer's second
    question (2), an internal note about it (3)."""
    return given(open_cmd(message_id=mid(0), tags=("printer",), group_id=GROUP, actor=AGENT),
                 reply(at(1), n=1), reply(at(2), CUSTOMER, n=2, body="and the fax?"),
                 reply(at(3), AGENT, Visibility.INTERNAL, n=3, body="fax team"))


def split(events: list[Event], ids: tuple[MessageId, ...], **kw: object
          ) -> tuple[list[Event], list[Event]]:
    command = SplitTicket(ticket_id=NEW, message_ids=ids, thread=thread_of(events),
                          actor=AGENT, at=at(4), **kw)  # type: ignore[arg-type]
    return decide_split(command, fold(events), POLICY)


def test_split_moves_messages_to_a_new_ticket_like_an_opening() -> None:
    events = history()
    source = state_of(events)
    mine, theirs = split(events, (mid(3), mid(2)), subject="Fax")
    assert mine == [TicketSplit(into=NEW, message_ids=(mid(2), mid(3)),
                                awaiting_reply=False, at=at(4))]
    opened = theirs[0]
    assert isinstance(opened, TicketSplitFrom)
    assert opened.source_id == TICKET and opened.subject == "Fax"
    assert opened.message_ids == (mid(2), mid(3))  # oldest first, whatever the order asked
    assert (opened.requester, opened.priority, opened.tags) == (
        source.requester, source.priority, source.tags)
    assert opened.awaiting_reply is True  # the customer's question moved, unanswered
    # Fresh clocks, as an opening at the split's time has them.
    assert opened.clocks == opening_clocks(POLICY, source.priority, GROUP, source.source,
                                           source.tags, source.fields, at(4))
    assert opened.clocks[SlaMetric.FIRST_RESPONSE].started_at == at(4)
    assert theirs[1:] == [TicketGroupChanged(group_id=GROUP, at=at(4))]

    after = state_of([*events, *mine])
    assert after.split_into == (NEW,) and after.moved == {mid(2): NEW, mid(3): NEW}
    new = fold(theirs)
    assert new is not None
    assert new.split_from == TICKET and new.group_id == GROUP and new.version == 2
    assert new.state is TicketState.OPEN and new.created_at == at(4)
    # The new ticket takes commands as any other.
    assert decide(reply(at(5), n=9), new, POLICY)


def test_opening_keeps_its_clocks() -> None:
    opened = given(open_cmd())[0]
    assert isinstance(opened, TicketOpened)
    assert opened.clocks == opening_clocks(POLICY, opened.priority, None, opened.source,
                                           opened.tags, {}, opened.at)


@pytest.mark.parametrize(("ids", "says"), [
    ((), "at least one"),
    ((mid(1), mid(1)), "twice"),
    ((mid(42),), "not on this ticket"),
    ((mid(0), mid(1), mid(2)), "no public message"),
])
def test_bad_lists_are_refused(ids: tuple[MessageId, ...], says: str) -> None:
    with pytest.raises(ValidationFailed, match=says):
        split(history(), ids)


def test_a_moved_message_cannot_move_again() -> None:
    events = history()
    mine, _ = split(events, (mid(2),))
    with pytest.raises(ValidationFailed, match="moved to ticket"):
        split([*events, *mine], (mid(2),))


def test_closed_and_merged_tickets_refuse() -> None:
    events = [*history(), *given()]
    closed = events + decide(move(TicketState.SOLVED, at(3)), fold(events), POLICY)
    closed += decide(move(TicketState.CLOSED, at(3)), fold(closed), POLICY)
    with pytest.raises(TicketClosed):
        split(closed, (mid(2),))
    target = state_of(given(open_cmd(ticket_id=NEW)))
    merged, _ = decide_merge(MergeTicket(into=NEW, actor=AGENT, at=at(3)), fold(events),
                             target, POLICY)
    with pytest.raises(TicketMergedAway):
        split([*events, *merged], (mid(2),))


def test_only_agents_split() -> None:
    events = history()
    command = SplitTicket(ticket_id=NEW, message_ids=(mid(2),), thread=thread_of(events),
                          actor=CUSTOMER, at=at(4))
    with pytest.raises(ValidationFailed):
        decide_split(command, fold(events), POLICY)


def test_evolve_refuses_a_second_opening() -> None:
    _, theirs = split(history(), (mid(2),))
    new: Ticket | None = fold(theirs)
    with pytest.raises(Exception, match="already holds"):
        evolve(new, theirs[0])


def test_the_source_keeps_awaiting_as_its_last_public_message_says() -> None:
    events = given(open_cmd(message_id=mid(0)), reply(at(1), n=1),
                   reply(at(2), CUSTOMER, n=2))
    mine, _ = split(events, (mid(1),))
    assert isinstance(mine[0], TicketSplit) and mine[0].awaiting_reply is True
