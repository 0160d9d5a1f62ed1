"""The SLA policy aggregate: which targets a ticket's clocks run on, and on which
calendar.

A policy has its own stream (the stream id is the policy id): ``SlaPolicyCreated``,
then ``SlaPolicyChanged`` with the parts that changed, and ``SlaPolicyDeleted`` at its
end (the stream keeps what it was; the default, which every ticket falls back to, is
never deleted). A tenant's policies are tried
in order (by ``position``, then oldest first; the default last) and the first whose
conditions all hold is the ticket's; the default has no conditions, so it always
matches. Conditions are a rule's (``domain.rule_parts``), on the fields a policy may
test: priority, group, organization, tags, channel and ticket field values.

Targets are per metric and each optional: first reply, next reply, periodic update,
requester wait, agent work and resolution, from 1 ms to 366 days; a next-reply target
needs a first-reply one (the next reply is measured after the first). Named ``TargetPolicy``
in code because ``domain.sla.SlaPolicy`` is the view the ticket's ``decide`` uses.
What the aggregate cannot see (that a field exists and the value fits its type, that
a group, organization or calendar is the tenant's, that a default exists) the handler
checks (``handlers.sla_policies``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from uuid import UUID

from domain.aggregate import BaseCommand, ChangedParts, NamedState
from domain.business_hours import Calendar, CALENDAR_24x7
from domain.errors import (
    AlreadyExists,
    DomainError,
    NotFound,
    ValidationFailed,
)
from domain.events import Event
from domain.evolution import first_version, fold_with, next_version, one_version_on, stream_start
from domain.rule_parts import Condition, Facts, check_condition, failing, field_key
from domain.sla import ClockBasis, PolicyChoice, PolicyMatcher
from domain.validation import check_name, check_position
from domain.values import Priority, SlaMetric, UtcDatetime
from domain.workflow_events import (
    NewPolicy,
    PolicyChanges,
    PolicyTargets,
    SlaPolicyChanged,
    SlaPolicyCreated,
    SlaPolicyDeleted,
)

POLICY_NAME_MAX = 100
POLICIES_MAX = 200
POLICY_CONDITIONS_MAX = 20
DAY_MS = 86_400_000
TARGET_MAX_MS = 366 * DAY_MS
POLICY_FIELDS = frozenset({"priority", "group_id", "organization_id", "tags", "channel"})
"""The condition fields a policy may test, besides ``fields.<key>``."""
METRICS = ("first_reply", "next_reply", "periodic_update", "requester_wait", "resolution",
           "agent_work")


class DefaultPolicyKept(DomainError):
    """A deletion of the tenant's default policy."""


class TargetPolicy(NamedState):
    """An SLA policy as of ``version`` events."""

    position: int
    default: bool
    conditions: tuple[Condition, ...]
    targets: PolicyTargets
    calendar_id: UUID | None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreatePolicy(NewPolicy, BaseCommand):
    """Create a policy: first in order, not the default, on every ticket and in
    calendar time unless told."""

    position: int = 0
    default: bool = False
    conditions: tuple[Condition, ...] = ()
    calendar_id: UUID | None = None


class ChangePolicy(PolicyChanges, BaseCommand):
    """Change some parts; None leaves a part as it is (``set_calendar`` says whether
    ``calendar_id`` is given, None then meaning calendar time)."""


def check_targets(targets: PolicyTargets) -> PolicyTargets:
    """Each target a whole number of milliseconds from 1 to 366 days; next reply only
    with first reply."""
    for metric in METRICS:
        ms = getattr(targets, f"{metric}_ms")
        if ms is not None and (type(ms) is not int or not 0 < ms <= TARGET_MAX_MS):
            raise ValidationFailed(f"a target is 1 to {TARGET_MAX_MS} ms (366 days)",
                                   field=f"targets.{metric}_ms")
    if targets.next_reply_ms is not None and targets.first_reply_ms is None:
        raise ValidationFailed("a next-reply target needs a first-reply target",
                               field="targets.next_reply_ms")
    return targets


def check_policy_conditions(conditions: Sequence[Condition]) -> tuple[Condition, ...]:
    """The conditions a policy may have, normalised; a rule's own checks first."""
    if len(conditions) > POLICY_CONDITIONS_MAX:
        raise ValidationFailed(f"a policy has at most {POLICY_CONDITIONS_MAX} conditions",
                               field="conditions")
    out = []
    for i, c in enumerate(conditions):
        if c.field not in POLICY_FIELDS and not field_key(c.field):
            raise ValidationFailed(
                f"{c.field!r} is not a policy condition field: give one of "
                + ", ".join(sorted(POLICY_FIELDS)) + " or fields.<key>",
                field=f"conditions.{i}.field")
        out.append(check_condition(c, f"conditions.{i}"))
    return tuple(out)


