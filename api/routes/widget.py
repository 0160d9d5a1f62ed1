"""The embeddable widget: an anonymous visitor on one of the tenant's pages opens a
ticket and follows it (docs/widget.md).

The tenant is named in the path, ``/v1/widget/{tenant_id}/...``: a browser's preflight
carries neither body nor token, and the path is what lets it be answered for that
tenant's ``widget_origins`` alone (api/http/cors.py).

- ``POST /v1/widget/{tenant_id}/sessions`` takes ``{email}`` from an allowed
  ``Origin`` (else 403) and answers a widget token: a short-lived anonymous session
  (``WIDGET_SESSION_MINUTES``) bound to that e-mail and origin. Opening sessions is
  limited per client address and per origin (429).
- ``/v1/widget/{tenant_id}/tickets...`` with that token, from the same origin: open a
  ticket (its requester is the session's e-mail), get it, read its public messages,
  reply publicly. A widget session reaches only the tickets it opened (and their
  follow-ups): any other is 404 like a missing one, and internal notes are never
  read; row-level security (migration 0470) holds the transaction to that.

The rules are ``handlers.widget``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.http import commands
from api.http.answer_headers import CACHE_CONTROL, LOCATION, sends
from api.http.customer_commands import public_reply, rating
from api.http.deps import Paging, ServicesDep
from api.http.pagination import Position
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.widget import WidgetAuthorized, WidgetOrigin
from api.ops.ratelimit import Policy
from api.schemas.attachments import recorded
from api.schemas.brand import BrandOut
from api.schemas.customers import (
    CustomerMessagePage,
    CustomerReplyIn,
    CustomerReplyOut,
    CustomerTicketOut,
    PortalFieldList,
    PortalTicketIn,
    PortalTicketOut,
    RatingIn,
    customer_message,
)
from domain.ids import TenantId, TicketId
from eventstore.store import UnitOfWork
from handlers import brand, portal, widget
from handlers.portal import ticket_document

router = APIRouter(prefix="/v1/widget/{tenant_id}", tags=["widget"], route_class=StrictRoute)


class WidgetSessionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    email: str = Field(min_length=1, max_length=254,
                       description="the visitor's e-mail, as they typed it: not checked "
                                   "to be theirs")


class WidgetSessionOut(BaseModel):
    access_token: str = Field(description="send as `Authorization: Bearer <token>` to "
                                          "`/v1/widget/{tenant_id}/tickets...`, from the "
                                          "same origin")
    token_type: Literal["Bearer"]
    expires_in: int
    expires_at: datetime = Field(description="open a new session after this")
    tenant_id: UUID
    email: str
    origin: str


async def _limit(services: ServicesDep, bucket: str, policy: Policy) -> None:
    decision = await services.limiter.count(bucket, policy)
    if decision is not None and not decision.allowed:
        services.metrics.rate_limited.inc()
        raise Problem(429, "rate_limited",
                      f"at most {policy.limit} widget sessions per {policy.window} s "
                      f"({policy.name}); retry in {decision.retry_after} s",
                      headers={"Retry-After": str(max(1, decision.retry_after))})


@router.get("/brand", response_model=BrandOut, responses=errors(403, 404),
            summary="The tenant's name and colour, from an allowed origin")
async def get_brand(tenant_id: UUID, services: ServicesDep, origin: WidgetOrigin) -> Response:
    """What the widget's launcher is drawn in; a 403 ``origin_not_allowed`` is how it
    learns, before anyone types, that it is not enabled on this site."""
    found = await brand.brand_of(services.store, str(tenant_id))
    if found is None:
        raise Problem(404, "not_found", f"no tenant {tenant_id}")
    return JsonReply(200, found.document()).response()


@router.get("/ticket-fields", response_model=PortalFieldList, responses=errors(403),
            summary="The ticket fields a visitor fills in, from an allowed origin")
async def list_fields(tenant_id: UUID, services: ServicesDep, origin: WidgetOrigin) -> Response:
    """The fields the portal's new-ticket form draws (open to customers, active), so
    that the widget asks for them too: a field the tenant requires on open is required
    of a widget visitor as of a portal customer."""
    async with services.store.unit_of_work(TenantId(tenant_id), None, readonly=True) as uow:
        found = await portal.customer_fields(uow)
    return JsonReply(200, {"data": found}).response()


@router.post("/sessions", status_code=201, response_model=WidgetSessionOut,
             responses=errors(403, 413, 415, 429) | sends(201, required=(CACHE_CONTROL,)),
             summary="Open a widget session for an e-mail, from an allowed origin")
async def open_session(tenant_id: UUID, body: WidgetSessionIn, request: Request,
                       services: ServicesDep, origin: WidgetOrigin) -> Response:
    """Limited per client address and per origin (``WIDGET_SESSIONS_PER_ADDRESS``,
    ``WIDGET_SESSIONS_PER_ORIGIN`` per ``RATE_LIMIT_WINDOW``)."""
    settings = services.settings
    window = settings.rate_limit_window
    client = request.client.host if request.client else "unknown"
    await _limit(services, f"ws:a:{client}",
                 Policy("widget-sessions-per-address", settings.widget_sessions_per_address,
                        window))
    await _limit(services, f"ws:o:{tenant_id}:{origin}",
                 Policy("widget-sessions-per-origin", settings.widget_sessions_per_origin,
                        window))
    now = services.clock.now()
    tokens = services.widget_tokens
    opened = await widget.open_session(services.store, TenantId(tenant_id), body.email,
                                       origin, now, tokens.ttl)
    token, expires = tokens.issue(tenant_id=opened.tenant_id, agent_id=opened.session_id,
                                  session_id=opened.session_id, role=widget.WIDGET, now=now)
    return JsonReply(201, {
        "access_token": token, "token_type": "Bearer",
        "expires_in": int(tokens.ttl.total_seconds()),
        "expires_at": min(expires, opened.expires_at), "tenant_id": opened.tenant_id,
        "email": opened.email, "origin": opened.origin,
    }, headers={"Cache-Control": "no-store"}).response()


@router.post("/tickets", status_code=201, response_model=CustomerTicketOut,
             responses=errors(403, 404, 409, 413, 415) | sends(201, required=(LOCATION,)),
             summary="Open a ticket for the widget session's e-mail")
async def open_ticket(body: PortalTicketIn, request: Request, services: ServicesDep,
                      principal: WidgetAuthorized) -> Response:
    """The requester is the session's e-mail, resolved to its contact (created if no
    contact holds it) in the ticket's own transaction; source ``chat``. Its ``fields``
    are checked as the portal's are."""
    session, ticket_id, at = principal.key_id, TicketId(uuid.uuid4()), services.clock.now()
    tenant = principal.tenant_id

    async def work(uow: UnitOfWork) -> JsonReply:
        ticket = await widget.open_ticket(uow, session, ticket_id, body.subject, body.body, at,
                                          body.attachments, body.fields)
        return JsonReply(201, ticket_document(ticket),
                         {"Location": f"/v1/widget/{tenant}/tickets/{ticket.id}"})

    return await commands.run(request, services, principal, recorded(body), work)


