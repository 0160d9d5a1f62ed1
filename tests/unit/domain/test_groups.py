"""Given events, when a command, then events: the group aggregate, and a ticket's
group (assignment to a group, an agent or both; SLA targets per group)."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import AlreadyExists, CorruptStream, NotFound, NotGroupMember, ValidationFailed
from domain.events import Event, GroupCreated, GroupMembersChanged, GroupRenamed
from domain.group import (
    GROUP_MEMBERS_MAX,
    ChangeGroup,
    CreateGroup,
    decide_group,
    evolve_group,
    fold_group,
)
from domain.ids import AgentId, GroupId
from domain.sla import SlaPolicy, SlaTarget
from domain.ticket.commands import Assign, ChangePriority
from domain.ticket.events import PriorityChanged, TicketAssigned, TicketGroupChanged, TicketOpened
from domain.values import Priority, SlaMetric
from tests.unit.domain.support import (
    AGENT,
    CUSTOMER,
    POLICY,
    H,
    at,
    given,
    open_cmd,
    state_of,
    when,
)

GROUP = GroupId(uuid.UUID("00000000-0000-4000-8000-0000000000a1"))
OTHER_GROUP = GroupId(uuid.UUID("00000000-0000-4000-8000-0000000000a2"))
ANN = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000b1"))
BOB = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000b2"))


def created(*members: AgentId, name: str = "Billing") -> list[Event]:
    return decide_group(CreateGroup(group_id=GROUP, name=name, members=members, at=at()),
                        None)


def when_group(history: list[Event], command: ChangeGroup | CreateGroup) -> list[Event]:
    return decide_group(command, fold_group(history))


# --- the group aggregate ---------------------------------------------------------------


def test_creating_a_group_records_its_trimmed_name_and_sorted_distinct_members() -> None:
    then = decide_group(CreateGroup(group_id=GROUP, name="  Billing ", members=(BOB, ANN, BOB),
                                    at=at()), None)
    assert then == [GroupCreated(group_id=GROUP, name="Billing", members=(ANN, BOB), at=at())]
    group = fold_group(then)
    assert group is not None and group.version == 1 and group.members == (ANN, BOB)


def test_a_group_is_created_once() -> None:
    with pytest.raises(AlreadyExists):
        when_group(created(), CreateGroup(group_id=GROUP, name="Again", at=at(1)))


def test_changing_a_group_that_does_not_exist_is_not_found() -> None:
    with pytest.raises(NotFound):
        when_group([], ChangeGroup(name="x", at=at()))


@pytest.mark.parametrize("name", ["", "   ", "x" * 101])
def test_a_name_must_be_one_to_a_hundred_characters(name: str) -> None:
    with pytest.raises(ValidationFailed) as err:
        decide_group(CreateGroup(group_id=GROUP, name=name, at=at()), None)
    assert err.value.field == "name"


def test_too_many_members_are_refused() -> None:
    many = tuple(AgentId(uuid.UUID(int=n)) for n in range(GROUP_MEMBERS_MAX + 1))
    with pytest.raises(ValidationFailed) as err:
        when_group(created(), ChangeGroup(members=many, at=at(1)))
    assert err.value.field == "members"


def test_renaming_records_the_new_name() -> None:
    history = created()
    then = when_group(history, ChangeGroup(name="Payments", at=at(1)))
    assert then == [GroupRenamed(name="Payments", at=at(1))]
    group = fold_group(history + then)
    assert group is not None and group.name == "Payments" and group.version == 2
    assert group.updated_at == at(1)


def test_replacing_the_members_records_who_was_added_and_removed() -> None:
    history = created(ANN)
    then = when_group(history, ChangeGroup(members=(BOB,), at=at(1)))
    assert then == [GroupMembersChanged(added=(BOB,), removed=(ANN,), members=(BOB,), at=at(1))]
    group = fold_group(history + then)
    assert group is not None and group.members == (BOB,)


def test_a_change_to_nothing_records_nothing() -> None:
    history = created(ANN, BOB)
    assert when_group(history, ChangeGroup(name=" Billing ", members=(BOB, ANN), at=at(1))) == []


def test_a_group_stream_must_start_with_group_created() -> None:
    with pytest.raises(CorruptStream):
        evolve_group(None, GroupRenamed(name="x", at=at()))
    group = fold_group(created())
    with pytest.raises(CorruptStream):
        evolve_group(group, TicketAssigned(assignee=ANN, at=at(1)))


# --- a ticket's group ------------------------------------------------------------------


def to_group(group: GroupId | None, *members: AgentId, agent: AgentId | None = None,
             set_agent: bool = False, at_: float = 1) -> Assign:
    return Assign(group_id=group, set_group=True, agent_id=agent, set_agent=set_agent,
                  group_members=frozenset(members) if group is not None else None,
                  actor=AGENT, at=at(at_))


def to_agent(agent: AgentId | None, members: frozenset[AgentId] | None = None,
             at_: float = 1) -> Assign:
    return Assign(agent_id=agent, group_members=members, actor=AGENT, at=at(at_))


def test_a_ticket_can_be_assigned_to_a_group_alone() -> None:
    then = when(given(open_cmd()), to_group(GROUP))
    assert then == [TicketGroupChanged(group_id=GROUP, at=at(1))]
    ticket = state_of(given(open_cmd()) + then)
    assert ticket.group_id == GROUP and ticket.assignee is None


def test_a_group_and_one_of_its_members_in_one_command() -> None:
    then = when(given(open_cmd()), to_group(GROUP, ANN, agent=ANN, set_agent=True))
    assert then == [TicketGroupChanged(group_id=GROUP, at=at(1)),
                    TicketAssigned(assignee=ANN, at=at(1))]


def test_an_agent_alone_when_the_ticket_has_no_group() -> None:
    assert when(given(open_cmd()), to_agent(ANN)) == [TicketAssigned(assignee=ANN, at=at(1))]


def test_assigning_an_agent_outside_the_tickets_group_is_refused_and_says_why() -> None:
    history = given(open_cmd(), to_group(GROUP, BOB))
    with pytest.raises(NotGroupMember) as err:
        when(history, to_agent(ANN, frozenset({BOB})))
    assert str(ANN) in err.value.message and str(GROUP) in err.value.message
    assert "not a member" in err.value.message


def test_moving_a_ticket_to_a_group_its_assignee_is_not_in_is_refused() -> None:
    history = given(open_cmd(), to_agent(ANN))
    with pytest.raises(NotGroupMember):
        when(history, to_group(GROUP, BOB))


def test_a_group_and_a_non_member_in_one_command_is_refused() -> None:
    with pytest.raises(NotGroupMember):
        when(given(open_cmd()), to_group(GROUP, BOB, agent=ANN, set_agent=True))


def test_an_assignment_that_no_longer_fits_the_group_stays_and_repeating_it_is_no_change() -> None:
    # Ann was a member when assigned; she has since left the group (no ticket event).
    history = given(open_cmd(), to_group(GROUP, ANN, agent=ANN, set_agent=True))
    assert when(history, to_agent(ANN, frozenset({BOB}))) == []


def test_leaving_the_group_or_unassigning_is_always_allowed() -> None:
    history = given(open_cmd(), to_group(GROUP, ANN, agent=ANN, set_agent=True))
    assert when(history, to_group(None)) == [TicketGroupChanged(group_id=None, at=at(1))]
    assert when(history, to_agent(None, frozenset({BOB}))) == [
        TicketAssigned(assignee=None, at=at(1))]


def test_an_agent_opens_a_ticket_into_a_group() -> None:
    then = when([], open_cmd(actor=AGENT, group_id=GROUP))
    assert [type(e) for e in then] == [TicketOpened, TicketGroupChanged]
    assert state_of(then).group_id == GROUP


def test_a_customer_does_not_choose_the_group() -> None:
    with pytest.raises(ValidationFailed) as err:
        when([], open_cmd(actor=CUSTOMER, group_id=GROUP))
    assert err.value.field == "group_id"


# --- SLA targets per group -------------------------------------------------------------

FAST = SlaPolicy(group_targets={GROUP: {Priority.NORMAL: SlaTarget(1 * H, 4 * H)}})


def test_a_ticket_opened_into_a_group_runs_on_the_groups_targets() -> None:
    ticket = state_of(when([], open_cmd(actor=AGENT, group_id=GROUP), FAST))
    assert ticket.clocks[SlaMetric.FIRST_RESPONSE].target_ms == 1 * H
    assert ticket.clocks[SlaMetric.RESOLUTION].target_ms == 4 * H


def test_a_priority_the_group_does_not_name_falls_back_to_the_priority_target() -> None:
    ticket = state_of(when([], open_cmd(actor=AGENT, group_id=GROUP, priority=Priority.LOW),
                           FAST))
    assert ticket.clocks[SlaMetric.FIRST_RESPONSE].target_ms == 24 * H


def test_moving_a_ticket_into_a_group_retargets_its_running_clocks() -> None:
    history = given(open_cmd(), policy=FAST)
    then = when(history, to_group(GROUP, at_=0.5), FAST)
    assert isinstance(then[0], TicketGroupChanged)
    clock = then[0].clocks[SlaMetric.FIRST_RESPONSE]
    assert clock.target_ms == 1 * H and clock.due_at == at(1)
    # Other groups, and no group, keep the per-priority targets.
    assert state_of(history).clocks[SlaMetric.FIRST_RESPONSE].target_ms == 8 * H
    assert when(history, to_group(OTHER_GROUP, at_=0.5), FAST) == [
        TicketGroupChanged(group_id=OTHER_GROUP, at=at(0.5))]


def test_a_priority_change_uses_the_groups_targets() -> None:
    history = given(open_cmd(actor=AGENT, group_id=GROUP, priority=Priority.LOW), policy=FAST)
    then = when(history, ChangePriority(priority=Priority.NORMAL, actor=AGENT, at=at(0.5)), FAST)
    assert isinstance(then[0], PriorityChanged)
    assert then[0].clocks[SlaMetric.FIRST_RESPONSE].target_ms == 1 * H


def test_policy_without_group_targets_is_unchanged() -> None:
    assert POLICY.target_ms(SlaMetric.RESOLUTION, Priority.NORMAL, GROUP) == 72 * H