def _name(name: str) -> str:
    return check_name(name, POLICY_NAME_MAX)


def _default_unconditioned(default: bool, conditions: Sequence[Condition]) -> None:
    if default and conditions:
        raise ValidationFailed("the default policy always matches: it has no conditions",
                               field="conditions")


def decide_policy(command: CreatePolicy | ChangePolicy,
                  state: TargetPolicy | None) -> list[Event]:
    """The events a command produces on a policy; a change to nothing returns ``[]``."""
    if isinstance(command, CreatePolicy):
        if state is not None:
            raise AlreadyExists("the policy already exists")
        conditions = check_policy_conditions(command.conditions)
        _default_unconditioned(command.default, conditions)
        return [SlaPolicyCreated(
            policy_id=command.policy_id, name=_name(command.name),
            position=check_position(command.position), default=command.default,
            conditions=conditions, targets=check_targets(command.targets),
            calendar_id=command.calendar_id, at=command.at)]
    if state is None:
        raise NotFound("the policy does not exist")
    def conditions_of(given: Sequence[Condition]) -> tuple[Condition, ...]:
        conditions = check_policy_conditions(given)
        _default_unconditioned(state.default, conditions)
        return conditions

    changes = ChangedParts(state)
    changes.given("name", command.name, _name)
    changes.given("position", command.position, check_position)
    changes.given("conditions", command.conditions, conditions_of)
    changes.given("targets", command.targets, check_targets)
    if command.set_calendar and command.calendar_id != state.calendar_id:
        changes.parts.update(set_calendar=True, calendar_id=command.calendar_id)
    return changes.events(SlaPolicyChanged, command.at)


def decide_delete_policy(state: TargetPolicy, at: UtcDatetime) -> list[Event]:
    """Delete a policy; the default cannot be (``DefaultPolicyKept``)."""
    if state.default:
        raise DefaultPolicyKept("the default policy is what every ticket no other policy "
                                "matches falls back to: it cannot be deleted (change its "
                                "targets instead)")
    return [SlaPolicyDeleted(at=at)]


def evolve_policy(state: TargetPolicy | None, event: Event) -> TargetPolicy:
    """Apply one event to a policy (None before the stream's first event)."""
    if state is None:
        created = stream_start(event, SlaPolicyCreated, "a policy stream")
        return first_version(TargetPolicy, created, id=created.policy_id)
    parts = ("name", "position", "conditions", "targets")
    if isinstance(event, SlaPolicyChanged) and event.set_calendar:
        return one_version_on(state, event, parts, {"calendar_id": event.calendar_id})
    return next_version(state, event, {SlaPolicyChanged: parts, SlaPolicyDeleted: ()},
                        "a policy stream")


fold_policy = fold_with(evolve_policy)


def in_order(policies: Iterable[TargetPolicy]) -> list[TargetPolicy]:
    """The order policies are tried in: by position, then oldest first; the default
    last, whatever its position."""
    return sorted(policies, key=lambda p: (p.default, p.position, p.created_at, str(p.id)))


def check_policy_set(policies: Sequence[TargetPolicy]) -> None:
    """A tenant's policies, once it has any, hold exactly one default."""
    defaults = [p for p in policies if p.default]
    if policies and not defaults:
        raise ValidationFailed("a set of SLA policies needs a default policy (default: "
                               "true, no conditions): create it first", field="default")
    if len(defaults) > 1:
        raise ValidationFailed("the tenant already has a default policy", field="default")


POSITION_STEP = 10
"""A new order numbers the positions 10, 20, 30...: room for a policy made between."""


def reorder(policies: Sequence[TargetPolicy], ids: Sequence[UUID]) -> dict[UUID, int]:
    """The position of each policy in the order ``ids`` (each of the tenant's policies
    exactly once, the default last, since it is always tried last): 10, 20, 30... in
    that order; ``ValidationFailed`` names the entry at fault (``policies.2.id``) or the
    list (``policies``)."""
    known = {p.id: p for p in policies}
    seen: set[UUID] = set()
    for i, pid in enumerate(ids):
        if pid not in known:
            raise ValidationFailed(f"no SLA policy {pid}", field=f"policies.{i}.id")
        if pid in seen:
            raise ValidationFailed(f"policy {pid} is named twice", field=f"policies.{i}.id")
        seen.add(pid)
        if known[pid].default and i != len(ids) - 1:
            raise ValidationFailed("the default policy is always tried last: put it last",
                                   field=f"policies.{i}.id")
    missing = [p for p in in_order(policies) if p.id not in seen]
    if missing:
        raise ValidationFailed("a new order names every policy of the tenant exactly once; "
                               "missing: " + ", ".join(f"{p.name!r} ({p.id})" for p in missing),
                               field="policies")
    return {pid: (i + 1) * POSITION_STEP for i, pid in enumerate(ids) if not known[pid].default}


