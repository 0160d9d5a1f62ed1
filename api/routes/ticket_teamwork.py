"""Ticket routes for working together: merge a ticket into another, split messages off
one, link tickets, follow them, copy customers on them (docs/teamwork.md).

Each is a ticket command like those of api/routes/tickets.py: ``If-Match`` on the
addressed ticket (412), ``Idempotency-Key``, the ticket and its ``ETag`` in the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar
from uuid import UUID

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from api.http import commands
from api.http.auth import Principal
from api.http.commands import RecordChange, agent_actor, parse_if_match
from api.http.deps import Authorized, ServicesDep
from api.http.headers import IfMatch
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.ticket_answers import COMMAND_ANSWERS, command_view, ticket_reply
from api.schemas.tickets import (
    CcsIn,
    FollowersIn,
    LinkIn,
    TicketMergeIn,
    TicketOut,
    TicketsMergedOut,
    TicketSplitIn,
    TicketSplitOut,
    etag,
)
from domain.ids import AgentId, MessageId, TicketId
from domain.ticket.commands import (
    ChangeFollowers,
    LinkTicket,
    MergeTicket,
    SplitTicket,
)
from domain.values import Requester
from eventstore.store import UnitOfWork
from handlers.ticket_links import (
    PairResult,
    change_ccs,
    link_ticket,
    merge_ticket,
    new_split_id,
    split_ticket,
)
from handlers.tickets import run_command

router = APIRouter(prefix="/v1/tickets", tags=["tickets"], route_class=StrictRoute)
C = TypeVar("C")


def _pair_reply(done: PairResult, other: str) -> JsonReply:
    """A two-ticket command's answer: the addressed ticket as ``ticket``, the other under
    ``other``; the ETag is the addressed ticket's."""
    return JsonReply(200, {"ticket": command_view(done.ticket), other: command_view(done.other)},
                     {"ETag": etag(done.ticket.ticket.version)})


async def _run(request: Request, services: ServicesDep, principal: Principal,
               body: BaseModel, if_match: str | None,
               work: Callable[[UnitOfWork, int | None], Awaitable[JsonReply]]) -> Response:
    expected = parse_if_match(if_match)

    async def attempt(uow: UnitOfWork) -> JsonReply:
        return await work(uow, expected)

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              attempt, expected_version=expected, deferring=True)


async def _run_pair(request: Request, services: ServicesDep, principal: Principal,
                    body: BaseModel, if_match: str | None,
                    pair_command: RecordChange[UUID, C, PairResult], ticket_id: UUID,
                    command: C, other: str) -> Response:
    """Run a command on the addressed ticket and another (a merge, a split) and answer
    both (``_pair_reply``, the other under ``other``)."""

    async def work(uow: UnitOfWork, expected: int | None) -> JsonReply:
        return _pair_reply(await pair_command(uow, ticket_id, command,
                                              expected_version=expected), other)

    return await _run(request, services, principal, body, if_match, work)


@router.post("/{ticket_id}/merge", response_model=TicketsMergedOut, responses=COMMAND_ANSWERS,
             summary="Merge the ticket into another")
async def merge(ticket_id: UUID, body: TicketMergeIn, request: Request, services: ServicesDep,
                principal: Authorized, if_match: IfMatch = None) -> Response:
    """The ticket is closed with a `TicketMerged` event naming `into`; `into`'s thread
    lists its messages (in order, as written) and copies its requester and CCs. Later
    commands on the merged ticket answer 409 `ticket_merged` naming `into`. Into itself
    or into a ticket it was merged from: 422; a ticket of another tenant: 404; either
    ticket merged or closed already: 409. `If-Match` is the merged ticket's version."""
    command = MergeTicket(into=TicketId(body.into), actor=agent_actor(principal),
                          at=services.clock.now())
    return await _run_pair(request, services, principal, body, if_match, merge_ticket,
                           ticket_id, command, "into")


