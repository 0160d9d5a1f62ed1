"""``/v1/ticket-fields``: the tenant's ticket field definitions
(``handlers.ticket_fields`` keeps the rules). Admins define and change fields; every
role may read them (to fill them in, filter or group by them). Each field is a stream
of its own, with history and as-of like a ticket's."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, READ_FROM, READ_LAG, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.history import history_page
from api.http.lagging import source_headers
from api.http.params import IsoAwareDateTime
from api.http.problem_docs import errors
from api.http.problems import Problem, invalid_parameter
from api.http.reply import JsonReply, RecordAnswers
from api.http.routing import StrictRoute
from api.schemas.events import EventPage
from api.schemas.ticket_fields import (
    TicketFieldIn,
    TicketFieldList,
    TicketFieldOut,
    TicketFieldPatch,
)
from domain.errors import DomainError
from domain.field_definitions import DefineField, UpdateField
from domain.fields import FIELD_KEY_PATTERN, FieldOption
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import RecordedEvent
from handlers import ticket_fields as handlers
from projections.fields import field_document

router = APIRouter(prefix="/v1/ticket-fields", tags=["ticket fields"], route_class=StrictRoute)
INT32 = 2**31 - 1
Key = Annotated[str, Path(pattern=FIELD_KEY_PATTERN, max_length=40)]


_ANSWERS = RecordAnswers(field_document, lambda r: f"/v1/ticket-fields/{r.key}")
_reply, _created = _ANSWERS.reply, _ANSWERS.created


@router.get("", response_model=TicketFieldList, responses=errors(),
            summary="The tenant's ticket fields, inactive ones included, in key order")
async def list_fields(principal: Authorized, services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        fields = await handlers.list_fields(s)
    return JsonReply(200, {"data": [field_document(d) for d in fields]}).response()


@router.post("", response_model=TicketFieldOut, status_code=201,
             responses=errors(409, 413, 415)
                       | sends(201, required=(ETAG, LOCATION)), summary="Define a ticket field")
async def define(body: TicketFieldIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    command = DefineField(
        key=body.key, title=body.title, type=body.type,
        options=tuple(FieldOption(value=o.value, title=o.title) for o in body.options),
        required_on=body.required_on, active=body.active, intake=body.intake,
        customer_read_only=body.customer_read_only, personal=body.personal,
        at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: handlers.define_field(uow, command), _created)


@router.get("/{field_key}", response_model=TicketFieldOut, responses=errors(404)
                                                                     | sends(200, required=(ETAG,)),
            summary="One ticket field; ETag")
async def get_one(field_key: Key, principal: Authorized, services: ServicesDep) -> Response:
    return await commands.read_one(services, principal, handlers.get_field, field_key,
                                   "no such ticket field", _reply)


@router.patch("/{field_key}", response_model=TicketFieldOut,
              responses=errors(404, 409, 412, 413, 415)
                        | sends(200, required=(ETAG,)), summary="Change a ticket field")
async def patch(field_key: Key, body: TicketFieldPatch, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None) -> Response:
    command = UpdateField(changes=body.model_dump(mode="json", exclude_unset=True),
                          at=services.clock.now())
    expected = parse_if_match(if_match)
    return await commands.change_one(request, services, principal, body, expected,
                                     handlers.update_field, field_key, command, _reply)


@router.get("/{field_key}/history", response_model=EventPage,
            responses=errors(404) | sends(200, required=(READ_FROM, READ_LAG)),
            summary="A field's events in order: each definition it had, with actor and seq")
async def history(
    field_key: Key, principal: Authorized, services: ServicesDep, response: Response,
    paging: Paging,
) -> Any:
    async def read_page(s: UnitOfWork, after: int, n: int) -> list[RecordedEvent]:
        if await handlers.get_field(s, field_key) is None:
            raise Problem(404, "not_found", "no such ticket field")
        return await handlers.field_events(s, field_key, after_version=after, limit=n)

    return await history_page(services, principal, response, "field-history",
                              {"key": field_key}, paging, read_page)


@router.get("/{field_key}/as-of", response_model=TicketFieldOut,
            responses=errors(404) | sends(200, required=(ETAG, READ_FROM, READ_LAG)),
            summary="The field's definition as it was at a version or an instant")
async def as_of(
    field_key: Key, principal: Authorized, services: ServicesDep,
    version: Annotated[int | None, Query(ge=1, le=INT32)] = None,
    at: Annotated[IsoAwareDateTime | None, Query()] = None,
) -> Response:
    if (version is None) == (at is None):
        raise invalid_parameter("give exactly one of version and at", "version", "at")

    async def read(store: EventStore) -> list[RecordedEvent]:
        async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
            return await handlers.field_events(s, field_key, to_version=version, until=at)

    events, source = await services.reads.run(read)
    if not events:
        raise Problem(404, "not_found", "the field was not defined yet, or is not a field")
    if version is not None and events[-1].version < version:
        raise Problem(404, "not_found",
                      f"the field has {events[-1].version} versions; no version {version}")
    try:
        d = handlers.replay(events)
    except DomainError as exc:
        raise Problem(500, "corrupt_stream", f"the field's events cannot be replayed: {exc}") \
            from exc
    assert d is not None
    reply = _reply(d).response()
    reply.headers.update(source_headers(source))
    return reply