def match(ordered: Sequence[TargetPolicy], facts: Facts) -> TargetPolicy:
    """The first of ``ordered`` (``in_order``) whose conditions all hold."""
    for policy in ordered:
        if not failing(policy.conditions, facts):
            return policy
    raise ValidationFailed("no SLA policy matches and there is no default", field="default")


def policy_matcher(policies: Sequence[TargetPolicy],
                   current: Mapping[UUID, tuple[int, Calendar]],
                   recorded: Mapping[tuple[UUID, int], Calendar] | None = None,
                   organization_id: UUID | None = None) -> PolicyMatcher:
    """The matcher a ticket command decides with: ``policies`` in the order they are
    tried, each on its calendar's ``current`` version (``{id: (version, hours)}``), with
    the ``recorded`` versions the ticket's clocks run on beside them."""
    calendars: dict[tuple[UUID, int], Calendar] = {
        (cid, version): hours for cid, (version, hours) in current.items()}
    calendars |= dict(recorded or {})
    ordered = []
    for p in in_order(policies):
        version = None if p.calendar_id is None else current[p.calendar_id][0]
        basis = ClockBasis(policy_id=p.id, policy_version=p.version, policy_name=p.name,
                           calendar_id=p.calendar_id, calendar_version=version)
        key = basis.calendar_key
        ordered.append((p.conditions, PolicyChoice(
            basis=basis,
            targets={SlaMetric.FIRST_RESPONSE: p.targets.first_reply_ms,
                     SlaMetric.NEXT_REPLY: p.targets.next_reply_ms,
                     SlaMetric.RESOLUTION: p.targets.resolution_ms,
                     SlaMetric.PERIODIC_UPDATE: p.targets.periodic_update_ms,
                     SlaMetric.REQUESTER_WAIT: p.targets.requester_wait_ms,
                     SlaMetric.AGENT_WORK: p.targets.agent_work_ms},
            calendar=CALENDAR_24x7 if key is None else calendars[key])))
    return PolicyMatcher(ordered=tuple(ordered), calendars=calendars,
                         organization_id=organization_id)


def legacy_policies(targets: Mapping[Priority, tuple[int, int]],
                    group_targets: Mapping[UUID, Mapping[Priority, tuple[int, int]]]
                    ) -> list[tuple[str, tuple[Condition, ...], PolicyTargets]]:
    """The policies equivalent to settings' ``sla_targets`` and ``group_sla_targets``
    (``(first_response_ms, resolution_ms)`` per priority), in the order they are tried,
    the default last: first the group's own (group and priority), then one per
    priority but normal, then the default with normal's targets. The next reply keeps
    the first-response target, as it did."""
    def targets_of(pair: tuple[int, int]) -> PolicyTargets:
        return PolicyTargets(first_reply_ms=pair[0], next_reply_ms=pair[0],
                             resolution_ms=pair[1])

    out: list[tuple[str, tuple[Condition, ...], PolicyTargets]] = []
    for group in sorted(group_targets, key=str):
        for priority, pair in group_targets[group].items():
            out.append((f"group {group} {priority.value}",
                        (Condition(field="group_id", op="is", value=str(group)),
                         Condition(field="priority", op="is", value=priority.value)),
                        targets_of(pair)))
    for priority in Priority:
        if priority is not Priority.NORMAL:
            out.append((f"{priority.value} priority",
                        (Condition(field="priority", op="is", value=priority.value),),
                        targets_of(targets[priority])))
    out.append(("default", (), targets_of(targets[Priority.NORMAL])))
    return out


__all__ = [
    "METRICS",
    "POLICIES_MAX",
    "POLICY_FIELDS",
    "POSITION_STEP",
    "TARGET_MAX_MS",
    "ChangePolicy",
    "CreatePolicy",
    "DefaultPolicyKept",
    "TargetPolicy",
    "check_policy_conditions",
    "check_policy_set",
    "check_targets",
    "decide_delete_policy",
    "decide_policy",
    "evolve_policy",
    "fold_policy",
    "in_order",
    "legacy_policies",
    "match",
    "policy_matcher",
    "reorder",
]
