"""Given events, when a rating, then events: satisfaction ratings of solved tickets
(docs/teamwork.md)."""

from __future__ import annotations

import pytest

from domain.errors import NotSolved, TicketClosed, ValidationFailed
from domain.ticket import fold
from domain.ticket.commands import RateSatisfaction
from domain.ticket.decide import RATING_COMMENT_MAX, decide
from domain.ticket.events import SatisfactionRated
from domain.values import Rating, TicketState
from tests.unit.domain.support import CUSTOMER, POLICY, at, given, move, open_cmd


def rate(rating: Rating, hours: float, comment: str | None = None) -> RateSatisfaction:
    return RateSatisfaction(rating=rating, comment=comment, via="link", actor=CUSTOMER,
                            at=at(hours))


SOLVED = (open_cmd(), move(TicketState.SOLVED, at(1)))


def test_a_solved_ticket_takes_a_rating_and_a_second_replaces_it() -> None:
    events = given(*SOLVED, rate(Rating.BAD, 2, "  slow  "), rate(Rating.GOOD, 3))
    rated = [e for e in events if isinstance(e, SatisfactionRated)]
    assert [(e.rating, e.comment) for e in rated] == [(Rating.BAD, "slow"),
                                                      (Rating.GOOD, None)]
    satisfaction = fold(events).satisfaction
    assert satisfaction is not None
    assert (satisfaction.rating, satisfaction.rated_at) == (Rating.GOOD, at(3))


def test_an_unsolved_ticket_refuses_a_rating() -> None:
    with pytest.raises(NotSolved):
        decide(rate(Rating.GOOD, 1), fold(given(open_cmd())), POLICY)


def test_a_closed_ticket_keeps_its_rating_and_refuses_another() -> None:
    events = given(*SOLVED, rate(Rating.GOOD, 2), move(TicketState.CLOSED, at(3)))
    with pytest.raises(TicketClosed):
        decide(rate(Rating.BAD, 4), fold(events), POLICY)
    satisfaction = fold(events).satisfaction
    assert satisfaction is not None and satisfaction.rating is Rating.GOOD


def test_a_reopened_ticket_refuses_a_rating_until_solved_again() -> None:
    events = given(*SOLVED, move(TicketState.OPEN, at(2)))
    with pytest.raises(NotSolved):
        decide(rate(Rating.GOOD, 3), fold(events), POLICY)


def test_a_long_comment_is_refused() -> None:
    with pytest.raises(ValidationFailed):
        decide(rate(Rating.BAD, 2, "x" * (RATING_COMMENT_MAX + 1)), fold(given(*SOLVED)),
               POLICY)
