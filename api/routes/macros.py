"""``/v1/macros``: named sets of ticket actions with a reply or note text, shared by the
tenant or personal to an agent; canned replies are macros with text only. Applying one
is one command: ``POST /v1/tickets/{id}/macros/{macro_id}`` (``If-Match``,
``Idempotency-Key``; ``?preview=true`` answers what it would do and changes nothing).
Another agent's personal macro is a 404 everywhere. A macro's past is in
``/v1/macros/{id}/history`` and ``/as-of`` (api/routes/audit.py), for auditors and admins."""

from __future__ import annotations

import uuid
from typing import Annotated
from uuid import UUID

import orjson
from fastapi import APIRouter, Query, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import agent_actor, parse_if_match, precondition_failed
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.owned import change_owned, delete_owned, new_owner
from api.http.pagination import personal_list_page
from api.http.problem_docs import errors
from api.http.reply import JsonReply, RecordAnswers
from api.http.routing import StrictRoute
from api.schemas.macros import (
    AppliedOut,
    MacroIn,
    MacroOut,
    MacroPage,
    MacroPatch,
    macro_document,
)
from api.schemas.tickets import etag
from domain.ids import MessageId, TicketId
from domain.macro import ChangeMacro, CreateMacro
from domain.rule_parts import Action
from eventstore.errors import ConcurrencyError
from eventstore.store import UnitOfWork
from handlers import macros as macro_handlers
from handlers.macros import Applied
from projections import macros as read_model
from projections.views import ticket_json

router = APIRouter(tags=["macros"], route_class=StrictRoute)


class _Rollback(Exception):
    def __init__(self, reply: JsonReply) -> None:
        self.reply = reply


@router.get("/v1/macros", response_model=MacroPage, responses=errors(),
            summary="The shared macros and the caller's own")
async def list_(principal: Authorized, services: ServicesDep, paging: Paging) -> Response:
    return JsonReply(200, await personal_list_page(
        services.cursors, services.store, principal.tenant_id, principal.agent_id, "macros",
        read_model.list_macros, macro_document, paging)).response()


@router.post("/v1/macros", response_model=MacroOut, status_code=201, summary="Create a macro",
             responses=errors(413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create(body: MacroIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    owner = new_owner(principal, body.shared, "macro")
    command = CreateMacro(
        macro_id=uuid.uuid4(), name=body.name, owner_id=owner, text=body.text,
        visibility=body.visibility,
        actions=tuple(Action(type=a.type, value=a.value) for a in body.actions),
        at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: macro_handlers.create_macro(uow, command),
                                 _created)


@router.get("/v1/macros/{macro_id}", response_model=MacroOut,
            responses=errors(404) | sends(200, required=(ETAG,)),
            summary="One macro")
async def get_one(macro_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        macro = await macro_handlers.visible_macro(s, macro_id, principal.agent_id)
    return _reply(macro).response()


_ANSWERS = RecordAnswers(macro_document, lambda r: f"/v1/macros/{r.id}")
_reply, _created = _ANSWERS.reply, _ANSWERS.created


@router.patch("/v1/macros/{macro_id}", response_model=MacroOut,
              responses=errors(404, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Change a macro")
async def patch(macro_id: UUID, body: MacroPatch, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None) -> Response:
    """A shared macro is the admins' to change; a personal one its owner's (or an
    admin's)."""
    expected = parse_if_match(if_match)
    command = ChangeMacro(
        name=body.name, text=body.text, visibility=body.visibility,
        actions=None if body.actions is None else tuple(
            Action(type=a.type, value=a.value) for a in body.actions),
        at=services.clock.now())

    return await change_owned(request, services, principal, body, expected,
                              macro_handlers.change_macro, macro_id, command, _reply)


@router.delete("/v1/macros/{macro_id}", response_model=MacroOut,
               responses=errors(404, 412) | sends(200, required=(ETAG,)),
               summary="Delete a macro")
async def delete(macro_id: UUID, request: Request, principal: Authorized,
                 services: ServicesDep, if_match: IfMatch = None) -> Response:
    """Answers the macro as it was; its history stays in its stream."""
    return await delete_owned(request, services, principal, if_match,
                              macro_handlers.delete_macro, macro_id, _reply)


def _applied(applied: Applied, preview: bool) -> JsonReply:
    return JsonReply(200, {
        "preview": preview, "ticket": orjson.loads(ticket_json(applied.ticket)),
        "body": applied.body,
        "message_id": None if applied.message_id is None else str(applied.message_id),
        "events": applied.events}, {"ETag": etag(applied.ticket.version)})


@router.post("/v1/tickets/{ticket_id}/macros/{macro_id}", response_model=AppliedOut,
             responses=errors(404, 409, 412, 413, 415) | sends(200, required=(ETAG,)),
             summary="Apply a macro to a ticket")
async def apply(ticket_id: UUID, macro_id: UUID, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None,
                preview: Annotated[bool, Query()] = False) -> Response:
    """One event per change and one message, all or none; ``preview=true`` renders what
    it would do and changes nothing."""
    expected = parse_if_match(if_match)
    at = services.clock.now()
    actor = agent_actor(principal)

    async def work(uow: UnitOfWork) -> JsonReply:
        applied = await macro_handlers.apply_macro(
            uow, TicketId(ticket_id), macro_id, actor, principal.agent_id, at,
            MessageId(uuid.uuid4()), expected_version=expected)
        return _applied(applied, preview)

    if not preview:
        return await commands.run(request, services, principal,
                                  {"macro_id": str(macro_id)}, work, expected_version=expected)
    try:
        async with services.store.unit_of_work(principal.tenant_id, principal.actor) as s:
            try:
                reply = await work(s)
            except ConcurrencyError as exc:
                if expected is None:
                    raise
                raise precondition_failed(expected, exc) from exc
            raise _Rollback(reply)  # everything it did is undone
    except _Rollback as done:
        return done.reply.response()
