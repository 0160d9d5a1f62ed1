"""Message routes: post a reply or internal note, list a ticket's messages."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.answer_headers import ETAG, sends
from api.http.commands import agent_actor, parse_if_match
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.headers import IfMatch
from api.http.pagination import Position
from api.http.problem_docs import COMMAND_ERRORS, errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.attachments import recorded
from api.schemas.tickets import (
    MessageIn,
    MessagePage,
    MessagePosted,
    etag,
    message_view,
    ticket_view,
)
from domain.ids import MessageId, TicketId
from domain.mapper import from_stored
from domain.ticket.events import MessageAdded, TicketOpened
from eventstore.store import UnitOfWork
from handlers import tickets as ticket_handlers
from projections.reads import list_messages, ticket_thread

router = APIRouter(prefix="/v1/tickets", tags=["messages"], route_class=StrictRoute)



@router.post("/{ticket_id}/messages", status_code=201, response_model=MessagePosted,
             responses=COMMAND_ERRORS
         | sends(201, required=(ETAG,)), summary="Add a public reply or an internal note")
async def post_message(ticket_id: UUID, body: MessageIn, request: Request,
                       services: ServicesDep, principal: Authorized,
                       if_match: IfMatch = None) -> Response:
    """The author comes from the key: an intake key writes as the ticket's requester,
    any other key as its agent. A customer's message on a closed ticket opens a
    follow-up ticket, which the answer returns."""
    message_id = MessageId(uuid.uuid4())
    expected = parse_if_match(if_match)
    # An intake key writes as the ticket's requester (author None); others as their agent.
    command = ticket_handlers.PostMessage(
        ticket_id=TicketId(ticket_id), message_id=message_id, body=body.body,
        visibility=body.visibility, at=services.clock.now(),
        author=None if principal.role == "intake" else agent_actor(principal),
        attachments=tuple(body.attachments))

    async def work(uow: UnitOfWork) -> JsonReply:
        result = await ticket_handlers.post_message(uow, command, expected_version=expected)
        ticket = result.follow_up or result.ticket
        event = next(e for e in (from_stored(r.type, r.schema_version, r.data)
                                 for r in result.events)
                     if isinstance(e, MessageAdded | TicketOpened)
                     and e.message_id == message_id)
        message = {
            "id": message_id, "ticket_id": ticket.id, "visibility": body.visibility.value,
            "author_kind": event.author.kind.value, "author_id": event.author.id,
            "body": body.body, "created_at": event.at,
            "attachments": [a.model_dump(mode="json") for a in event.attachments],
        }
        return JsonReply(201, {"message": message_view(message),
                               "ticket": ticket_view(ticket, result.documents.get(ticket.id))},
                         {"ETag": etag(ticket.version)})

    return await commands.run(request, services, principal, recorded(body), work,
                              expected_version=expected, deferring=True)


@router.get("/{ticket_id}/messages", response_model=MessagePage, responses=errors(404),
            summary="A ticket's messages, oldest first")
async def get_messages(ticket_id: UUID, services: ServicesDep, principal: Authorized,
                       paging: Paging) -> Response:
    """A ticket that others were merged into lists their messages too, in one order by
    time, each with the `ticket_id` it was written on (docs/teamwork.md)."""

    async def read(s: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        # A merged-into ticket's thread lists the messages of the tickets merged into it.
        thread = await ticket_thread(s.conn, principal.tenant_id, ticket_id)
        if thread is None:
            raise Problem(404, "not_found", "the ticket does not exist")
        return await list_messages(s.conn, principal.tenant_id, thread, after, n)

    return await commands.read_page(services, principal, "messages", read, message_view, paging,
                                    filters={"ticket_id": str(ticket_id)})
