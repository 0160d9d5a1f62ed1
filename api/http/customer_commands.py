"""The route side of what a customer does on a ticket it holds: a public reply and a
rating, from the portal (as the signed-in contact) or the widget (as a widget session).

The two differ only in who holds the ticket and so in the handler that finds it theirs
(``handlers.portal``, ``handlers.widget``); the command runs and answers the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from fastapi import Request, Response

from api.http import commands
from api.http.auth import Principal
from api.http.reply import JsonReply
from api.schemas.attachments import recorded
from api.schemas.customers import CustomerReplyIn, RatingIn
from domain.ids import MessageId, TicketId
from domain.ticket import Ticket
from domain.values import Rating
from eventstore.store import UnitOfWork
from handlers.portal import ticket_document

if TYPE_CHECKING:
    from api.root import Services

Reply = Callable[[UnitOfWork, UUID, TicketId, MessageId, str, datetime, Sequence[UUID]],
                 Awaitable[tuple[Ticket, dict[str, Any]]]]
"""A handler's public reply by the holder of a ticket: ``(uow, holder, ticket, message id,
body, at, files) -> (the ticket it landed on, the message)``."""
Rate = Callable[[UnitOfWork, UUID, TicketId, Rating, str | None, datetime],
                Awaitable[dict[str, Any]]]
"""A handler's rating by the holder of a ticket: ``(uow, holder, ticket, rating, comment,
at) -> the ticket as the customer sees it``."""


async def public_reply(request: Request, services: Services, principal: Principal,
                       holder: UUID, ticket_id: UUID, body: CustomerReplyIn,
                       reply: Reply) -> Response:
    """The holder's public reply on ``ticket_id``, answered 201 with the message and the
    ticket it landed on (a follow-up, for a closed one)."""
    message_id, at = MessageId(uuid.uuid4()), services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        ticket, message = await reply(uow, holder, TicketId(ticket_id), message_id,
                                      body.body, at, body.attachments)
        return JsonReply(201, {"message": message, "ticket": ticket_document(ticket)})

    return await commands.run(request, services, principal, recorded(body), work)


async def rating(request: Request, services: Services, principal: Principal, holder: UUID,
                 ticket_id: UUID, body: RatingIn, rate: Rate) -> Response:
    """The holder's rating of ``ticket_id``, answered with the ticket and its rating."""
    at = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await rate(uow, holder, TicketId(ticket_id), body.rating,
                                         body.comment, at))

    return await commands.run(request, services, principal, body.model_dump(mode="json"),
                              work)


__all__ = ["Rate", "Reply", "public_reply", "rating"]
