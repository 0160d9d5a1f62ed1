"""Command handling: ``decide(command, state, policy) -> events``.

Pure: the same command on the same state under the same policy always yields the same
events. Choices worth knowing:

* A command that would change nothing (same assignee, priority or state, tags already
  as asked) returns ``[]``: the caller appends nothing and answers with the current
  state. That reads better for idempotent clients than an error.
* A closed ticket refuses every command with ``TicketClosed``, except ``CheckSla``
  (returns ``[]``: its clocks are stopped), ``ChangeRequester`` (a merge of contacts
  moves closed tickets too) and a customer's message, which raises
  ``FollowUpRequired``; ``decide_follow_up`` builds both streams' events for that case.
* Multi-event decisions are computed in order against the state each earlier event
  produced, so a message that reopens a pending ticket starts the next-reply clock
  paused and the ``StateChanged`` that follows resumes it.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from uuid import UUID

from domain.errors import (
    AlreadyExists,
    FollowUpRequired,
    InvalidTransition,
    NotFound,
    NotGroupMember,
    NotSolved,
    TicketClosed,
    TicketMergedAway,
    ValidationFailed,
)
from domain.events import Event
from domain.fields import NO_FIELDS, FieldCatalog, FieldValue, RequiredOn, check_values, require
from domain.ids import GroupId, TicketId
from domain.sla import (
    PolicyChoice,
    SlaClock,
    SlaPolicy,
    breach_due,
    fulfil_clock,
    idle_clock,
    pause_clock,
    rebase_clock,
    resume_clock,
    retarget_clock,
    solve_resolution,
    start_clock,
    warn_due,
)
from domain.ticket.commands import (
    AddMessage,
    Assign,
    ChangeCcs,
    ChangeFields,
    ChangeFollowers,
    ChangePriority,
    ChangeRequester,
    ChangeState,
    ChangeTags,
    CheckSla,
    Command,
    LinkTicket,
    MergeTicket,
    MoveCc,
    OpenTicket,
    RateSatisfaction,
    RetargetSla,
    SplitTicket,
    WarnSla,
)
from domain.ticket.events import (
    CcsChanged,
    Clocks,
    FieldValuesChanged,
    FollowersChanged,
    FollowUpOpened,
    MessageAdded,
    PriorityChanged,
    RequesterChanged,
    SatisfactionRated,
    SlaBreached,
    SlaRetargeted,
    SlaWarning,
    StateChanged,
    TagsChanged,
    TicketAssigned,
    TicketGroupChanged,
    TicketLinked,
    TicketMerged,
    TicketMergeReceived,
    TicketOpened,
    TicketSplit,
    TicketSplitFrom,
    TicketUnlinked,
)
from domain.ticket.state import TRANSITIONS, Ticket, evolve
from domain.validation import (
    BODY_MAX,
    SUBJECT_MAX,
    check_reason,
    check_requester,
    check_tag_count,
    check_text,
    normalize_tags,
)
from domain.values import (
    ActorKind,
    LinkKind,
    Priority,
    Requester,
    SlaMetric,
    Source,
    TicketState,
    Visibility,
)

FR, NR, RES = SlaMetric.FIRST_RESPONSE, SlaMetric.NEXT_REPLY, SlaMetric.RESOLUTION
PU, RW = SlaMetric.PERIODIC_UPDATE, SlaMetric.REQUESTER_WAIT
AW = SlaMetric.AGENT_WORK
RUNS_IN: dict[SlaMetric, frozenset[TicketState]] = {
    RW: frozenset({TicketState.OPEN, TicketState.ON_HOLD}),
    AW: frozenset({TicketState.OPEN}),
}
"""The metrics that follow the ticket's state, and the states each runs in: the
requester waits while the desk has the ticket (open or on hold, not pending), the
agents work on it while it is open only. Elsewhere the clock pauses with its budget
kept, whatever the tenant's paused states; solving meets it with the budget kept, and a
reopen resumes it. On SLA policies only, where the policy measures the metric."""
CCS_MAX = 50
"""The most customers one ticket copies."""


def decide(command: Command, state: Ticket | None, policy: SlaPolicy,
           fields: FieldCatalog = NO_FIELDS) -> list[Event]:
    """Decide the events a command produces on a ticket (None: the stream is empty).

    ``fields`` are the tenant's ticket field definitions as they are now: opening,
    changing fields and solving check the ticket's values against them
    (``domain.fields``)."""
    if isinstance(command, OpenTicket):
        if state is not None:
            raise AlreadyExists()
        return _open(command, policy, fields)
    if state is None:
        raise NotFound()
    if isinstance(command, CheckSla):
        return _check_sla(command, state)
    if isinstance(command, WarnSla):
        return _warn_sla(command, state, policy)
    if isinstance(command, RetargetSla):
        if state.state is TicketState.CLOSED:
            return []
        return _retarget(state, state.priority, state.group_id, policy, command.at,
                         command.reason, only=command.policy_id)
    if isinstance(command, ChangeRequester):
        if command.requester == state.requester:
            return []
        if command.requester.contact_id is None:
            raise ValidationFailed("a ticket moves to a contact", field="requester.contact_id")
        moved: list[Event] = [RequesterChanged(requester=check_requester(command.requester),
                                               at=command.at)]
        # A ticket does not copy its own requester: one copied before is taken off.
        email = command.requester.email.lower()
        if any(c.email.lower() == email for c in state.ccs):
            moved.append(_ccs_without(state, {email}, (), command.at))
        if state.state is TicketState.CLOSED:
            return moved
        # ``policy`` knows the new requester's organization: re-match on it.
        return moved + _retarget(state, state.priority, state.group_id, policy, command.at,
                                 "requester")
    if isinstance(command, MoveCc):
        return _move_cc(command, state)
    if state.merged_into is not None:
        raise TicketMergedAway(state.merged_into)
    if state.state is TicketState.CLOSED:
        if isinstance(command, AddMessage) and command.actor.kind is ActorKind.CUSTOMER:
            raise FollowUpRequired(state.id)
        raise TicketClosed()
    match command:
        case AddMessage():
            return _add_message(command, state, policy)
        case Assign():
            return _assign(command, state, policy)
        case ChangePriority():
            return _change_priority(command, state, policy)
        case ChangeState():
            reason = check_reason(command.reason)
            if command.to is TicketState.SOLVED and state.state is not TicketState.SOLVED:
                require(fields, state.fields, RequiredOn.SOLVE, command.actor)
            event = _state_change(state, command.to, reason, command.at, policy)
            return [] if event is None else [event]
        case ChangeTags():
            return _change_tags(command, state)
        case ChangeFields():
            return _change_fields(command, state, fields)
        case ChangeFollowers():
            return _change_followers(command, state)
        case ChangeCcs():
            return _change_ccs(command, state)
        case RateSatisfaction():
            return _rate(command, state)
    raise TypeError(f"unknown command {type(command).__name__}")  # pragma: no cover


def decide_follow_up(
    command: AddMessage, closed: Ticket, follow_up_id: TicketId, policy: SlaPolicy
) -> tuple[list[Event], list[Event]]:
    """Turn a customer's message on a closed ticket into a follow-up ticket.

    Returns ``(events for the closed ticket's stream, events for the new stream)``:
    ``FollowUpOpened`` on the old one and ``TicketOpened`` (subject, requester,
    priority, source, tags and field values copied, as they were; the message as its
    body) on the new one.
    """
    if closed.state is not TicketState.CLOSED:
        raise ValidationFailed("only a closed ticket takes a follow-up", field="state")
    if command.actor.kind is not ActorKind.CUSTOMER:
        raise TicketClosed()
    open_cmd = OpenTicket(
        ticket_id=follow_up_id,
        message_id=command.message_id,
        subject=closed.subject,
        body=command.body,
        requester=closed.requester,
        priority=closed.priority,
        source=closed.source,
        tags=closed.tags,
        actor=command.actor,
        at=command.at,
        follow_up_of=closed.id,
        group_id=closed.group_id,
        fields=dict(closed.fields),
        attachments=command.attachments,
    )
    old: list[Event] = [FollowUpOpened(follow_up_id=follow_up_id, at=command.at)]
    return old, decide(open_cmd, None, policy)


def decide_merge(command: MergeTicket, source: Ticket | None, target: Ticket | None,
                 policy: SlaPolicy) -> tuple[list[Event], list[Event]]:
    """Merge ``source`` into ``target``: ``(events for the source, events for the
    target)``. The source is closed (``StateChanged``, reason ``merged``, its clocks
    stopped) and points at the target (``TicketMerged``); the target references the
    source's thread and takes its requester and CCs as CCs (``TicketMergeReceived``).

    Refused, with nothing decided: a ticket into itself (422), into a ticket it was
    merged from (422), a ticket merged already or into one merged already (409
    ``ticket_merged`` naming where it went), from or into a closed ticket (409)."""
    if source is None or target is None:
        raise NotFound("the ticket does not exist" if source is None
                       else f"no ticket {command.into} to merge into")
    if command.actor.kind is not ActorKind.AGENT:
        raise ValidationFailed("only agents merge tickets", field="actor")
    if source.id == target.id:
        raise ValidationFailed("a ticket cannot be merged into itself", field="into")
    if source.merged_into is not None:
        raise TicketMergedAway(source.merged_into)
    if target.id in source.merged_from or target.merged_into == source.id:
        raise ValidationFailed(f"ticket {target.id} was merged into this one: it cannot "
                               "take this ticket back", field="into")
    if target.merged_into is not None:
        raise TicketMergedAway(target.merged_into)
    if source.state is TicketState.CLOSED:
        raise TicketClosed()
    if target.state is TicketState.CLOSED:
        raise TicketClosed(f"ticket {target.id}, to merge into, is closed")
    # Closed from any state (not a move TRANSITIONS offers): every clock stops for good.
    clocks: Clocks = {}
    for metric, clock in source.clocks.items():
        new = _clock_for_state(metric, clock, TicketState.CLOSED, command.at, policy)
        if new != clock:
            clocks[metric] = new
    closed = StateChanged(from_state=source.state, to_state=TicketState.CLOSED,
                          reason="merged", clocks=clocks, at=command.at)
    held = {target.requester.email.lower(), *(c.email.lower() for c in target.ccs)}
    ccs: list[Requester] = []
    for person in (source.requester, *source.ccs):
        if person.email.lower() not in held:
            held.add(person.email.lower())
            ccs.append(person)
    if len(target.ccs) + len(ccs) > CCS_MAX:
        raise ValidationFailed(f"the merged ticket would copy more than {CCS_MAX} customers",
                               field="into")
    received = TicketMergeReceived(source_id=source.id,
                                   merged_ids=(source.id, *source.merged_from),
                                   message_ids=command.message_ids, ccs=tuple(ccs),
                                   at=command.at)
    return [closed, TicketMerged(into=target.id, at=command.at)], [received]


def decide_split(command: SplitTicket, source: Ticket | None, policy: SlaPolicy
                 ) -> tuple[list[Event], list[Event]]:
    """Move ``command.message_ids`` of ``source`` to a new ticket: ``(events for the
    source, events for the new ticket)``. The source records ``TicketSplit``; the new
    ticket opens with ``TicketSplitFrom`` (the source's requester, priority, channel,
    tags and field values, the moved messages, clocks started as an opening's), then
    ``TicketGroupChanged`` when the source is in a group.

    Refused, with nothing decided: no message, a message named twice, a message not on
    this ticket's own thread (422; one moved off it already says where it went), a
    split that would leave the source without a public message (422: its opening
    message or a public reply stays), a merged ticket (409 ``ticket_merged``), a closed
    one (409)."""
    if source is None:
        raise NotFound()
    if command.actor.kind is not ActorKind.AGENT:
        raise ValidationFailed("only agents split tickets", field="actor")
    if source.merged_into is not None:
        raise TicketMergedAway(source.merged_into)
    if source.state is TicketState.CLOSED:
        raise TicketClosed()
    wanted = command.message_ids
    if not wanted:
        raise ValidationFailed("name at least one message to move", field="message_ids")
    if len(set(wanted)) != len(wanted):
        raise ValidationFailed("a message is named twice", field="message_ids")
    own = {m.message_id: m for m in command.thread}
    for message_id in wanted:
        if message_id in source.moved:
            raise ValidationFailed(f"message {message_id} was moved to ticket "
                                   f"{source.moved[message_id]} already",
                                   field="message_ids")
        if message_id not in own:
            raise ValidationFailed(f"message {message_id} is not on this ticket",
                                   field="message_ids")
    moving = set(wanted)
    moved = [m for m in command.thread if m.message_id in moving]  # oldest first
    kept = [m for m in command.thread if m.message_id not in moving]
    public_kept = [m for m in kept if m.visibility is Visibility.PUBLIC]
    if not public_kept:
        raise ValidationFailed("the ticket would keep no public message: leave it one",
                               field="message_ids")
    subject = check_text(command.subject if command.subject is not None
                         else source.subject, "subject", SUBJECT_MAX)
    public_moved = [m for m in moved if m.visibility is Visibility.PUBLIC]
    ids = tuple(m.message_id for m in moved)
    at = command.at
    split = TicketSplit(into=command.ticket_id, message_ids=ids,
                        awaiting_reply=public_kept[-1].author_kind is ActorKind.CUSTOMER,
                        at=at)
    opened = TicketSplitFrom(
        ticket_id=command.ticket_id, source_id=source.id, subject=subject,
        requester=source.requester, priority=source.priority, source=source.source,
        tags=source.tags, author=command.actor, message_ids=ids,
        awaiting_reply=bool(public_moved)
        and public_moved[-1].author_kind is ActorKind.CUSTOMER,
        clocks=opening_clocks(policy, source.priority, source.group_id, source.source,
                              source.tags, source.fields, at),
        fields=dict(source.fields),
        attachments=tuple(f for f in source.files if f.message_id in moving),
        at=at)
    new: list[Event] = [opened]
    if source.group_id is not None:
        new.append(TicketGroupChanged(group_id=source.group_id, at=at))
    return [split], new


def decide_link(command: LinkTicket, state: Ticket | None, other: Ticket | None
                ) -> tuple[list[Event], list[Event]]:
    """Link ``state`` to ``other`` as ``command.kind`` (or take the link off):
    ``(events for this ticket, events for the other)``, each holding its own side.
    Closed tickets take links (a new ticket is often a duplicate of a closed one);
    merged ones refuse, naming where they went. A link already held (or, to remove,
    not held) decides nothing.

    Refused: a link to itself; a second original or a second problem (remove the
    first); a ``duplicate_of`` cycle; a problem that is itself an incident, or an
    incident that is itself a problem."""
    if state is None or other is None:
        raise NotFound("the ticket does not exist" if state is None
                       else f"no ticket {command.ticket_id} to link to")
    if command.actor.kind is not ActorKind.AGENT:
        raise ValidationFailed("only agents link tickets", field="actor")
    for ticket in (state, other):
        if ticket.merged_into is not None:
            raise TicketMergedAway(ticket.merged_into)
    kind = command.kind
    if state.id == other.id:
        raise ValidationFailed("a ticket cannot be linked to itself", field="ticket_id")
    here = TicketUnlinked if command.remove else TicketLinked
    if command.remove:
        if not state.links.has(kind, other.id):
            return [], []
        return ([here(kind=kind, ticket_id=other.id, at=command.at)],
                [here(kind=kind.other_side, ticket_id=state.id, at=command.at)])
    if state.links.has(kind, other.id):
        return [], []
    # Normalised to (the side holding the single link, the ticket it names).
    one, named = ((state, other) if kind in (LinkKind.DUPLICATE_OF, LinkKind.PROBLEM)
                  else (other, state))
    if kind in (LinkKind.DUPLICATE_OF, LinkKind.DUPLICATES):
        if one.links.duplicate_of is not None:
            raise ValidationFailed(f"ticket {one.id} is a duplicate of "
                                   f"{one.links.duplicate_of} already: unlink that first",
                                   field="ticket_id")
        if one.id in command.chain:
            raise ValidationFailed(f"ticket {named.id} is a duplicate of ticket {one.id} "
                                   "(or of one of its duplicates): a duplicate cannot be "
                                   "the original of its own original", field="ticket_id")
    if kind in (LinkKind.PROBLEM, LinkKind.INCIDENT):
        if one.links.problem is not None:
            raise ValidationFailed(f"ticket {one.id} is an incident of "
                                   f"{one.links.problem} already: unlink that first",
                                   field="ticket_id")
        if named.links.problem is not None or one.links.incidents:
            raise ValidationFailed("a problem cannot be an incident, nor an incident a "
                                   "problem", field="ticket_id")
    return ([here(kind=kind, ticket_id=other.id, at=command.at)],
            [here(kind=kind.other_side, ticket_id=state.id, at=command.at)])


# --- handlers -----------------------------------------------------------------------------


def _open(cmd: OpenTicket, policy: SlaPolicy, catalog: FieldCatalog) -> list[Event]:
    if cmd.actor.kind is ActorKind.SYSTEM:
        raise ValidationFailed("the system does not open tickets", field="actor")
    group = cmd.group_id
    # A follow-up keeps its closed ticket's group; otherwise routing is the staff's call.
    if group is not None and cmd.actor.kind is ActorKind.CUSTOMER and cmd.follow_up_of is None:
        raise ValidationFailed("only agents choose a ticket's group", field="group_id")
    tags = check_tag_count(normalize_tags(cmd.tags))
    values: dict[str, FieldValue]
    if cmd.follow_up_of is not None:
        values = dict(cmd.fields)  # the closed ticket's values, carried as they were
    else:
        checked = check_values(cmd.fields, catalog, cmd.actor, {})
        values = {k: v for k, v in checked.items() if v is not None}
        require(catalog, values, RequiredOn.OPEN, cmd.actor)
    clocks = opening_clocks(policy, cmd.priority, group, cmd.source, tags, values, cmd.at)
    opened = TicketOpened(
        ticket_id=cmd.ticket_id,
        message_id=cmd.opening_message_id(),
        subject=check_text(cmd.subject, "subject", SUBJECT_MAX),
        body=check_text(cmd.body, "body", BODY_MAX),
        requester=check_requester(cmd.requester),
        priority=cmd.priority,
        source=cmd.source,
        tags=tags,
        author=cmd.actor,
        follow_up_of=cmd.follow_up_of,
        clocks=clocks,
        at=cmd.at,
        fields=values,
        attachments=cmd.attachments,
    )
    if group is None:
        return [opened]
    # The clocks above already run on the group's targets: nothing to retarget.
    return [opened, TicketGroupChanged(group_id=group, at=cmd.at)]


def opening_clocks(policy: SlaPolicy, priority: Priority, group: GroupId | None,
                   source: Source, tags: tuple[str, ...], values: dict[str, FieldValue],
                   at: datetime) -> Clocks:
    """The SLA clocks of a ticket that starts at ``at``: opened, or split off another.
    First response and resolution run from ``at``; next reply waits for a question."""
    if policy.matcher is not None:
        choice = policy.matcher.choose(priority, group, source, tags, values)
        clocks: Clocks = {FR: _started(choice, FR, at), NR: _idle(choice, NR),
                          RES: _started(choice, RES, at)}
        # The metrics settings never had only where the policy measures them, so the
        # clocks of a policy made from settings read as the settings' did.
        if choice.targets.get(PU) is not None:
            clocks[PU] = _idle(choice, PU)
        for metric in RUNS_IN:
            if choice.targets.get(metric) is not None:
                clocks[metric] = _following(metric, TicketState.OPEN, choice, at)
        return clocks
    cal = policy.calendar
    return {
        FR: start_clock(cal, FR, policy.target_ms(FR, priority, group), at),
        NR: idle_clock(NR, policy.target_ms(NR, priority, group)),
        RES: start_clock(cal, RES, policy.target_ms(RES, priority, group), at),
    }


def _assign(cmd: Assign, state: Ticket, policy: SlaPolicy) -> list[Event]:
    group = cmd.group_id if cmd.set_group else state.group_id
    agent = cmd.agent_id if cmd.set_agent else state.assignee
    events: list[Event] = []
    if group != state.group_id:
        clocks = _retargeted(state, state.priority, group, policy, cmd.at)
        events.append(TicketGroupChanged(group_id=group, clocks=clocks, at=cmd.at))
        events += _retarget(state, state.priority, group, policy, cmd.at, "group")
    if agent != state.assignee:
        events.append(TicketAssigned(assignee=agent, at=cmd.at))
    # Checked only on a change: removing an agent from a group leaves their tickets as
    # they were, and asking for that same assignment again changes nothing.
    if events and group is not None and agent is not None and (
        cmd.group_members is None or agent not in cmd.group_members
    ):
        raise NotGroupMember(agent, group)
    return events


def _started(choice: PolicyChoice, metric: SlaMetric, at: datetime, *,
             paused: bool = False) -> SlaClock:
    """A clock started at ``at`` on a policy (not started: the policy does not measure
    the metric)."""
    target = choice.targets.get(metric)
    if target is None:
        return _idle(choice, metric)
    clock = start_clock(choice.calendar, metric, target, at, paused=paused)
    return clock.model_copy(update={"basis": choice.basis})


def _idle(choice: PolicyChoice, metric: SlaMetric) -> SlaClock:
    return idle_clock(metric, choice.targets.get(metric) or 0).model_copy(
        update={"basis": choice.basis})


def _retarget(state: Ticket, priority: Priority, group: GroupId | None, policy: SlaPolicy,
              at: datetime, reason: str, only: UUID | None = None) -> list[Event]:
    """Re-match the ticket under ``priority`` in ``group``; its open clocks not on the
    chosen policy's current version move to it (``SlaRetargeted``, naming both). With
    ``only``, nothing unless the chosen policy is that one. No policies: nothing (the
    settings' targets are swapped on the change event itself, ``_retargeted``)."""
    if policy.matcher is None:
        return []
    choice = policy.matcher.choose(priority, group, state.source, state.tags, state.fields)
    if only is not None and choice.basis.policy_id != only:
        return []
    clocks: Clocks = {}
    before = None
    for metric, clock in state.clocks.items():
        if choice.basis.runs_as(clock.basis) or (clock.fulfilled_at is not None
                                                 and not clock.paused):
            continue
        new = rebase_clock(policy.calendar_of(clock), choice.calendar, clock,
                           choice.targets.get(metric), choice.basis, at)
        if new != clock:
            clocks[metric] = new
            before = before or clock.basis
    for metric in RUNS_IN:
        following = state.clocks.get(metric)
        if choice.targets.get(metric) is not None and (following is None
                                                       or following.started_at is None):
            clocks[metric] = _following(metric, state.state, choice, at)
            before = before or (following.basis if following is not None else None)
    if not clocks:
        return []
    return [SlaRetargeted(from_policy=before, to_policy=choice.basis, reason=reason,
                          clocks=clocks, at=at)]


def _following(metric: SlaMetric, now: TicketState, choice: PolicyChoice,
               at: datetime) -> SlaClock:
    """A clock of a metric that follows the state (``RUNS_IN``), started at ``at`` on a
    policy that measures it: at an opening, or for a ticket re-matched onto such a
    policy having had none (its whole budget from ``at``: nothing recorded counts the
    time before). It is in the state the ticket's state gives it: running in the states
    the metric runs in, paused in the others, and met with the budget kept while
    solved, so that a reopen resumes it as it would a clock that ran."""
    clock = _started(choice, metric, at, paused=now not in RUNS_IN[metric])
    if now is TicketState.SOLVED:
        return solve_resolution(choice.calendar, clock, at)
    return clock


def _retargeted(state: Ticket, priority: Priority, group: GroupId | None, policy: SlaPolicy,
                at: datetime) -> Clocks:
    """The clocks whose target changes under ``priority`` in ``group``, retargeted (the
    settings' targets; with policies, ``_retarget`` does it)."""
    clocks: Clocks = {}
    if policy.matcher is not None:
        return clocks
    for metric, clock in state.clocks.items():
        new = retarget_clock(policy.calendar, clock, policy.target_ms(metric, priority, group), at)
        if new != clock:
            clocks[metric] = new
    return clocks


def _add_message(cmd: AddMessage, state: Ticket, policy: SlaPolicy) -> list[Event]:
    body = check_text(cmd.body, "body", BODY_MAX)
    kind = cmd.actor.kind
    if kind is ActorKind.CUSTOMER and cmd.visibility is Visibility.INTERNAL:
        raise ValidationFailed("customers cannot write internal notes", field="visibility")
    clocks: Clocks = {}
    # Internal notes and system messages never count as a response or a question.
    if cmd.visibility is Visibility.PUBLIC and kind is ActorKind.AGENT:
        for metric in (FR, NR):
            clock = state.clocks[metric]
            if clock.active:
                clocks[metric] = fulfil_clock(clock, cmd.at)
        if policy.matcher is not None and state.state not in (TicketState.SOLVED,
                                                               TicketState.CLOSED):
            # Each public reply meets the periodic update due and starts the next one,
            # on the policy in force now, with its own breach latch.
            choice = policy.matcher.choose(state.priority, state.group_id, state.source,
                                           state.tags, state.fields)
            if choice.targets.get(PU) is not None or PU in state.clocks:
                clocks[PU] = _started(choice, PU, cmd.at)
    elif kind is ActorKind.CUSTOMER:
        next_reply = state.clocks[NR]
        # Before the first response, that clock already measures the wait; and only one
        # next-reply clock runs at a time, so a second unanswered message keeps the first.
        # Each unanswered message after a reply starts a fresh cycle with its own breach
        # latch; earlier breaches stay in the stream as SlaBreached events.
        if (state.clocks[FR].fulfilled_at is not None and not next_reply.active
                and policy.matcher is not None):
            # The policy in force now: an edit applies to clocks that start after it.
            choice = policy.matcher.choose(state.priority, state.group_id, state.source,
                                           state.tags, state.fields)
            clocks[NR] = _started(choice, NR, cmd.at,
                                  paused=state.state in policy.paused_states)
        elif state.clocks[FR].fulfilled_at is not None and not next_reply.active:
            clocks[NR] = start_clock(
                policy.calendar,
                NR,
                policy.target_ms(NR, state.priority, state.group_id),
                cmd.at,
                paused=state.state in policy.paused_states,
            )
    message = MessageAdded(
        message_id=cmd.message_id,
        body=body,
        visibility=cmd.visibility,
        author=cmd.actor,
        clocks=clocks,
        at=cmd.at,
        attachments=cmd.attachments,
    )
    events: list[Event] = [message]
    if kind is ActorKind.CUSTOMER and state.state in (TicketState.PENDING, TicketState.SOLVED):
        after = evolve(state, message)
        reopen = _state_change(after, TicketState.OPEN, "customer_reply", cmd.at, policy)
        if reopen is not None:
            events.append(reopen)
    return events


def _change_priority(cmd: ChangePriority, state: Ticket, policy: SlaPolicy) -> list[Event]:
    if cmd.priority is state.priority:
        return []
    clocks = _retargeted(state, cmd.priority, state.group_id, policy, cmd.at)
    return [PriorityChanged(priority=cmd.priority, clocks=clocks, at=cmd.at),
            *_retarget(state, cmd.priority, state.group_id, policy, cmd.at, "priority")]


def _state_change(
    state: Ticket, to: TicketState, reason: str | None, at: datetime, policy: SlaPolicy
) -> StateChanged | None:
    if to is state.state:
        return None
    if to not in TRANSITIONS[state.state]:
        raise InvalidTransition(state.state.value, to.value)
    clocks: Clocks = {}
    for metric, clock in state.clocks.items():
        new = _clock_for_state(metric, clock, to, at, policy)
        if new != clock:
            clocks[metric] = new
    return StateChanged(from_state=state.state, to_state=to, reason=reason, clocks=clocks, at=at)


def _clock_for_state(
    metric: SlaMetric, clock: SlaClock, to: TicketState, at: datetime, policy: SlaPolicy
) -> SlaClock:
    cal = policy.calendar_of(clock)
    if to is TicketState.CLOSED:
        return pause_clock(cal, clock, at)  # closed: every clock stops for good
    if metric is FR:
        return clock  # first response never pauses
    if metric is PU:
        # Updates are owed while the ticket is unsolved, pending or not; solving meets
        # the one due, and the next public reply after a reopen starts another.
        return fulfil_clock(clock, at) if to is TicketState.SOLVED else clock
    if (metric is RES or metric in RUNS_IN) and to is TicketState.SOLVED:
        return solve_resolution(cal, clock, at)
    if metric in RUNS_IN:
        # Its own states, whatever the tenant's paused states.
        if to in RUNS_IN[metric]:
            return resume_clock(cal, clock, at)
        return pause_clock(cal, clock, at)
    if to in policy.paused_states:
        return pause_clock(cal, clock, at)
    return resume_clock(cal, clock, at)


def _change_tags(cmd: ChangeTags, state: Ticket) -> list[Event]:
    add = normalize_tags(cmd.add, "add")
    remove = normalize_tags(cmd.remove, "remove")
    if set(add) & set(remove):
        raise ValidationFailed("a tag cannot be both added and removed", field="tags")
    current = set(state.tags)
    added = tuple(sorted(set(add) - current))
    removed = tuple(sorted(set(remove) & current))
    if not added and not removed:
        return []
    tags = check_tag_count(tuple(sorted((current | set(added)) - set(removed))))
    return [TagsChanged(added=added, removed=removed, tags=tags, at=cmd.at)]


def _change_fields(cmd: ChangeFields, state: Ticket, catalog: FieldCatalog) -> list[Event]:
    if not cmd.values:
        raise ValidationFailed("give at least one field", field="fields")
    checked = check_values(cmd.values, catalog, cmd.actor, state.fields)
    changed = {k: v for k, v in checked.items() if state.fields.get(k) != v}
    for key, value in changed.items():
        if value is None and catalog[key].required_on is RequiredOn.OPEN:
            raise ValidationFailed(f"{key} is required and cannot be cleared",
                                   field=f"fields.{key}")
    if not changed:
        return []
    return [FieldValuesChanged(values=changed, at=cmd.at)]


def _change_followers(cmd: ChangeFollowers, state: Ticket) -> list[Event]:
    if set(cmd.add) & set(cmd.remove):
        raise ValidationFailed("an agent cannot be both added and removed", field="add")
    for agent in cmd.add:
        if agent not in cmd.agents:
            raise ValidationFailed(f"{agent} is not an active agent of this tenant: only "
                                   "agents follow tickets", field="add")
    current = state.followers
    added = tuple(dict.fromkeys(a for a in cmd.add if a not in current))
    removed = tuple(dict.fromkeys(a for a in cmd.remove if a in current))
    if not added and not removed:
        return []
    followers = (*(a for a in current if a not in removed), *added)
    return [FollowersChanged(added=added, removed=removed, followers=followers, at=cmd.at)]


RATING_COMMENT_MAX = 2000
"""The longest satisfaction comment, in characters."""


def _rate(cmd: RateSatisfaction, state: Ticket) -> list[Event]:
    """A rating of a solved ticket, by its requester; a later one replaces it (the
    closed ticket keeps the last, as every command after close is refused above)."""
    if state.state is not TicketState.SOLVED:
        raise NotSolved()
    comment = (cmd.comment or "").strip() or None
    if comment is not None and len(comment) > RATING_COMMENT_MAX:
        raise ValidationFailed(f"a comment has at most {RATING_COMMENT_MAX} characters",
                               field="comment")
    return [SatisfactionRated(rating=cmd.rating, comment=comment, author=cmd.actor,
                              via=cmd.via, at=cmd.at)]


def _change_ccs(cmd: ChangeCcs, state: Ticket) -> list[Event]:
    adding = {p.email.lower() for p in cmd.add}
    removing = {e.strip().lower() for e in cmd.remove}
    if adding & removing:
        raise ValidationFailed("a customer cannot be both copied and taken off", field="add")
    held = {c.email.lower() for c in state.ccs}
    added: list[Requester] = []
    for person in cmd.add:
        check_requester(person)
        email = person.email.lower()
        if email == state.requester.email.lower():
            raise ValidationFailed(f"{person.email} is the ticket's requester",
                                   field="add")
        if email not in held:
            held.add(email)
            added.append(person)
    changed = _ccs_without(state, removing, tuple(added), cmd.at)
    if not changed.added and not changed.removed:
        return []
    if len(changed.ccs) > CCS_MAX:
        raise ValidationFailed(f"a ticket copies at most {CCS_MAX} customers", field="add")
    return [changed]


def _ccs_without(state: Ticket, emails: Collection[str], added: tuple[Requester, ...],
                 at: datetime) -> CcsChanged:
    """The ticket's CCs without those of ``emails`` (lower case), ``added`` after them."""
    removed = tuple(c.email for c in state.ccs if c.email.lower() in emails)
    ccs = (*(c for c in state.ccs if c.email.lower() not in emails), *added)
    return CcsChanged(added=added, removed=removed, ccs=ccs, at=at)


def _move_cc(cmd: MoveCc, state: Ticket) -> list[Event]:
    email = cmd.email.strip().lower()
    held = {c.email.lower() for c in state.ccs}
    if email not in held:
        return []
    survivor = check_requester(cmd.to)
    keep = survivor.email.lower() in held or (
        survivor.email.lower() == state.requester.email.lower())
    return [_ccs_without(state, {email}, () if keep else (survivor,), cmd.at)]


def _check_sla(cmd: CheckSla, state: Ticket) -> list[Event]:
    clock = state.clocks.get(cmd.metric)
    if clock is None or clock.due_at is None or not breach_due(clock, cmd.at):
        return []
    return [SlaBreached(metric=cmd.metric, due_at=clock.due_at, at=cmd.at)]


def _warn_sla(cmd: WarnSla, state: Ticket, policy: SlaPolicy) -> list[Event]:
    clock = state.clocks.get(cmd.metric)
    if clock is None or not warn_due(clock, policy.calendar_of(clock), cmd.at, cmd.percent):
        return []
    assert clock.due_at is not None
    return [SlaWarning(metric=cmd.metric, share=cmd.percent, due_at=clock.due_at, at=cmd.at)]


__all__ = ["CCS_MAX", "RUNS_IN", "decide", "decide_follow_up", "decide_link", "decide_merge",
           "decide_split", "opening_clocks"]
