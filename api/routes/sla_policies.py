"""``/v1/calendars`` and ``/v1/sla-policies``: named business hours, and the policies
that say which targets a ticket's SLA clocks run on (``handlers.sla_policies`` keeps
their rules).

Admins manage both; their past is in ``/history`` and ``/as-of`` (api/routes/audit.py).
Commands take ``Idempotency-Key``; a PATCH or DELETE takes ``If-Match`` (the ETag), and
a new order of the policies names the version of each.
"""

from __future__ import annotations

import uuid
from uuid import UUID

from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import tenant_list_document
from api.http.problem_docs import errors
from api.http.reply import JsonReply, RecordAnswers
from api.http.routing import StrictRoute
from api.schemas.sla_policies import (
    CalendarIn,
    CalendarOut,
    CalendarPage,
    CalendarPatch,
    HoursIn,
    PolicyAppliedOut,
    PolicyConditionIn,
    PolicyIn,
    PolicyOrderIn,
    PolicyOrderOut,
    PolicyOut,
    PolicyPage,
    PolicyPatch,
    TargetsIn,
    calendar_document,
    policy_document,
)
from domain.business_hours import Calendar
from domain.errors import ValidationFailed
from domain.rule_parts import Condition
from domain.sla_calendar import ChangeCalendar, CreateCalendar, SlaCalendar, make_hours
from domain.target_policy import ChangePolicy, CreatePolicy
from domain.workflow_events import PolicyTargets
from eventstore.store import UnitOfWork
from handlers import sla_policies as handlers
from handlers.errors import Invalid
from handlers.sla_apply import apply_policy
from projections import sla_policies as read_model

router = APIRouter(tags=["sla"], route_class=StrictRoute)


def _hours(given: HoursIn) -> Calendar:
    try:
        return make_hours(given.timezone, given.weekly, given.holidays)
    except ValidationFailed as exc:
        raise Invalid("invalid_calendar", f"{exc.field}: {exc.message}", field=exc.field,
                      reason=exc.message) from exc


_CALENDAR_ANSWERS = RecordAnswers(calendar_document, lambda r: f"/v1/calendars/{r.id}")
_calendar_reply, _calendar_created = _CALENDAR_ANSWERS.reply, _CALENDAR_ANSWERS.created


_POLICY_ANSWERS = RecordAnswers(policy_document, lambda r: f"/v1/sla-policies/{r.id}")
_policy_reply, _policy_created = _POLICY_ANSWERS.reply, _POLICY_ANSWERS.created


def _conditions(given: list[PolicyConditionIn]) -> tuple[Condition, ...]:
    return tuple(Condition(field=c.field, op=c.op, value=c.value) for c in given)


def _targets(given: TargetsIn) -> PolicyTargets:
    return PolicyTargets(**given.model_dump())


# --- calendars ---------------------------------------------------------------------------


@router.get("/v1/calendars", response_model=CalendarPage, responses=errors(),
            summary="List the calendars")
async def list_calendars(principal: Authorized, services: ServicesDep,
                         paging: Paging) -> Response:
    """Oldest first; pass ``next_cursor`` back as ``cursor``."""
    return JsonReply(200, await tenant_list_document(
        services.cursors, services.store, principal.tenant_id, "calendars",
        read_model.list_calendars, calendar_document, paging)).response()


