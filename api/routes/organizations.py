"""``/v1/organizations``: the companies contacts belong to (``handlers.organizations``
keeps the rules). Admins manage them; agents and auditors read them."""

from __future__ import annotations

import uuid
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, LOCATION, sends
from api.http.commands import parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import DEFAULT_LIMIT, PageAsked, PageCursor, PageLimit, Position, scope_of
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply, present, versioned
from api.http.routing import StrictRoute
from api.http.ticket_pages import ticket_page
from api.schemas.people import (
    OrganizationChanged,
    OrganizationIn,
    OrganizationOut,
    OrganizationPage,
    OrganizationPatch,
    organization_document,
)
from api.schemas.tickets import TicketPage
from eventstore.store import UnitOfWork
from handlers import organizations as org_handlers
from projections.people import list_organizations
from projections.reads import TicketFilters

router = APIRouter(prefix="/v1/organizations", tags=["organizations"], route_class=StrictRoute)


def _document(result: org_handlers.OrganizationResult) -> dict[str, Any]:
    return {**organization_document(result.organization),
            "contacts_moved": result.contacts_moved}


def _reply(result: org_handlers.OrganizationResult) -> JsonReply:
    return versioned(200, _document(result), result.organization.version)


def _created(result: org_handlers.OrganizationResult) -> JsonReply:
    o = result.organization
    return versioned(201, _document(result), o.version, f"/v1/organizations/{o.id}")


@router.get("", response_model=OrganizationPage, responses=errors(),
            summary="List organizations")
async def list_(
    services: ServicesDep,
    principal: Authorized,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
    name: Annotated[str | None, Query(max_length=200,
                                      description="Exactly this name, in any case.")] = None,
    domain: Annotated[str | None, Query(max_length=253,
                                        description="The organization holding it.")] = None,
) -> Response:
    """Newest first; pass ``next_cursor`` back as ``cursor`` with the same filters."""

    async def read(s: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        return await list_organizations(s.conn, principal.tenant_id, name, domain, after, n)

    return await commands.read_page(
        services, principal, "organizations", read, organization_document,
        PageAsked(limit, cursor),
        filters={"name": name and name.lower(), "domain": domain and domain.lower()})


@router.post("", status_code=201, response_model=OrganizationChanged,
             responses=errors(409, 413, 415)
                       | sends(201, required=(ETAG, LOCATION)), summary="Create an organization")
async def create(body: OrganizationIn, request: Request, services: ServicesDep,
                 principal: Authorized) -> Response:
    """409 ``organization_exists`` or ``domain_taken`` naming the organization holding
    the name or a domain."""
    command = org_handlers.NewOrganization(name=body.name, domains=tuple(body.domains),
                                           move_contacts=body.move_contacts,
                                           at=services.clock.now(),
                                           organization_id=uuid.uuid4())
    return await commands.run_to(request, services, principal, body.model_dump(mode="json"),
                                 lambda uow: org_handlers.create_organization(uow, command),
                                 _created)


@router.get("/{organization_id}", response_model=OrganizationOut, responses=errors(404)
         | sends(200, required=(ETAG,)),
            summary="One organization")
async def get_one(organization_id: UUID, services: ServicesDep,
                  principal: Authorized) -> Response:
    async with commands.reading(services, principal) as session:
        org = await org_handlers.get_organization(session, organization_id)
    org = present(org, "the organization does not exist")
    return versioned(200, organization_document(org), org.version).response()


@router.patch("/{organization_id}", response_model=OrganizationChanged,
              responses=errors(404, 409, 412, 413, 415)
                        | sends(200, required=(ETAG,)), summary="Change an organization")
async def patch(organization_id: UUID, body: OrganizationPatch, request: Request,
                services: ServicesDep, principal: Authorized,
                if_match: IfMatch = None) -> Response:
    given = body.model_dump(exclude_unset=True, mode="json")
    command = org_handlers.ChangeOrganization(
        organization_id=organization_id, at=services.clock.now(), name=body.name,
        domains=None if body.domains is None else tuple(body.domains),
        move_contacts=body.move_contacts, expected_version=parse_if_match(if_match))
    return await commands.run_to(request, services, principal, given,
                                 lambda uow: org_handlers.update_organization(uow, command),
                                 _reply)


@router.get("/{organization_id}/tickets", response_model=TicketPage, responses=errors(404),
            summary="The tickets of the organization's contacts")
async def tickets(organization_id: UUID, services: ServicesDep, principal: Authorized,
                  paging: Paging) -> Response:
    """Newest first, as ``GET /v1/tickets?organization_id=``."""
    scope = scope_of(principal.tenant_id, "organization-tickets", {"org": str(organization_id)})

    async def guard(session: UnitOfWork) -> Response | None:
        if await org_handlers.get_organization(session, organization_id) is None:
            raise Problem(404, "not_found", "the organization does not exist")
        return None

    return await ticket_page(services, principal.tenant_id, principal.actor, scope,
                             TicketFilters(organization_id=organization_id), paging, guard)
