"""The customer portal: a contact signs in and works on their own tickets.

- ``POST /v1/contacts/{contact_id}/portal-link`` (staff) produces a single-use password
  link's token for a contact, shown once; the operator sends it (no mail server here).
- ``POST /v1/portal/auth/password`` spends it: the contact sets a password (404
  unknown, 410 ``link_gone`` spent or expired).
- ``POST /v1/portal/auth/sign-in`` takes ``{tenant, email, password}`` (slug or id)
  and answers a
  portal token (``ACCESS_TOKEN_MINUTES``), valid while the portal session is open, and
  an opaque refresh token in the httpOnly ``hd_portal_refresh`` cookie scoped to
  ``/v1/portal/auth`` (api/http/cookies.py). Every failure is the same 401
  ``sign_in_failed``, with the hash computed either way, and counts against the
  address's failures budget (the auth operations are ``OPEN``: api/ops/ratelimit.py).
- ``POST /v1/portal/auth/refresh`` spends the cookie for a new portal token and a new
  cookie, with the staff rules (``REFRESH_TOKEN_DAYS`` sliding, ``SESSION_MAX_DAYS``
  cap); a token spent before revokes its whole session (401).
- ``POST /v1/portal/auth/sign-out`` ends the session of the cookie, or of the bearer
  portal token, and clears the cookie.
- ``/v1/portal/ticket-fields``: the fields the tenant opened to customers (``intake``).
- ``/v1/portal/tickets...``: the contact's tickets (keyset, newest first), one of them
  (with its values of those fields), its public messages, a public reply, a new ticket
  (with values of those fields, checked by the domain as staff-set ones are). Another
  contact's ticket is 404 like a missing one, and internal notes are never read: the
  routes ask for the contact's rows, and row-level security (migration 0460) lets the
  transaction see nothing else, as it acts as the customer.

The rules are ``handlers.portal``.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Cookie, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from api.http import commands
from api.http.answer_headers import CACHE_CONTROL, LOCATION, SET_COOKIE, merged, sends
from api.http.cookies import PORTAL_REFRESH
from api.http.customer_commands import public_reply, rating
from api.http.deps import Authorized, CustomerAuthorized, Paging, ServicesDep
from api.http.headers import bearer_token
from api.http.pagination import Position
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.sign_in import SignInRoutes
from api.schemas.attachments import recorded
from api.schemas.brand import BrandOut
from api.schemas.customers import (
    CustomerMessagePage,
    CustomerReplyIn,
    CustomerReplyOut,
    CustomerTicketOut,
    CustomerTicketPage,
    PortalFieldList,
    PortalTicketIn,
    PortalTicketOut,
    RatingIn,
    customer_message,
)
from api.schemas.sign_in import SignInIn
from domain.ids import TicketId
from eventstore.store import UnitOfWork
from handlers import brand, portal, sessions
from handlers.credentials import MAX_PASSWORD, MIN_PASSWORD, check_password

router = APIRouter(tags=["portal"], route_class=StrictRoute)
_REFRESH_ANSWERS = merged(errors(), sends(200, required=(SET_COOKIE, CACHE_CONTROL)),
                          sends(401, required=(SET_COOKIE,)))
"""A refresh: a new cookie, or the refused one cleared."""

PortalRefreshCookie = Annotated[str | None, Cookie(alias=PORTAL_REFRESH.name, max_length=200,
                                                   include_in_schema=False)]


class PortalLinkOut(BaseModel):
    id: UUID
    contact_id: UUID
    created_at: datetime
    expires_at: datetime
    token: str = Field(description="shown only in this answer: pass it on to the contact, "
                                   "who spends it once at `POST /v1/portal/auth/password`")


class PortalPasswordIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str = Field(min_length=1, max_length=200)
    password: str = Field(min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, pattern=r"\S",
                          description="10 characters or more, not only spaces")


class PortalPasswordSetOut(BaseModel):
    tenant_id: UUID
    contact_id: UUID
    email: str


class PortalSignedInOut(BaseModel):
    access_token: str = Field(description="send as `Authorization: Bearer <token>` to "
                                          "`/v1/portal/...` (and nowhere else)")
    token_type: Literal["Bearer"]
    expires_in: int
    expires_at: datetime
    refresh_expires_at: datetime = Field(
        description="when the refresh cookie expires unless it is used before (each "
                    "refresh starts the period again, up to the session's cap)")
    session_expires_at: datetime = Field(description="sign in again after this")
    tenant_id: UUID
    contact_id: UUID


@router.post("/v1/contacts/{contact_id}/portal-link", status_code=201, response_model=PortalLinkOut,
             responses=errors(404, 409, 413, 415), summary="A contact's portal password link")
async def portal_link(contact_id: UUID, request: Request, services: ServicesDep,
                      principal: Authorized) -> Response:
    """A single-use token that lets the contact set their portal password, valid
    ``PORTAL_LINK_HOURS``. Only its sha256 is stored."""
    at = services.clock.now()
    valid = timedelta(hours=services.settings.portal_link_hours)

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(201, await portal.issue_link(uow, contact_id, at, valid))

    return await commands.run(request, services, principal, {"contact_id": str(contact_id)},
                              work)


@router.post("/v1/portal/auth/password", response_model=PortalPasswordSetOut,
             responses=errors(404, 410, 413, 415),
             summary="Spend a password link: set the portal password")
async def set_password(body: PortalPasswordIn, services: ServicesDep) -> Response:
    done = await portal.set_password(services.store, services.passwords, body.token,
                                     check_password(body.password), services.clock.now())
    return JsonReply(200, done).response()


PORTAL_SIGN_IN = SignInRoutes(portal.PORTAL, PORTAL_REFRESH,
                              lambda services: services.portal_tokens, "customer",
                              lambda done: {"session_expires_at": done.session_expires_at,
                                            "contact_id": done.holder_id})


@router.post("/v1/portal/auth/sign-in", response_model=PortalSignedInOut,
             responses=errors(413, 415, 429) | sends(200, required=(SET_COOKIE, CACHE_CONTROL)),
             summary="A contact signs in to the portal (the refresh token is set as a cookie)")
async def sign_in(body: SignInIn, request: Request, services: ServicesDep) -> Response:
    """As the staff sign-in: the same 401 for every failure, the same throttle."""
    return await PORTAL_SIGN_IN.sign_in(body, request, services)


@router.post("/v1/portal/auth/refresh", response_model=PortalSignedInOut,
             responses=_REFRESH_ANSWERS,
             summary="A new portal token for the portal refresh cookie, which is rotated")
async def refresh(request: Request, services: ServicesDep,
                  hd_portal_refresh: PortalRefreshCookie = None) -> Response:
    # Portal tokens are not cached: a revoked session's stop at once.
    return await PORTAL_SIGN_IN.refresh(request, services, hd_portal_refresh)


@router.post("/v1/portal/auth/sign-out", status_code=204, responses=errors()
         | sends(204, required=(SET_COOKIE,)),
             summary="End the portal session of the refresh cookie or the bearer token, "
                     "and clear the cookie")
async def sign_out(request: Request, services: ServicesDep,
                   hd_portal_refresh: PortalRefreshCookie = None) -> Response:
    """Like the staff sign-out, always 204: a cookie or token that is malformed, forged,
    expired or of an ended session leaves nothing to end. The session's portal tokens
    and refresh tokens stop at once."""
    now = services.clock.now()
    if not await sessions.sign_out(services.store, hd_portal_refresh, now, portal.PORTAL):
        token = bearer_token(request.headers.get("authorization"))
        claims = None if token is None else services.portal_tokens.claims(token, now,
                                                                           expiry=False)
        if claims is not None:
            contact = claims.agent_id  # a portal token's subject is its contact
            async with services.store.unit_of_work(claims.tenant_id,
                                                   portal.customer_actor(contact)) as uow:
                await portal.sign_out(uow, claims.session_id, contact, now)
    return PORTAL_REFRESH.forget(Response(status_code=204), request)


@router.get("/v1/portal/brand/{tenant}", response_model=BrandOut, responses=errors(404),
            summary="A tenant's name and colour, for its portal's pages")
async def get_brand(tenant: Annotated[str, Path(min_length=1, max_length=63)],
                    services: ServicesDep) -> Response:
    """``tenant`` is the slug (any case) or the id, as at sign-in. Public: the sign-in
    page is drawn in them."""
    found = await brand.brand_of(services.store, tenant)
    if found is None:
        raise Problem(404, "not_found", f"no tenant {tenant!r}")
    return JsonReply(200, found.document()).response()


@router.get("/v1/portal/tickets", response_model=CustomerTicketPage, responses=errors(),
            summary="The signed-in contact's tickets, newest first")
async def list_tickets(services: ServicesDep, principal: CustomerAuthorized,
                       paging: Paging) -> Response:
    """The tickets the contact is the requester of, and those it is copied on (a CC)."""
    contact = principal.contact_id
    assert contact is not None

    async def read(uow: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        return await portal.own_tickets(uow, contact, after, n)

    return await commands.read_page(services, principal, "portal-tickets", read,
                                    portal.ticket_document, paging,
                                    filters={"contact": str(contact)})


@router.get("/v1/portal/ticket-fields", response_model=PortalFieldList, responses=errors(),
            summary="The ticket fields a customer fills in on a new ticket")
async def list_fields(services: ServicesDep, principal: CustomerAuthorized) -> Response:
    """Active fields the tenant opened to customers (``intake``), in key order; staff-only
    fields are not listed."""
    async with commands.reading(services, principal) as uow:
        found = await portal.customer_fields(uow)
    return JsonReply(200, {"data": found}).response()


@router.post("/v1/portal/tickets", status_code=201, response_model=PortalTicketOut,
             responses=errors(404, 409, 413, 415)
         | sends(201, required=(LOCATION,)), summary="Open a ticket as the signed-in contact")
async def open_ticket(body: PortalTicketIn, request: Request, services: ServicesDep,
                      principal: CustomerAuthorized) -> Response:
    assert principal.contact_id is not None
    contact, ticket_id, at = principal.contact_id, TicketId(uuid.uuid4()), services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        ticket = await portal.open_ticket(uow, contact, ticket_id, body.subject, body.body, at,
                                          body.attachments, body.fields)
        return JsonReply(201, ticket, {"Location": f"/v1/portal/tickets/{ticket['id']}"})

    payload = recorded(body)
    if not body.fields:  # recorded as before tickets here had fields, for retries
        del payload["fields"]
    return await commands.run(request, services, principal, payload, work)


@router.get("/v1/portal/tickets/{ticket_id}", response_model=PortalTicketOut,
            responses=errors(404), summary="One of the signed-in contact's tickets")
async def get_ticket(ticket_id: UUID, services: ServicesDep,
                     principal: CustomerAuthorized) -> Response:
    """A ticket the contact is the requester of or copied on; 404 for any other."""
    assert principal.contact_id is not None
    async with commands.reading(services, principal) as uow:
        found = await portal.own_ticket(uow, principal.contact_id, ticket_id)
    return JsonReply(200, found).response()


@router.get("/v1/portal/tickets/{ticket_id}/messages", response_model=CustomerMessagePage,
            responses=errors(404), summary="A ticket's public messages, oldest first")
async def get_messages(ticket_id: UUID, services: ServicesDep, principal: CustomerAuthorized,
                       paging: Paging) -> Response:
    """With the public messages of the tickets merged into it, each naming the ticket it
    was written on; never an internal note."""
    contact = principal.contact_id
    assert contact is not None

    async def read(uow: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        return await portal.public_messages(uow, contact, ticket_id, after, n)

    return await commands.read_page(services, principal, "portal-messages", read,
                                    customer_message, paging,
                                    filters={"ticket_id": str(ticket_id)})


@router.post("/v1/portal/tickets/{ticket_id}/messages", status_code=201,
             response_model=CustomerReplyOut, responses=errors(403, 404, 409, 413, 415),
             summary="Reply publicly on one of the signed-in contact's tickets")
async def post_reply(ticket_id: UUID, body: CustomerReplyIn, request: Request,
                     services: ServicesDep, principal: CustomerAuthorized) -> Response:
    """A reply on a closed ticket opens a follow-up ticket, which the answer returns. A
    contact only copied on the ticket (a CC) reads it and may not reply: 403
    ``copied_only``."""
    assert principal.contact_id is not None
    return await public_reply(request, services, principal, principal.contact_id, ticket_id,
                              body, portal.reply)


@router.post("/v1/portal/tickets/{ticket_id}/rating", response_model=CustomerTicketOut,
             responses=errors(403, 404, 409, 413, 415, 422),
             summary="Rate one of the signed-in contact's solved tickets")
async def rate_ticket(ticket_id: UUID, body: RatingIn, request: Request,
                      services: ServicesDep, principal: CustomerAuthorized) -> Response:
    """Good or bad, with an optional comment; a later rating replaces this one until the
    ticket closes (then 409 ``ticket_closed``; 409 ``ticket_not_solved`` before it is
    solved). Only the requester rates: 403 ``copied_only`` for a CC."""
    assert principal.contact_id is not None
    return await rating(request, services, principal, principal.contact_id, ticket_id, body,
                        portal.rate)