@router.post("/v1/calendars", response_model=CalendarOut, status_code=201,
             summary="Create a calendar",
             responses=errors(413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create_calendar(body: CalendarIn, request: Request, principal: Authorized,
                          services: ServicesDep) -> Response:
    """Overlapping or inverted shifts, an unknown zone or a holiday outside the years
    1-9999 are a 422 naming the part."""

    async def create(uow: UnitOfWork) -> SlaCalendar:
        command = CreateCalendar(calendar_id=uuid.uuid4(), name=body.name,
                                 hours=_hours(body.hours), at=services.clock.now())
        return await handlers.create_calendar(uow, command)

    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 create, _calendar_created)


@router.get("/v1/calendars/{calendar_id}", response_model=CalendarOut,
            responses=errors(404) | sends(200, required=(ETAG,)),
            summary="One calendar; `ETag`")
async def get_calendar(calendar_id: UUID, principal: Authorized,
                       services: ServicesDep) -> Response:
    return await commands.read_one(services, principal, handlers.get_calendar, calendar_id,
                                   f"no calendar {calendar_id}", _calendar_reply)


@router.patch("/v1/calendars/{calendar_id}", response_model=CalendarOut,
              responses=errors(404, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Rename a calendar or change its hours")
async def patch_calendar(calendar_id: UUID, body: CalendarPatch, request: Request,
                         principal: Authorized, services: ServicesDep,
                         if_match: IfMatch = None) -> Response:
    """New hours are a new version: clocks that start from now on run on it, those
    running keep the version they started on, so no verdict moves."""
    given = body.model_dump(mode="json", exclude_unset=True)
    expected = parse_if_match(if_match)

    async def change(uow: UnitOfWork) -> SlaCalendar:
        command = ChangeCalendar(name=body.name,
                                 hours=None if body.hours is None else _hours(body.hours),
                                 at=services.clock.now())
        return await handlers.change_calendar(uow, calendar_id, command,
                                              expected_version=expected)

    return await commands.run_to(request, services, principal, given, change,
                                 _calendar_reply, expected_version=expected)


@router.delete("/v1/calendars/{calendar_id}", response_model=CalendarOut,
               responses=errors(404, 409, 412) | sends(200, required=(ETAG,)),
               summary="Delete a calendar no SLA policy runs on")
async def delete_calendar(calendar_id: UUID, request: Request, principal: Authorized,
                          services: ServicesDep, if_match: IfMatch = None) -> Response:
    """A calendar an SLA policy runs on is a 409 ``calendar_in_use`` naming the
    policies. Clocks that ran on it keep being judged on the hours they recorded.
    Answers the calendar as it was; its history stays in its stream."""
    return await commands.delete_one(request, services, principal, if_match,
                                     handlers.delete_calendar, calendar_id, _calendar_reply)


# --- policies ----------------------------------------------------------------------------


@router.get("/v1/sla-policies", response_model=PolicyPage, responses=errors(),
            summary="List the SLA policies")
async def list_policies(principal: Authorized, services: ServicesDep,
                        paging: Paging) -> Response:
    """Oldest first (each says its ``position``; they are tried by position, then
    oldest first, the default last)."""
    return JsonReply(200, await tenant_list_document(
        services.cursors, services.store, principal.tenant_id, "sla_policies",
        read_model.list_policies, policy_document, paging)).response()


@router.post("/v1/sla-policies", response_model=PolicyOut, status_code=201,
             summary="Create an SLA policy",
             responses=errors(413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create_policy(body: PolicyIn, request: Request, principal: Authorized,
                        services: ServicesDep) -> Response:
    """The tenant's first policy is its default (``default: true``, no conditions). A
    condition on an unknown field or with a value of the wrong type, a target over 366
    days, or a next-reply target without a first-reply one is a 422 naming the part."""
    command = CreatePolicy(policy_id=uuid.uuid4(), name=body.name, position=body.position,
                           default=body.default, conditions=_conditions(body.conditions),
                           targets=_targets(body.targets), calendar_id=body.calendar_id,
                           at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: handlers.create_policy(uow, command),
                                 _policy_created)


@router.put("/v1/sla-policies/order", response_model=PolicyOrderOut,
            responses=errors(409, 413, 415),
            summary="Set the order the SLA policies are tried in, all at once")
async def put_order(body: PolicyOrderIn, request: Request, principal: Authorized,
                    services: ServicesDep) -> Response:
    """Name every policy once, with the version you saw, the default last: their
    positions become 10, 20, 30... in that order, in one transaction. A list that is not
    exactly the tenant's policies is a 422 naming the entry; a version that is not the
    policy's is a 409 ``sla_policy_changed``, and nothing changes."""
    at = services.clock.now()
    order = [(p.id, p.version) for p in body.policies]

    async def work(uow: UnitOfWork) -> JsonReply:
        policies = await handlers.reorder_policies(uow, order, at)
        return JsonReply(200, {"data": [policy_document(p) for p in policies]})

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work)


@router.get("/v1/sla-policies/{policy_id}", response_model=PolicyOut,
            responses=errors(404) | sends(200, required=(ETAG,)),
            summary="One SLA policy; `ETag`")
async def get_policy(policy_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    return await commands.read_one(services, principal, handlers.get_policy, policy_id,
                                   f"no SLA policy {policy_id}", _policy_reply)


@router.patch("/v1/sla-policies/{policy_id}", response_model=PolicyOut,
              responses=errors(404, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Change an SLA policy (clocks that start after it follow it)")
async def patch_policy(policy_id: UUID, body: PolicyPatch, request: Request,
                       principal: Authorized, services: ServicesDep,
                       if_match: IfMatch = None) -> Response:
    expected = parse_if_match(if_match)
    command = ChangePolicy(
        name=body.name, position=body.position,
        conditions=None if body.conditions is None else _conditions(body.conditions),
        targets=None if body.targets is None else _targets(body.targets),
        set_calendar="calendar_id" in body.model_fields_set, calendar_id=body.calendar_id,
        at=services.clock.now())
    return await commands.change_one(request, services, principal, body, expected,
                                     handlers.change_policy, policy_id, command, _policy_reply)


@router.delete("/v1/sla-policies/{policy_id}", response_model=PolicyOut,
               responses=errors(404, 409, 412) | sends(200, required=(ETAG,)),
               summary="Delete an SLA policy (not the default)")
async def delete_policy(policy_id: UUID, request: Request, principal: Authorized,
                        services: ServicesDep, if_match: IfMatch = None) -> Response:
    """No ticket is matched to it from now on. Open clocks running on it keep the
    targets and calendar they recorded (their verdicts and deadlines do not move) until
    their ticket is re-matched: a change of priority, group or organization, or
    ``apply`` of the policy that matches it now. The default is a 409
    ``sla_policy_is_default``. Answers the policy as it was; its history stays in its
    stream."""
    return await commands.delete_one(request, services, principal, if_match,
                                     handlers.delete_policy, policy_id, _policy_reply)


@router.post("/v1/sla-policies/{policy_id}/apply", response_model=PolicyAppliedOut,
             responses=errors(404, 413, 415),
             summary="Retarget the running clocks of the tickets the policy matches, now")
async def apply(policy_id: UUID, request: Request, principal: Authorized,
                services: ServicesDep) -> Response:
    """Each open ticket the tenant's policies match to this one has its open clocks
    moved to the policy's current version, elapsed business time kept, with an
    ``SlaRetargeted`` event naming the policy before and after."""
    at = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        applied = await apply_policy(uow, policy_id, at)
        return JsonReply(200, {"policy_id": str(policy_id),
                               "policy_version": applied.version,
                               "tickets": applied.tickets})

    return await commands.run(request, services, principal, {}, work)
