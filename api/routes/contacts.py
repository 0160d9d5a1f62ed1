"""``/v1/contacts``: the tenant's customers (``handlers.contacts`` keeps the rules).

Agents and admins create and change contacts; auditors read them. A merged contact
answers its reads with a redirect (308) to the contact it was merged into.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Query, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import agent_actor, parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import DEFAULT_LIMIT, PageAsked, PageCursor, PageLimit, Position, scope_of
from api.http.params import IdOrNone
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.ticket_pages import ticket_page
from api.schemas.events import render_event
from api.schemas.people import (
    ContactExportOut,
    ContactIn,
    ContactOut,
    ContactPage,
    ContactPatch,
    ErasedOut,
    EraseIn,
    MergedOut,
    MergeIn,
    contact_document,
)
from api.schemas.tickets import TicketPage, etag
from domain.contact import Contact, ContactFields
from domain.ids import OrganizationId
from domain.validation import TAG_PATTERN
from eventstore.store import UnitOfWork
from handlers import contacts as contact_handlers
from handlers.attachments import forget_blobs
from handlers.erasure import EraseContact, erase_contact, export_contact
from projections.people import ContactFilters, list_contacts, load_organization
from projections.reads import TicketFilters

router = APIRouter(prefix="/v1/contacts", tags=["contacts"], route_class=StrictRoute)

_MOVED: dict[int | str, dict[str, Any]] = {
    308: {"description": "The contact was merged: `Location` names the survivor.",
          "headers": {"Location": {"schema": {"type": "string"}}}}}


def _reply(c: Contact, status: int = 200) -> JsonReply:
    headers = {"ETag": etag(c.version)}
    if status == 201:
        headers["Location"] = f"/v1/contacts/{c.id}"
    return JsonReply(status, contact_document(c), headers)


def _moved(to: UUID, tail: str = "") -> Response:
    return Response(status_code=308, headers={"Location": f"/v1/contacts/{to}{tail}"})


async def _visible(session: UnitOfWork, contact_id: UUID) -> Contact:
    contact = await contact_handlers.get_contact(session, contact_id)
    if contact is None:
        raise Problem(404, "not_found", "the contact does not exist")
    return contact


@router.get("", response_model=ContactPage, responses=errors(404), summary="List contacts")
async def list_(
    services: ServicesDep,
    principal: Authorized,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
    email: Annotated[str | None, Query(max_length=254,
                                       description="Exactly this e-mail, in any case.")] = None,
    organization_id: Annotated[IdOrNone | None, Query(
        description="An organization id, or `none` for contacts of no organization.")] = None,
    tag: Annotated[str | None, Query(pattern=TAG_PATTERN)] = None,
) -> Response:
    """Newest first, merged contacts left out; pass ``next_cursor`` back as ``cursor``
    with the same filters. An ``organization_id`` the tenant does not have is 404."""
    filters = ContactFilters(
        email=email,
        organization_id=(UUID(organization_id) if organization_id and organization_id != "none"
                         else None),
        no_organization=organization_id == "none", tag=tag)

    async def read(s: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        if filters.organization_id is not None and await load_organization(
                s.conn, principal.tenant_id, filters.organization_id) is None:
            raise Problem(404, "not_found", f"no organization {filters.organization_id}")
        return await list_contacts(s.conn, principal.tenant_id, filters, after, n)

    return await commands.read_page(
        services, principal, "contacts", read, contact_document, PageAsked(limit, cursor),
        filters={"email": email and email.lower(),
                 "organization_id": organization_id and organization_id.lower(), "tag": tag})


@router.post("", status_code=201, response_model=ContactOut, responses=errors(409, 413, 415)
         | sends(201, required=(ETAG, LOCATION)),
             summary="Create a contact")
async def create(body: ContactIn, request: Request, services: ServicesDep,
                 principal: Authorized) -> Response:
    """409 ``contact_exists`` with the holder's ``contact_id`` for an e-mail (any case)
    a contact has; 422 ``unknown_organization`` naming an organization that is not."""
    fields = ContactFields(
        email=body.email, name=body.name, phone=body.phone, external_id=body.external_id,
        organization_id=(None if body.organization_id is None
                         else OrganizationId(body.organization_id)),
        tags=tuple(body.tags))
    command = contact_handlers.NewContact(fields=fields, at=services.clock.now(),
                                          contact_id=uuid.uuid4())

    async def work(uow: UnitOfWork) -> JsonReply:
        return _reply(await contact_handlers.create_contact(uow, command), 201)

    return await commands.run(request, services, principal, body.model_dump(mode="json"), work)


@router.get("/{contact_id}", response_model=ContactOut, responses=({**errors(404), **_MOVED})
                                                                  | sends(200, required=(ETAG,)),
            summary="One contact")
async def get_one(contact_id: UUID, services: ServicesDep, principal: Authorized) -> Response:
    async with commands.reading(services, principal) as session:
        contact = await _visible(session, contact_id)
    if contact.merged_into is not None:
        return _moved(contact.merged_into)
    return JsonReply(200, contact_document(contact), {"ETag": etag(contact.version)}).response()


@router.patch("/{contact_id}", response_model=ContactOut,
              responses=errors(404, 409, 410, 412, 413, 415)
                        | sends(200, required=(ETAG,)), summary="Change a contact")
async def patch(contact_id: UUID, body: ContactPatch, request: Request,
                services: ServicesDep, principal: Authorized,
                if_match: IfMatch = None) -> Response:
    """409 ``contact_merged`` for a merged contact (change the survivor instead)."""
    given = body.model_dump(exclude_unset=True, mode="json")
    changes = dict(given)
    if "tags" in changes:
        changes["tags"] = tuple(changes["tags"])
    if changes.get("organization_id") is not None:
        changes["organization_id"] = OrganizationId(UUID(changes["organization_id"]))
    command = contact_handlers.ChangeContact(contact_id=contact_id, changes=changes,
                                             at=services.clock.now(),
                                             expected_version=parse_if_match(if_match))

    async def work(uow: UnitOfWork) -> JsonReply:
        return _reply(await contact_handlers.update_contact(uow, command))

    return await commands.run(request, services, principal, given, work)


@router.post("/{contact_id}/merge", response_model=MergedOut,
             responses=errors(404, 409, 412, 413, 415) | sends(200, required=(LOCATION,)),
             summary="Merge the contact into another")
async def merge(contact_id: UUID, body: MergeIn, request: Request, services: ServicesDep,
                principal: Authorized, if_match: IfMatch = None) -> Response:
    """Moves every ticket of the contact to ``into`` (a ``RequesterChanged`` each);
    afterwards the merged contact's reads redirect to ``into``. 422
    ``unknown_contact`` names an ``into`` that is not a contact (or was merged)."""
    command = contact_handlers.Merge(contact_id=contact_id, into=body.into,
                                     at=services.clock.now(),
                                     expected_version=parse_if_match(if_match))

    async def work(uow: UnitOfWork) -> JsonReply:
        merged = await contact_handlers.merge_contact(uow, command)
        return JsonReply(200, {"contact": contact_document(merged.survivor),
                               "tickets_moved": merged.tickets_moved},
                         {"Location": f"/v1/contacts/{merged.survivor.id}"})

    return await commands.run(request, services, principal, body.model_dump(mode="json"), work)


@router.post("/{contact_id}/erase", response_model=ErasedOut,
             responses=errors(404, 409, 410, 413, 415),
             summary="Erase the contact's personal data")
async def erase(contact_id: UUID, body: EraseIn, request: Request, services: ServicesDep,
                principal: Authorized) -> Response:
    """Destroys the contact's data key: every personal field of the events naming the
    contact reads as ``{"erased": true}`` from now on, and the contact, its tickets
    and their messages are redacted; the hash chain still verifies. 410
    ``contact_erased`` for a contact erased already (docs/erasure.md)."""
    command = EraseContact(contact_id=contact_id, reason=body.reason,
                           by=agent_actor(principal), at=services.clock.now())

    files: list[tuple[UUID, str]] = []

    async def work(uow: UnitOfWork) -> JsonReply:
        erased = await erase_contact(uow, command)
        files[:] = erased.files
        return JsonReply(200, {"contact_id": str(erased.contact_id), "events": erased.events,
                               "fields": erased.fields, "tickets": erased.tickets,
                               "unsealed_events": erased.unsealed_events,
                               "files": len(erased.files)}, {})

    answer = await commands.run(request, services, principal, body.model_dump(mode="json"),
                                work)
    # Committed: the bytes of its files kept outside Postgres go now.
    await forget_blobs(services.files, principal.tenant_id, files)
    return answer


@router.get("/{contact_id}/export", response_model=ContactExportOut, responses=errors(404),
            summary="Everything held about the contact")
async def export(contact_id: UUID, services: ServicesDep, principal: Authorized) -> Response:
    """The contact, its tickets and their messages, and the events that name it, as
    one document (a data subject's access request)."""
    async with services.store.unit_of_work(principal.tenant_id, readonly=True,
                                           isolation="repeatable_read") as session:
        held = await export_contact(session, contact_id)
    return JsonReply(200, {
        "contact": contact_document(held.contact),
        "tickets": [orjson.loads(t) for t in held.tickets],
        "messages": held.messages,
        "attachments": held.attachments,
        "events": [render_event(e) for e in held.events]}).response()


@router.get("/{contact_id}/tickets", response_model=TicketPage,
            responses={**errors(404), **_MOVED}, summary="The contact's tickets")
async def tickets(contact_id: UUID, services: ServicesDep, principal: Authorized,
                  paging: Paging) -> Response:
    """Newest first, as ``GET /v1/tickets?requester_id=``."""
    scope = scope_of(principal.tenant_id, "contact-tickets", {"contact": str(contact_id)})

    async def guard(session: UnitOfWork) -> Response | None:
        contact = await _visible(session, contact_id)
        return None if contact.merged_into is None else _moved(contact.merged_into, "/tickets")

    return await ticket_page(services, principal.tenant_id, principal.actor, scope,
                             TicketFilters(requester_id=contact_id), paging, guard)
