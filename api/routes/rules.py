"""``/v1/rules``: automation that acts on tickets after events (``handlers.rules`` keeps
the rules of rules; ``handlers.rule_engine`` runs them), and the dry run
``GET /v1/tickets/{id}/rules``.

Admins manage rules; a rule's past is in ``/v1/rules/{id}/history`` and ``/as-of``.
Commands take ``Idempotency-Key``; a PATCH takes ``If-Match`` (the rule's ETag).
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
from api.http.problems import Problem
from api.http.reply import JsonReply, RecordAnswers
from api.http.routing import StrictRoute
from api.schemas.rules import (
    ActionIn,
    ConditionIn,
    DryRunOut,
    RuleIn,
    RuleOut,
    RulePage,
    RulePatch,
    TimeIn,
    rule_document,
)
from domain.rule import ChangeRule, CreateRule
from domain.rule_parts import Action, Condition, TimeTrigger
from handlers import rule_dry_run
from handlers import rules as rule_handlers
from projections import rules as read_model

router = APIRouter(tags=["rules"], route_class=StrictRoute)


_ANSWERS = RecordAnswers(rule_document, lambda r: f"/v1/rules/{r.id}")
_reply, _created = _ANSWERS.reply, _ANSWERS.created


def _conditions(given: list[ConditionIn]) -> tuple[Condition, ...]:
    return tuple(Condition(field=c.field, op=c.op, value=c.value) for c in given)


def _actions(given: list[ActionIn]) -> tuple[Action, ...]:
    return tuple(Action(type=a.type, value=a.value) for a in given)


def _time(given: TimeIn | None) -> TimeTrigger | None:
    return None if given is None else TimeTrigger(**given.model_dump())


@router.get("/v1/rules", response_model=RulePage, responses=errors(), summary="List the rules")
async def list_(principal: Authorized, services: ServicesDep, paging: Paging) -> Response:
    """Oldest first (each rule says its ``position``: rules run by position, then oldest
    first); pass ``next_cursor`` back as ``cursor``."""
    return JsonReply(200, await tenant_list_document(
        services.cursors, services.store, principal.tenant_id, "rules", read_model.list_rules,
        rule_document, paging)).response()


@router.post("/v1/rules", response_model=RuleOut, status_code=201, summary="Create a rule",
             responses=errors(413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create(body: RuleIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    """At most 500 rules per tenant; a condition, action or placeholder that cannot work
    is a 422 naming it, and nothing is saved."""
    command = CreateRule(rule_id=uuid.uuid4(), name=body.name, position=body.position,
                         active=body.active, conditions=_conditions(body.conditions),
                         actions=_actions(body.actions), time=_time(body.time),
                         at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: rule_handlers.create_rule(uow, command), _created)


@router.get("/v1/rules/{rule_id}", response_model=RuleOut,
            responses=errors(404) | sends(200, required=(ETAG,)),
            summary="One rule; `ETag`")
async def get_one(rule_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    return await commands.read_one(services, principal, rule_handlers.get_rule, rule_id,
                                   f"no rule {rule_id}", _reply)


@router.patch("/v1/rules/{rule_id}", response_model=RuleOut,
              responses=errors(404, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Change or turn off a rule")
async def patch(rule_id: UUID, body: RulePatch, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None) -> Response:
    expected = parse_if_match(if_match)
    command = ChangeRule(
        name=body.name, position=body.position, active=body.active,
        conditions=None if body.conditions is None else _conditions(body.conditions),
        actions=None if body.actions is None else _actions(body.actions),
        time=_time(body.time), at=services.clock.now())
    return await commands.change_one(request, services, principal, body, expected,
                                     rule_handlers.change_rule, rule_id, command, _reply)


@router.get("/v1/tickets/{ticket_id}/rules", response_model=DryRunOut, responses=errors(404),
            summary="Which rules would fire on the ticket now, and why the others would not")
async def dry_run(ticket_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    """The ticket as it is now, with no event: a rule conditioned on an event type
    fails that condition; a rule on time is judged by its clock as well.
    ``fired`` is what rules did on the ticket."""
    async with commands.reading(services, principal) as s:
        document = await rule_dry_run.dry_run(s, ticket_id, services.clock.now())
    if document is None:
        raise Problem(404, "not_found", f"no ticket {ticket_id}")
    return JsonReply(200, document).response()
