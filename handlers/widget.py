"""The embeddable widget: an anonymous visitor on one of the tenant's web pages opens
tickets and follows them.

A tenant lists the origins its widget may be called from (``widget_origins`` in the
tenant settings, ``projections.tenant_settings``). A visitor there opens a **widget
session** (``open_session``): short-lived, anonymous, bound to the e-mail they typed
and to the origin they came from. Nobody checks that the e-mail is theirs, so the
session is not the contact: it reaches the tickets it opened itself and their
follow-ups, never the contact's other tickets (which the portal, after a password,
shows).

Whatever a widget session does runs under ``widget_actor``: the database stamps its
events ``widget:<session id>``, and the same armed actor scopes row-level security
to the session (migration 0470, ``acting_widget_session()``): its tickets and their
public messages only, whatever SQL runs. In the events' payloads, messages are the
customer's, ``customer:<contact id>`` as in the portal: the contact the e-mail
resolved to when the ticket was opened.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.ids import MessageId, TenantId, TicketId
from domain.ticket import Ticket
from domain.ticket.commands import OpenTicket, RateSatisfaction
from domain.validation import check_email
from domain.values import Actor, ActorKind, Rating, Requester, Source
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers.errors import Missing
from handlers.portal import customer_reply, rated_document, thread_messages, ticket_document
from handlers.requesters import resolve_requester
from handlers.tickets import run_command, stage_contact_events
from projections.fields import load_catalog
from projections.tenant_settings import load_document

Q = load_queries(Path(__file__).with_name("widget.sql"))

WIDGET = "widget"
"""The actor kind of a widget session (its id is the session's), and its role."""


def widget_actor(session_id: UUID) -> StoreActor:
    """The actor of what a widget session does: stamped on events, and the session
    scope of row-level security."""
    return StoreActor(WIDGET, str(session_id))


@dataclass(frozen=True, slots=True)
class WidgetSession:
    tenant_id: TenantId
    session_id: UUID
    email: str
    origin: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class CallCheck:
    """What a widget call's origin and session come to: whether the tenant lists the
    origin, and the origin of the session if it is open (None: no such session, or
    expired, or revoked)."""

    origin_listed: bool
    session_origin: str | None = None


async def check_call(uow: UnitOfWork, origin: str, session_id: UUID | None,
                     now: datetime) -> CallCheck:
    """One read: is ``origin`` one of the tenant's widget origins, and is the session
    (if one is named) open? An unknown tenant lists no origin. ``uow`` is read-only,
    acting as ``widget_actor(session_id)`` when a session is named."""
    doc, _ = await load_document(uow.conn, uow.tenant_id)
    if origin not in doc.settings().widget_origins:
        return CallCheck(False)
    if session_id is None:
        return CallCheck(True)
    found = await uow.conn.fetchval(Q["open_session"], uow.tenant_id, session_id, now)
    return CallCheck(True, found)


async def open_session(store: EventStore, tenant: TenantId, email: str, origin: str,
                       at: datetime, ttl: timedelta) -> WidgetSession:
    """A new widget session for ``email`` (422 naming ``email`` when it is not an
    address), from ``origin``, which the caller has checked.

    Takes the store, not a unit of work: the unit of work acts as the session it
    creates (``widget_actor``), whose id is minted here."""
    email = check_email(email.strip(), "email")
    session_id = uuid.uuid4()
    async with store.unit_of_work(tenant, widget_actor(session_id)) as uow:
        await uow.conn.execute(Q["insert_session"], tenant, session_id, email, origin, at,
                               at + ttl)
    return WidgetSession(tenant, session_id, email, origin, at + ttl)


def _customer(contact_id: UUID | None) -> Actor:
    return Actor(kind=ActorKind.CUSTOMER, id=str(contact_id))


def _no_ticket(ticket_id: UUID) -> Missing:
    return Missing("not_found", f"no ticket {ticket_id}")


async def open_ticket(uow: UnitOfWork, session_id: UUID, ticket_id: TicketId, subject: str,
                      body: str, at: datetime, files: Sequence[UUID] = (),
                      fields: Mapping[str, Any] | None = None) -> Ticket:
    """Open a ticket whose requester is the session's e-mail, resolved to its contact
    (created if none holds it) in this transaction, and held by the session; ``fields``
    are checked as the portal's (open to customers only, required ones enforced)."""
    email = await uow.conn.fetchval(Q["session_email"], uow.tenant_id, session_id)
    requester, created = await resolve_requester(uow.conn, uow.tenant_id,
                                                 Requester(email=email), at)
    await stage_contact_events(uow, created)
    await uow.conn.execute(Q["hold_ticket"], uow.tenant_id, session_id, ticket_id, at)
    result = await run_command(uow, ticket_id, OpenTicket(
        ticket_id=ticket_id, subject=subject, body=body, requester=requester,
        source=Source.CHAT, actor=_customer(requester.contact_id), at=at,
        fields=dict(fields or {})), files=files)
    return result.ticket


async def held_ticket(uow: UnitOfWork, session_id: UUID, ticket_id: UUID) -> Any:
    """The row of a ticket the session opened (or a follow-up of one); ``Missing``
    for any other, like a ticket that does not exist."""
    row = await uow.conn.fetchrow(Q["held_ticket"], uow.tenant_id, session_id, ticket_id)
    if row is None:
        raise _no_ticket(ticket_id)
    return row


async def get_ticket(uow: UnitOfWork, session_id: UUID, ticket_id: UUID) -> dict[str, Any]:
    """A held ticket as the visitor sees it: the values of the fields open to customers,
    and its satisfaction rating when rated."""
    row = await held_ticket(uow, session_id, ticket_id)
    shown = ticket_document(row, await load_catalog(uow.conn, uow.tenant_id))
    if row["satisfaction"]:
        shown["satisfaction"] = row["satisfaction"]
    return shown


async def public_messages(uow: UnitOfWork, session_id: UUID, ticket_id: UUID,
                          after: tuple[datetime, UUID] | None, limit: int) -> list[Any]:
    """A held ticket's public messages, with those of the tickets merged into it, oldest
    first (the portal's read)."""
    row = await held_ticket(uow, session_id, ticket_id)
    return await thread_messages(uow, [row["id"], *row["merged_from"]], after, limit)


async def reply(uow: UnitOfWork, session_id: UUID, ticket_id: TicketId, message_id: MessageId,
                body: str, at: datetime, files: Sequence[UUID] = ()
                ) -> tuple[Ticket, dict[str, Any]]:
    """A public reply on a held ticket, as its requester's contact. A reply on a
    closed ticket opens a follow-up, which the session then holds too and which is
    returned instead. Returns (ticket, message)."""
    row = await held_ticket(uow, session_id, ticket_id)
    ticket, message, followed_up = await customer_reply(
        uow, row["contact_id"], ticket_id, message_id, body, at, files)
    if followed_up:
        await uow.conn.execute(Q["hold_ticket"], uow.tenant_id, session_id, ticket.id, at)
    return ticket, message


async def rate(uow: UnitOfWork, session_id: UUID, ticket_id: TicketId, rating: Rating,
               comment: str | None, at: datetime) -> dict[str, Any]:
    """The visitor rates a solved ticket the session holds, as its requester's contact
    (a ticket it does not hold is ``Missing``); a later rating replaces this one until
    the ticket closes. Returns the ticket as the customer sees it, with its rating."""
    row = await held_ticket(uow, session_id, ticket_id)
    result = await run_command(uow, ticket_id, RateSatisfaction(
        rating=rating, comment=comment, via="widget", actor=_customer(row["contact_id"]),
        at=at))
    return rated_document(result.ticket)


async def forget_contact(uow: UnitOfWork, email: str, tickets: list[UUID], at: datetime
                         ) -> int:
    """Erasing a contact: its widget sessions (typed with its e-mail, or holding its
    tickets) keep no e-mail and end. Returns how many."""
    done = await uow.conn.execute(Q["forget_contact"], uow.tenant_id, email, tickets, at)
    return int(done.split()[-1])


__all__ = [
    "WIDGET",
    "CallCheck",
    "WidgetSession",
    "check_call",
    "forget_contact",
    "get_ticket",
    "open_session",
    "open_ticket",
    "public_messages",
    "reply",
    "widget_actor",
]