@router.post("/{ticket_id}/split", response_model=TicketSplitOut, responses=COMMAND_ANSWERS,
             summary="Move chosen messages of the ticket to a new ticket")
async def split(ticket_id: UUID, body: TicketSplitIn, request: Request,
                services: ServicesDep, principal: Authorized,
                if_match: IfMatch = None) -> Response:
    """The ticket records `TicketSplit` naming the new ticket and the moved messages,
    which leave its thread; the new ticket opens with `TicketSplitFrom` naming the
    source, with the moved messages (their authors and times as written), the source's
    requester, group, priority, tags and field values, and SLA clocks started as an
    opening's. No message, one named twice, one not on this ticket's own thread or
    moved off it already, or every public message: 422; a ticket of another tenant:
    404; a merged or closed ticket: 409. `If-Match` is the source's version."""
    command = SplitTicket(ticket_id=new_split_id(),
                          message_ids=tuple(MessageId(m) for m in body.message_ids),
                          subject=body.subject, actor=agent_actor(principal),
                          at=services.clock.now())
    return await _run_pair(request, services, principal, body, if_match, split_ticket,
                           ticket_id, command, "new_ticket")


@router.post("/{ticket_id}/links", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Link the ticket to another, or take a link off")
async def link(ticket_id: UUID, body: LinkIn, request: Request, services: ServicesDep,
               principal: Authorized, if_match: IfMatch = None) -> Response:
    """Both tickets hold the link, each its side (`links` of each ticket). A link that
    would make a ticket a duplicate of its own duplicate, a second original or problem,
    a problem that is an incident: 422. A merged ticket: 409 `ticket_merged`."""
    command = LinkTicket(kind=body.kind, ticket_id=TicketId(body.ticket_id),
                         remove=body.remove, actor=agent_actor(principal),
                         at=services.clock.now())

    async def work(uow: UnitOfWork, expected: int | None) -> JsonReply:
        return ticket_reply((await link_ticket(uow, ticket_id, command,
                                         expected_version=expected)).ticket)

    return await _run(request, services, principal, body, if_match, work)


@router.post("/{ticket_id}/followers", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Agents start or stop following the ticket")
async def followers(ticket_id: UUID, body: FollowersIn, request: Request,
                    services: ServicesDep, principal: Authorized,
                    if_match: IfMatch = None) -> Response:
    """Only active agents follow (anyone else in `add`: 422)."""
    command = ChangeFollowers(add=tuple(AgentId(a) for a in body.add),
                              remove=tuple(AgentId(a) for a in body.remove),
                              actor=agent_actor(principal), at=services.clock.now())

    async def work(uow: UnitOfWork, expected: int | None) -> JsonReply:
        return ticket_reply(await run_command(uow, ticket_id, command, expected_version=expected))

    return await _run(request, services, principal, body, if_match, work)


@router.post("/{ticket_id}/ccs", response_model=TicketOut, responses=COMMAND_ANSWERS,
             summary="Copy customers on the ticket, or take them off")
async def ccs(ticket_id: UUID, body: CcsIn, request: Request, services: ServicesDep,
              principal: Authorized, if_match: IfMatch = None) -> Response:
    """Each CC is an e-mail (with a name), linked to the contact that holds it or to
    one created for it, or a contact (422 `unknown_contact` for one the tenant does not
    have); the requester cannot be a CC (422). A CC reads the ticket and its public
    messages in the portal."""
    at = services.clock.now()
    add = [p.contact_id if p.contact_id is not None
           else Requester(email=p.email or "", name=p.name) for p in body.add]

    async def work(uow: UnitOfWork, expected: int | None) -> JsonReply:
        return ticket_reply(await change_ccs(uow, ticket_id, add, body.remove,
                                             agent_actor(principal), at,
                                             expected_version=expected))

    return await _run(request, services, principal, body, if_match, work)
