"""Satisfaction ratings (docs/teamwork.md): staff produce a solved ticket's single-use
rating link; its requester spends it, with no other credential, to rate the ticket.
The portal's and the widget's own rating routes are in their modules."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, Field

from api.http import commands
from api.http.deps import Authorized, ServicesDep
from api.http.problem_docs import errors
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.customers import CustomerTicketOut, RatingIn
from eventstore.store import UnitOfWork
from handlers import satisfaction

router = APIRouter(tags=["tickets"], route_class=StrictRoute)

RATING_LINK_DAYS = 14
"""How long a rating link stays valid."""


class RatingLinkOut(BaseModel):
    id: UUID
    ticket_id: UUID
    created_at: datetime
    expires_at: datetime
    token: str = Field(description="shown only in this answer: pass it on to the requester, "
                                   "who spends it once at `POST /v1/ratings/{token}`")


class RatedOut(CustomerTicketOut):
    tenant_id: UUID


@router.post("/v1/tickets/{ticket_id}/satisfaction-link", status_code=201,
             response_model=RatingLinkOut, responses=errors(404, 409, 413, 415),
             summary="A solved ticket's single-use satisfaction rating link")
async def satisfaction_link(ticket_id: UUID, request: Request, services: ServicesDep,
                            principal: Authorized) -> Response:
    """A token the ticket's requester spends once to rate it, valid ``RATING_LINK_DAYS``
    days. Only its sha256 is stored; 409 ``ticket_not_solved`` unless the ticket is
    solved."""
    at = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(201, await satisfaction.issue_link(
            uow, ticket_id, at, timedelta(days=RATING_LINK_DAYS)))

    return await commands.run(request, services, principal, {"ticket_id": str(ticket_id)},
                              work)


@router.post("/v1/ratings/{token}", response_model=RatedOut,
             responses=errors(404, 409, 410, 413, 415, 422, 429),
             summary="Rate a solved ticket through its rating link (single use)")
async def rate(token: Annotated[str, Path(min_length=1, max_length=200)], body: RatingIn,
               services: ServicesDep) -> Response:
    """A forged link is 404, a spent or expired one 410 ``rating_link_gone``; a refused
    rating (409: the ticket closed or was reopened) leaves the link unspent."""
    done = await satisfaction.rate_by_link(services.store, token, body.rating, body.comment,
                                           services.clock.now())
    return JsonReply(200, done).response()
