"""Given events, when a command, then events: merging, linking, following and copying
customers on tickets (docs/teamwork.md)."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import TicketClosed, TicketMergedAway, ValidationFailed
from domain.events import Event
from domain.ids import AgentId, TicketId
from domain.ticket import Ticket, evolve
from domain.ticket.commands import (
    ChangeCcs,
    ChangeFollowers,
    ChangeRequester,
    LinkTicket,
    MergeTicket,
    MoveCc,
)
from domain.ticket.decide import decide, decide_link, decide_merge
from domain.ticket.events import (
    CcsChanged,
    FollowersChanged,
    StateChanged,
    TicketLinked,
    TicketMerged,
    TicketMergeReceived,
    TicketUnlinked,
)
from domain.values import LinkKind, Requester, TicketState
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    POLICY,
    at,
    given,
    mid,
    move,
    open_cmd,
    reply,
    state_of,
)

A, B, C = (TicketId(uuid.UUID(int=n)) for n in (101, 102, 103))
ANN = Requester(email="ann@example.com", name="Ann")
BOB = Requester(email="bob@example.com", name="Bob")
CAROL = Requester(email="carol@example.com")
AGENT_1, AGENT_2 = AgentId(uuid.UUID(int=1)), AgentId(uuid.UUID(int=2))


def ticket(ticket_id: TicketId, requester: Requester = ANN, *more: Event) -> Ticket:
    events = given(open_cmd(ticket_id=ticket_id, requester=requester))
    return state_of([*events, *more])


def then(state: Ticket, events: list[Event]) -> Ticket:
    """The state after ``events`` (the given of the next step)."""
    for event in events:
        state = evolve(state, event)
    return state


def merge(source: Ticket, target: Ticket, **kw: object) -> tuple[Ticket, Ticket]:
    command = MergeTicket(into=target.id, actor=AGENT, at=at(1), **kw)  # type: ignore[arg-type]
    src, tgt = decide_merge(command, source, target, POLICY)
    return then(source, src), then(target, tgt)


def test_merge_closes_the_source_and_points_the_target_at_its_thread() -> None:
    source = ticket(A, BOB)
    target = ticket(B, ANN)
    command = MergeTicket(into=B, message_ids=(mid(1), mid(2)), actor=AGENT, at=at(1))
    src, tgt = decide_merge(command, source, target, POLICY)
    closed, merged = src
    assert isinstance(closed, StateChanged) and closed.to_state is TicketState.CLOSED
    assert closed.reason == "merged" and all(c.paused for c in closed.clocks.values())
    assert merged == TicketMerged(into=B, at=at(1))
    assert tgt == [TicketMergeReceived(source_id=A, merged_ids=(A,),
                                       message_ids=(mid(1), mid(2)), ccs=(BOB,), at=at(1))]
    after_source, after_target = then(source, src), then(target, tgt)
    assert after_source.merged_into == B and after_source.state is TicketState.CLOSED
    assert after_target.merged_from == (A,) and after_target.ccs == (BOB,)
    # Then every command on the source names the target.
    with pytest.raises(TicketMergedAway) as refused:
        decide(reply(at(2)), after_source, POLICY)
    assert refused.value.merged_into == B
    with pytest.raises(TicketMergedAway):
        decide(reply(at(2), actor=CUSTOMER), after_source, POLICY)


def test_merge_carries_earlier_merges_and_combines_ccs_once() -> None:
    _, b = merge(ticket(A, BOB), ticket(B, ANN))
    # C's requester is Ann too, and B already copies Bob: only Carol is new to C.
    c = then(ticket(C, ANN), decide(ChangeCcs(add=(BOB,), actor=AGENT, at=at(1)),
                                    ticket(C, ANN), POLICY))
    b = then(b, decide(ChangeCcs(add=(CAROL,), actor=AGENT, at=at(1)), b, POLICY))
    _, c = merge(b, c)
    assert c.merged_from == (B, A)
    assert c.ccs == (BOB, CAROL)


@pytest.mark.parametrize("case", ["itself", "back", "merged_source", "merged_target",
                                  "closed_target", "customer"])
def test_merge_refusals(case: str) -> None:
    a, b = ticket(A), ticket(B)
    actor = AGENT
    if case == "itself":
        b, expected = a, ValidationFailed
    elif case == "back":  # b was merged into a; a cannot go into b
        b, a = merge(b, a)
        expected = ValidationFailed
    elif case == "merged_source":
        a, _ = merge(a, ticket(C))
        expected = TicketMergedAway
    elif case == "merged_target":
        b, _ = merge(b, ticket(C))
        expected = TicketMergedAway
    elif case == "closed_target":
        b = then(b, given(open_cmd(ticket_id=B), move(TicketState.SOLVED, at(1)),
                          move(TicketState.CLOSED, at(2)))[1:])
        expected = TicketClosed
    else:
        actor, expected = CUSTOMER, ValidationFailed
    with pytest.raises(expected):
        decide_merge(MergeTicket(into=b.id, actor=actor, at=at(3)), a, b, POLICY)


def link(here: Ticket, there: Ticket, kind: LinkKind, *, remove: bool = False,
         chain: tuple[TicketId, ...] = ()) -> tuple[Ticket, Ticket]:
    command = LinkTicket(kind=kind, ticket_id=there.id, remove=remove, chain=chain,
                         actor=AGENT, at=at(1))
    mine, theirs = decide_link(command, here, there)
    return then(here, mine), then(there, theirs)


def test_links_are_held_on_both_sides_and_come_off_both() -> None:
    a, b = ticket(A), ticket(B)
    command = LinkTicket(kind=LinkKind.PROBLEM, ticket_id=B, actor=AGENT, at=at(1))
    assert decide_link(command, a, b) == (
        [TicketLinked(kind=LinkKind.PROBLEM, ticket_id=B, at=at(1))],
        [TicketLinked(kind=LinkKind.INCIDENT, ticket_id=A, at=at(1))])
    a, b = link(a, b, LinkKind.PROBLEM)
    assert a.links.problem == B and b.links.incidents == (A,)
    assert decide_link(command, a, b) == ([], [])  # held already: nothing
    a, b = link(a, b, LinkKind.RELATED)
    assert a.links.related == (B,) and b.links.related == (A,)
    removing = LinkTicket(kind=LinkKind.RELATED, ticket_id=B, remove=True, actor=AGENT,
                          at=at(2))
    mine, theirs = decide_link(removing, a, b)
    assert mine == [TicketUnlinked(kind=LinkKind.RELATED, ticket_id=B, at=at(2))]
    a, b = then(a, mine), then(b, theirs)
    assert a.links.related == () and b.links.related == () and a.links.problem == B
    # A closed ticket takes a link: a new one is often a duplicate of an old one.
    old = then(ticket(C), given(open_cmd(ticket_id=C), move(TicketState.SOLVED, at(1)),
                                move(TicketState.CLOSED, at(2)))[1:])
    new, old = link(ticket(B), old, LinkKind.DUPLICATE_OF)
    assert new.links.duplicate_of == C and old.links.duplicates == (B,)


def test_a_duplicate_cycle_and_other_bad_links_are_refused() -> None:
    a, b, c = ticket(A), ticket(B), ticket(C)
    a, b = link(a, b, LinkKind.DUPLICATE_OF, chain=(B,))  # a duplicates b
    b, c = link(b, c, LinkKind.DUPLICATE_OF, chain=(C,))  # b duplicates c
    with pytest.raises(ValidationFailed, match="original of its own"):
        link(c, a, LinkKind.DUPLICATE_OF, chain=(A, B, C))
    with pytest.raises(ValidationFailed, match="original of its own"):
        link(a, c, LinkKind.DUPLICATES, chain=(A, B, C))  # c duplicates a, seen from a
    with pytest.raises(ValidationFailed, match="already"):
        link(a, c, LinkKind.DUPLICATE_OF, chain=(C,))
    with pytest.raises(ValidationFailed, match="itself"):
        link(a, a, LinkKind.RELATED)
    p, _ = link(ticket(A), ticket(B), LinkKind.INCIDENT)  # b is an incident of problem a
    with pytest.raises(ValidationFailed, match="problem cannot be an incident"):
        link(p, ticket(C), LinkKind.PROBLEM)
    merged, _ = merge(ticket(C), ticket(B))
    with pytest.raises(TicketMergedAway):
        link(ticket(A), merged, LinkKind.RELATED)


def test_agents_follow_and_unfollow_and_a_non_agent_cannot() -> None:
    t = ticket(A)
    follow = ChangeFollowers(add=(AGENT_1, AGENT_2), agents=frozenset({AGENT_1, AGENT_2}),
                             actor=AGENT, at=at(1))
    [event] = decide(follow, t, POLICY)
    assert event == FollowersChanged(added=(AGENT_1, AGENT_2), removed=(),
                                     followers=(AGENT_1, AGENT_2), at=at(1))
    t = then(t, [event])
    assert decide(follow, t, POLICY) == []
    unfollow = ChangeFollowers(remove=(AGENT_1,), actor=AGENT, at=at(2))
    t = then(t, decide(unfollow, t, POLICY))
    assert t.followers == (AGENT_2,)
    stranger = AgentId(uuid.UUID(int=9))
    with pytest.raises(ValidationFailed, match="only agents follow"):
        decide(ChangeFollowers(add=(stranger,), actor=AGENT, at=at(3)), t, POLICY)


def test_ccs_are_added_once_and_taken_off_by_email() -> None:
    t = ticket(A, ANN)
    add = ChangeCcs(add=(BOB, Requester(email="BOB@example.com"), CAROL), actor=AGENT,
                    at=at(1))
    [event] = decide(add, t, POLICY)
    assert isinstance(event, CcsChanged) and event.ccs == (BOB, CAROL)
    t = then(t, [event])
    [event] = decide(ChangeCcs(remove=("Bob@Example.com",), actor=AGENT, at=at(2)), t,
                     POLICY)
    assert event.removed == ("bob@example.com",)  # type: ignore[attr-defined]
    assert then(t, [event]).ccs == (CAROL,)
    with pytest.raises(ValidationFailed, match="requester"):
        decide(ChangeCcs(add=(ANN,), actor=AGENT, at=at(3)), t, POLICY)
    with pytest.raises(ValidationFailed):
        decide(ChangeCcs(add=(Requester(email="not-an-email"),), actor=AGENT, at=at(3)), t,
               POLICY)


def _copying(*ccs: Requester, requester: Requester = ANN) -> Ticket:
    t = ticket(A, requester)
    return then(t, decide(ChangeCcs(add=ccs, actor=AGENT, at=at(1)), t, POLICY))


def test_a_merged_contacts_cc_entry_copies_the_survivor_in_its_place() -> None:
    dave = Requester(email="dave@example.com", name="Dave")
    t = _copying(BOB, CAROL)
    [event] = decide(MoveCc(email="BOB@example.com", to=dave, at=at(2)), t, POLICY)
    assert event == CcsChanged(added=(dave,), removed=("bob@example.com",),
                               ccs=(CAROL, dave), at=at(2))
    # The survivor copied already, or the ticket's requester: the entry only goes.
    [event] = decide(MoveCc(email=BOB.email, to=CAROL, at=at(2)), t, POLICY)
    assert then(t, [event]).ccs == (CAROL,)
    [event] = decide(MoveCc(email=BOB.email, to=ANN, at=at(2)), t, POLICY)
    assert then(t, [event]).ccs == (CAROL,)
    # Not copied: nothing. Closed or merged away: moved all the same.
    assert decide(MoveCc(email="erin@example.com", to=dave, at=at(2)), t, POLICY) == []
    solved = then(t, decide(move(TicketState.SOLVED, at(2)), t, POLICY))
    closed = then(solved, decide(move(TicketState.CLOSED, at(2)), solved, POLICY))
    assert closed.state is TicketState.CLOSED
    assert then(closed, decide(MoveCc(email=BOB.email, to=dave, at=at(3)), closed,
                               POLICY)).ccs == (CAROL, dave)
    away, _ = merge(t, ticket(B))
    assert then(away, decide(MoveCc(email=BOB.email, to=dave, at=at(3)), away,
                             POLICY)).ccs == (CAROL, dave)


def test_a_requester_copied_before_is_taken_off_the_ccs() -> None:
    dave = Requester(email="dave@example.com", name="Dave",
                     contact_id=uuid.UUID(int=9))  # type: ignore[arg-type]
    t = _copying(dave, CAROL)
    moved = decide(ChangeRequester(requester=dave, at=at(2)), t, POLICY)
    after = then(t, moved)
    assert after.requester == dave and after.ccs == (CAROL,)
