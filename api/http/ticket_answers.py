"""What a ticket command answers over HTTP: the ticket as its document, with its
``ETag`` (and its ``Location`` when the command opened it), or a problem. The ticket
routes (api/routes/tickets.py) and the teamwork routes (api/routes/ticket_teamwork.py)
answer alike."""

from __future__ import annotations

import orjson

from api.http.answer_headers import ETAG, sends
from api.http.problem_docs import COMMAND_ERRORS
from api.http.reply import JsonReply
from api.schemas.tickets import etag, ticket_view
from handlers.tickets import CommandResult

COMMAND_ANSWERS = COMMAND_ERRORS | sends(200, required=(ETAG,))
"""A ticket command's answers: the ticket with its ETag, or a problem."""


def command_view(result: CommandResult) -> orjson.Fragment:
    """The ticket a command wrote, as its JSON body (the document the command rendered,
    when it did)."""
    return ticket_view(result.ticket, result.documents.get(result.ticket.id))


def ticket_reply(result: CommandResult, status: int = 200) -> JsonReply:
    """Answer a command with the ticket and its ETag (and Location when created)."""
    t = result.ticket
    headers = {"ETag": etag(t.version)}
    if status == 201:
        headers["Location"] = f"/v1/tickets/{t.id}"
    return JsonReply(status, command_view(result), headers)


__all__ = ["COMMAND_ANSWERS", "command_view", "ticket_reply"]
