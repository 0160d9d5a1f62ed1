"""``/v1/views``: saved views, a name plus the ticket list's filters, shared by the
tenant or personal to an agent. ``GET /v1/views/{id}/tickets`` is the ticket list
under the view's filters, page for page (``api.http.ticket_list`` asks the list's own
route, so the filters are parsed and checked by the list's code). Another agent's
personal view is a 404 everywhere. A view's past is in ``/v1/views/{id}/history`` and
``/as-of`` (api/routes/audit.py), for auditors and admins."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.owned import change_owned, delete_owned, new_owner
from api.http.pagination import personal_list_page
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply, RecordAnswers
from api.http.routing import StrictRoute
from api.http.ticket_list import as_params, ticket_list
from api.schemas.saved_views import ViewIn, ViewOut, ViewPage, ViewPatch, view_document
from api.schemas.tickets import TicketPage
from domain.errors import ValidationFailed
from domain.saved_view import ChangeView, CreateView, check_filters
from handlers import saved_views as view_handlers
from projections import saved_views as read_model

router = APIRouter(tags=["views"], route_class=StrictRoute)


@router.get("/v1/views", response_model=ViewPage, responses=errors(),
            summary="The shared views and the caller's own")
async def list_(principal: Authorized, services: ServicesDep, paging: Paging) -> Response:
    return JsonReply(200, await personal_list_page(
        services.cursors, services.store, principal.tenant_id, principal.agent_id, "views",
        read_model.list_views, view_document, paging)).response()


def _refused(status: int, body: bytes) -> Problem:
    """The list's refusal of a view's filters, as a 422 naming the filter."""
    try:
        problem = orjson.loads(body)
    except orjson.JSONDecodeError:
        problem = {}
    detail = problem.get("detail", f"the ticket list answered {status}")
    # The list names the parameter at fault in ``parameters`` or in ``errors``' loc.
    named = [*problem.get("parameters", []),
             *(e["loc"][1] for e in problem.get("errors", [])
               if len(e.get("loc", [])) >= 2 and e["loc"][0] == "query")]
    name = named[0] if named else None
    extra: dict[str, Any] = {"list_code": problem.get("code")}
    if name is not None:
        extra["errors"] = [{"loc": ["body", "filters", name], "msg": detail,
                            "type": "invalid_filter"}]
    return Problem(422, "invalid_view_filter", f"the ticket list refuses these filters: "
                                               f"{detail}", **extra)


async def _checked(request: Request, given: dict[str, str | list[str]]
                   ) -> dict[str, str | list[str]]:
    """The filters, if the view's shape and the ticket list take them; a 422 naming
    the filter if not."""
    try:
        filters = check_filters(given)
    except ValidationFailed as exc:
        raise Problem(422, "invalid_view_filter", exc.message,
                      errors=[{"loc": ["body", *(exc.field or "filters").split(".", 1)],
                               "msg": exc.message, "type": "invalid_filter"}]) from exc
    status, _, answer = await ticket_list(request, [*as_params(filters), ("limit", "1")])
    if status != 200:
        raise _refused(status, answer)
    return filters


@router.post("/v1/views", response_model=ViewOut, status_code=201, summary="Save a view",
             responses=errors(413, 415) | sends(201, required=(ETAG, LOCATION)))
async def create(body: ViewIn, request: Request, principal: Authorized,
                 services: ServicesDep) -> Response:
    """The filters are checked by the ticket list; one it refuses is a 422."""
    owner = new_owner(principal, body.shared, "view")
    filters = await _checked(request, body.filters)
    command = CreateView(view_id=uuid.uuid4(), name=body.name, filters=filters,
                         owner_id=owner, at=services.clock.now())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: view_handlers.create_view(uow, command), _created)


_ANSWERS = RecordAnswers(view_document, lambda r: f"/v1/views/{r.id}")
_reply, _created = _ANSWERS.reply, _ANSWERS.created


@router.get("/v1/views/{view_id}", response_model=ViewOut,
            responses=errors(404) | sends(200, required=(ETAG,)), summary="One saved view")
async def get_one(view_id: UUID, principal: Authorized, services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        view = await view_handlers.visible_view(s, view_id, principal.agent_id)
    return _reply(view).response()


@router.patch("/v1/views/{view_id}", response_model=ViewOut,
              responses=errors(404, 412, 413, 415) | sends(200, required=(ETAG,)),
              summary="Change a saved view")
async def patch(view_id: UUID, body: ViewPatch, request: Request, principal: Authorized,
                services: ServicesDep, if_match: IfMatch = None) -> Response:
    """A shared view is the admins' to change; a personal one its owner's (or an
    admin's). New filters are checked by the ticket list, as a new view's are."""
    expected = parse_if_match(if_match)
    filters = None if body.filters is None else await _checked(request, body.filters)
    command = ChangeView(name=body.name, filters=filters, at=services.clock.now())

    return await change_owned(request, services, principal, body, expected,
                              view_handlers.change_view, view_id, command, _reply)


@router.delete("/v1/views/{view_id}", response_model=ViewOut,
               responses=errors(404, 412) | sends(200, required=(ETAG,)),
               summary="Delete a saved view")
async def delete(view_id: UUID, request: Request, principal: Authorized,
                 services: ServicesDep, if_match: IfMatch = None) -> Response:
    """Answers the view as it was; its history stays in its stream."""
    return await delete_owned(request, services, principal, if_match,
                              view_handlers.delete_view, view_id, _reply)


@router.get("/v1/views/{view_id}/tickets", response_model=TicketPage, responses=errors(404),
            summary="The ticket list under the view's filters")
async def tickets(view_id: UUID, request: Request, principal: Authorized,
                  services: ServicesDep, paging: Paging) -> Response:
    """Keyset, newest first, no totals: the pages of ``GET /v1/tickets`` with the view's
    filters; pass ``next_cursor`` back as ``cursor``."""
    async with commands.reading(services, principal) as s:
        view = await view_handlers.visible_view(s, view_id, principal.agent_id)
    asked = [("limit", str(paging.limit))] + (
        [] if paging.cursor is None else [("cursor", paging.cursor)])
    status, headers, body = await ticket_list(request, [*as_params(view.filters), *asked])
    return Response(body, status, media_type=headers.get("content-type", "application/json"))