@router.get("/tickets/{ticket_id}", response_model=PortalTicketOut,
            responses=errors(403, 404), summary="A ticket the widget session opened")
async def get_ticket(ticket_id: UUID, services: ServicesDep,
                     principal: WidgetAuthorized) -> Response:
    async with commands.reading(services, principal) as uow:
        found = await widget.get_ticket(uow, principal.key_id, ticket_id)
    return JsonReply(200, found).response()


@router.get("/tickets/{ticket_id}/messages", response_model=CustomerMessagePage,
            responses=errors(403, 404),
            summary="A widget session's ticket's public messages, oldest first")
async def get_messages(ticket_id: UUID, services: ServicesDep, principal: WidgetAuthorized,
                       paging: Paging) -> Response:
    """With the public messages of the tickets merged into it, each naming the ticket it
    was written on; never an internal note."""
    session = principal.key_id

    async def read(uow: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        return await widget.public_messages(uow, session, ticket_id, after, n)

    return await commands.read_page(services, principal, "widget-messages", read,
                                    customer_message, paging,
                                    filters={"ticket_id": str(ticket_id), "session": str(session)})


@router.post("/tickets/{ticket_id}/messages", status_code=201, response_model=CustomerReplyOut,
             responses=errors(403, 404, 409, 413, 415),
             summary="Reply publicly on a ticket the widget session opened")
async def post_reply(ticket_id: UUID, body: CustomerReplyIn, request: Request,
                     services: ServicesDep, principal: WidgetAuthorized) -> Response:
    """A reply on a closed ticket opens a follow-up ticket, which the session holds as
    well and the answer returns."""
    return await public_reply(request, services, principal, principal.key_id, ticket_id, body,
                              widget.reply)


@router.post("/tickets/{ticket_id}/rating", response_model=CustomerTicketOut,
             responses=errors(403, 404, 409, 413, 415, 422),
             summary="Rate a solved ticket the widget session opened")
async def rate_ticket(ticket_id: UUID, body: RatingIn, request: Request,
                      services: ServicesDep, principal: WidgetAuthorized) -> Response:
    """Good or bad, with an optional comment; a later rating replaces this one until the
    ticket closes (then 409 ``ticket_closed``)."""
    return await rating(request, services, principal, principal.key_id, ticket_id, body,
                        widget.rate)
