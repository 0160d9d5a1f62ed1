"""Satisfaction ratings: a solved ticket's requester rates it good or bad.

The rating is a ``SatisfactionRated`` event on the ticket stream, decided by the
ticket aggregate (``domain.ticket.decide``): only a solved ticket takes one, a later
rating replaces it, and a closed ticket refuses every command (409 ``ticket_closed``)
and keeps its last.

A requester rates through the portal (``handlers.portal.rate``), a widget session,
or a **rating link** that staff produce for the ticket (``issue_link``): a
single-use token that expires, made and checked as portal password links are
(``handlers.credentials.new_token``, only its sha256 stored). Spending it
(``rate_by_link``) runs as the requester's contact, so row-level security scopes the
transaction to their own tickets as for any customer action; a spent or expired link
is ``Gone`` (410), a forged one ``Missing`` (404), and neither writes anything.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.errors import NotSolved
from domain.ids import TicketId
from domain.ticket.commands import RateSatisfaction
from domain.values import Actor, ActorKind, Rating, TicketState
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from handlers.credentials import new_token
from handlers.errors import Conflict, Gone, Missing
from handlers.portal import customer_actor, rated_document, spendable_link
from handlers.tickets import run_command

Q = load_queries(Path(__file__).with_name("satisfaction.sql"))

LINK_PREFIX = "hds_"


async def issue_link(uow: UnitOfWork, ticket_id: UUID, at: datetime, valid_for: timedelta
                     ) -> dict[str, Any]:
    """A rating link for a solved ticket's requester; the answer holds ``token``, which
    is never stored and cannot be shown again. ``Missing`` without such a ticket, 409
    when it is not solved or its requester is not a contact."""
    ticket = await uow.conn.fetchrow(Q["ticket_to_rate"], uow.tenant_id, ticket_id)
    if ticket is None:
        raise Missing("not_found", f"no ticket {ticket_id}")
    if ticket["state"] != TicketState.SOLVED.value:
        raise NotSolved()
    contact_id = ticket["contact_id"]
    if contact_id is None:
        raise Conflict("requester_not_a_contact",
                       "the ticket's requester is not a contact, who alone can rate it")
    token, ref = new_token(LINK_PREFIX, uow.tenant_id)
    row = await uow.conn.fetchrow(Q["insert_link"], uow.tenant_id, uuid.uuid4(), ticket_id,
                                  contact_id, ref.digest, at, at + valid_for)
    assert row is not None
    return {**dict(row), "token": token}


def _forged() -> Missing:
    return Missing("not_found", "no such rating link")


def _gone() -> Gone:
    return Gone("rating_link_gone", "the rating link has expired or was used already")


async def rate_by_link(store: EventStore, token: str, rating: Rating, comment: str | None,
                       at: datetime) -> dict[str, Any]:
    """Spend a rating link: its ticket takes the rating, as its requester's. The tenant
    is the token's; the link is locked, checked and spent in the rating's own
    transaction, so a refused rating leaves the link unspent and nothing written."""
    ref, found = await spendable_link(store, LINK_PREFIX, token, Q["find_link"], at,
                                      missing=_forged(), gone=_gone())
    tenant = ref.tenant_id
    contact_id = found["contact_id"]
    async with store.unit_of_work(tenant, customer_actor(contact_id)) as uow:
        row = await uow.conn.fetchrow(Q["get_link"], tenant, ref.digest)
        assert row is not None
        if row["spent_at"] is not None:
            raise _gone()
        result = await run_command(uow, TicketId(row["ticket_id"]), RateSatisfaction(
            rating=rating, comment=comment, via="link",
            actor=Actor(kind=ActorKind.CUSTOMER, id=str(contact_id)), at=at))
        await uow.conn.execute(Q["spend_link"], tenant, row["id"], at)
    return {"tenant_id": tenant, **rated_document(result.ticket)}
