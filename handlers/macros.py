"""Macros and canned replies: creating them, and applying one to a ticket.

Creating checks what the aggregate cannot see: the text's ``{{fields.<key>}}`` and
the actions' groups, agents and field values exist in the tenant (as a rule's do:
``handlers.rules``). Applying runs, in the caller's one unit of work, each action as
the ticket command it is (``handlers.rule_engine.action_command``) and then posts the
text, rendered for the ticket and the agent, as one message: one event per change and
one message, all or nothing. The first command carries the caller's ``If-Match``,
so a stale version refuses the whole macro before anything is decided.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from domain.ids import MessageId, TicketId
from domain.macro import (
    ChangeMacro,
    CreateMacro,
    Macro,
    decide_change_macro,
    decide_delete_macro,
    decide_macro,
    evolve_macro,
)
from domain.templates import render
from domain.ticket import Ticket
from domain.values import Actor
from eventstore.store import UnitOfWork
from handlers.agents import get_agent
from handlers.errors import Missing
from handlers.owned import Caller, OwnedRecords
from handlers.rule_engine import action_command, note_values
from handlers.rules import check_actions_in_tenant, check_template_fields
from handlers.ticket_state import load_ticket
from handlers.tickets import PostMessage, post_message, run_command
from projections import macros as read_model
from projections.fields import load_catalog


@dataclass(frozen=True, slots=True)
class Applied:
    """A ticket after a macro, the text it posted (None: none) and how many events."""

    ticket: Ticket
    body: str | None
    message_id: UUID | None
    events: int


_MACROS = OwnedRecords(read_model.MACROS, evolve_macro, decide_delete_macro)

delete_macro = _MACROS.delete
"""Delete a macro: its row goes, its stream ends with ``MacroDeleted``."""
visible_macro = _MACROS.visible


async def create_macro(uow: UnitOfWork, command: CreateMacro) -> Macro:
    async def write(uow: UnitOfWork, macro: Macro) -> None:
        await _check_in_tenant(uow, macro)
        await read_model.insert_macro(uow.write, uow.tenant_id, macro)

    return await _MACROS.create(uow, decide=lambda: decide_macro(command, None), write=write)


async def _check_in_tenant(uow: UnitOfWork, macro: Macro) -> None:
    catalog = await load_catalog(uow.conn, uow.tenant_id)
    if macro.text is not None:
        check_template_fields(macro.text, "text", catalog)
    await check_actions_in_tenant(uow, macro.actions, catalog, None)


async def change_macro(uow: UnitOfWork, macro_id: UUID, command: ChangeMacro, caller: Caller,
                       *, expected_version: int | None = None) -> Macro:
    """Change a macro's name, text, visibility or actions (``handlers.owned``)."""

    async def write(uow: UnitOfWork, before: Macro, after: Macro) -> None:
        await _check_in_tenant(uow, after)
        await read_model.update_macro(uow.write, uow.tenant_id, after)

    return await _MACROS.change(uow, macro_id, caller, expected_version, write=write,
                                decide=lambda state: decide_change_macro(command, state))


async def apply_macro(uow: UnitOfWork, ticket_id: TicketId, macro_id: UUID, actor: Actor,
                      reader: UUID | None, at: datetime, message_id: MessageId, *,
                      expected_version: int | None = None) -> Applied:
    """Apply a macro the reader may see to a ticket, as ``actor``."""
    macro = await visible_macro(uow, macro_id, reader)
    ticket = await load_ticket(uow.conn, uow.tenant_id, ticket_id)
    if ticket is None:
        raise Missing("not_found", f"no ticket {ticket_id}")
    expected = expected_version
    count = 0
    for action in macro.actions:
        command = action_command(action, ticket, actor, at, uuid.uuid4())
        assert command is not None  # a macro's actions are all ticket commands
        result = await run_command(uow, ticket_id, command, expected_version=expected)
        expected, ticket, count = None, result.ticket, count + len(result.events)
    body = None
    if macro.text is not None:
        agent = None if reader is None else await get_agent(uow, reader)
        body = render(macro.text, note_values(ticket, None if agent is None else agent["name"]))
        result = await post_message(uow, PostMessage(
            ticket_id=ticket_id, message_id=message_id, body=body,
            visibility=macro.visibility, at=at, author=actor), expected_version=expected)
        ticket, count = result.ticket, count + len(result.events)
    return Applied(ticket, body, message_id if body is not None else None, count)


__all__ = ["Applied", "apply_macro", "change_macro", "create_macro", "delete_macro",
           "visible_macro"]
