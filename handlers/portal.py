"""The customer portal: a contact sets a password through a link, signs in, and acts
as a customer on their own tickets.

Staff produce a **password link** for a contact (``issue_link``): a single-use token
that expires, shown once (only its sha256 is stored), and mailed to the contact when
the tenant has a mailbox that sends (``handlers.mail_notify``). Spending it
(``set_password``) gives the contact a password; a spent or expired link is ``Gone``
(410), an unknown one ``Missing``.

**Signing in** is handlers/sessions.py's ``sign_in`` for the ``PORTAL`` kind: every
failure is the same ``sign_in_failed`` and the argon2id hash is computed on every path
(a decoy when there is no password), so neither the answer nor its timing tells
whether the e-mail has a login. It opens a contact session whose id the access token
carries; a token acts only while its session is open (``session_open``).

A portal session keeps its contact signed in as a staff session does: an opaque
refresh token, stored as its hash, rotated on every use, a replay revoking the whole
session, sliding up to the session's absolute cap. The rules are handlers/sessions.py's
own, for the ``PORTAL`` kind of session. Merging a contact away revokes its sessions
(``revoke_merged``).

The link issued, the password set, signing in and out and a revocation are events on
the tenant stream with their actor (staff for the link, the contact for the rest), as
the staff ones are; no token, hash or e-mail is in them.

Whatever a signed-in contact does runs under ``customer_actor``: the database stamps
it as the customer, and the same armed actor scopes row-level security to that
contact (migration 0460, ``acting_contact()``): their tickets and those tickets'
public messages only, whatever SQL runs.

A contact **copied** on a ticket (one of its CCs) lists it and reads it and its public
messages as its requester does (migration 0900, ``ticket_contacts``), and gets its
events in the portal's live feed; only the requester replies and rates
(``copied_only``, 403): a customer's reply on a closed ticket opens a follow-up that is
the requester's alone, which the CC could neither write nor read. A ticket's thread
lists the public messages of the tickets merged into it, for each of its readers.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.events import (
    PortalLinkIssued,
    PortalPasswordSet,
    PortalSessionRevoked,
    PortalSignedIn,
    PortalSignedOut,
)
from domain.fields import FieldCatalog, RequiredOn, customer_settable
from domain.ids import ContactId, MessageId, TicketId
from domain.ticket import Ticket
from domain.ticket.commands import OpenTicket, RateSatisfaction
from domain.values import Actor, ActorKind, Rating, Source, Visibility
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers.attaching import message_files
from handlers.credentials import Passwords, TokenRef, new_token, parse_token
from handlers.errors import Forbidden, Gone, Missing
from handlers.mail_notify import Notice, queue_notice, tenant_slug
from handlers.requesters import requester_of_contact
from handlers.sessions import SessionKind, end_session
from handlers.tenant_events import record
from handlers.tickets import PostMessage, post_message, run_command
from projections import people
from projections.fields import load_catalog

Q = load_queries(Path(__file__).with_name("portal.sql"))

LINK_PREFIX = "hdp_"
REFRESH_PREFIX = "hdq_"


def customer_actor(contact_id: UUID) -> StoreActor:
    """The actor of a contact's own actions: stamped on events, and the contact scope
    of row-level security."""
    return StoreActor("customer", str(contact_id))


PORTAL = SessionKind(REFRESH_PREFIX, Q, customer_actor, "contact_id",
                     PortalSignedIn, PortalSignedOut, PortalSessionRevoked)
"""Portal sessions, for handlers.sessions' sign-in, refresh and sign-out."""


async def issue_link(uow: UnitOfWork, contact_id: UUID, at: datetime, valid_for: timedelta
                     ) -> dict[str, Any]:
    """A password link for a contact of the tenant (``Missing`` if none such); the answer
    holds ``token``, which is never stored and cannot be shown again."""
    contact = await people.load_contact(uow.conn, uow.tenant_id, contact_id)
    if contact is None or contact.merged_into is not None:
        raise Missing("not_found", f"no contact {contact_id}")
    token, ref = new_token(LINK_PREFIX, uow.tenant_id)
    link_id = uuid.uuid4()
    row = await uow.conn.fetchrow(Q["insert_link"], uow.tenant_id, link_id, contact_id,
                                  ref.digest, at, at + valid_for)
    assert row is not None
    await record(uow, PortalLinkIssued(contact_id=ContactId(contact_id), link_id=link_id,
                                       expires_at=row["expires_at"], at=at))
    if contact.email:
        await queue_notice(uow, Notice("portal_link", contact.email, {
            "name": contact.name or contact.email, "email": contact.email,
            "tenant": await tenant_slug(uow.conn, uow.tenant_id), "token": token,
            "expires_at": row["expires_at"].isoformat()}, f"portal_link:{link_id}"), at)
    return {**dict(row), "token": token}


def _gone() -> Gone:
    return Gone("link_gone", "the password link has expired or was used already; "
                             "ask for a new one")


async def set_password(store: EventStore, passwords: Passwords, token: str, password: str,
                       at: datetime) -> dict[str, Any]:
    """Spend a password link: its contact gets ``password``. Returns the tenant, the
    contact and its e-mail.

    Takes the store, not a unit of work: the tenant is the token's, the link is checked
    in a read-only transaction, the password is hashed outside any (tens of
    milliseconds of CPU), and the change runs in a second one acting as the contact
    the first found."""
    # Checked before hashing: an unknown, spent or expired link costs no argon2 work.
    ref, found = await spendable_link(
        store, LINK_PREFIX, token, Q["find_link"], at,
        missing=Missing("not_found", "no such password link"), gone=_gone())
    tenant = ref.tenant_id
    hashed = await asyncio.to_thread(passwords.hash, password)
    async with store.unit_of_work(tenant, customer_actor(found["contact_id"])) as uow:
        # Locked and checked again: two people spending one link race here.
        row = await uow.conn.fetchrow(Q["get_link"], tenant, ref.digest)
        assert row is not None
        if row["spent_at"] is not None:
            raise _gone()
        await uow.conn.execute(Q["set_password"], tenant, row["contact_id"], hashed, at)
        await uow.conn.execute(Q["spend_link"], tenant, row["id"], at)
        await record(uow, PortalPasswordSet(contact_id=ContactId(row["contact_id"]),
                                            link_id=row["id"], at=at))
    return {"tenant_id": tenant, "contact_id": row["contact_id"], "email": row["email"]}


async def session_open(uow: UnitOfWork, session_id: UUID, contact_id: UUID,
                       now: datetime) -> bool:
    """Whether a portal session still lets its access tokens act (in a unit of work
    acting as ``customer_actor(contact_id)``)."""
    return bool(await uow.conn.fetchval(Q["session_open"], uow.tenant_id, session_id,
                                        contact_id, now))


async def sign_out(uow: UnitOfWork, session_id: UUID, contact_id: UUID, at: datetime) -> None:
    """End the session of a portal access token (its refresh tokens die with it), in a
    unit of work acting as ``customer_actor(contact_id)``."""
    await end_session(uow, PORTAL, contact_id, session_id, at)


async def revoke_merged(uow: UnitOfWork, contact_id: UUID, at: datetime) -> int:
    """Revoke every open portal session of a contact merged into another (in the
    merge's unit of work), recording each; how many there were."""
    revoked = await uow.conn.fetch(Q["revoke_contact_sessions"], uow.tenant_id, contact_id,
                                   at, "merged")
    for r in revoked:
        await record(uow, PORTAL.revoked(contact_id, r["id"], "merged", at))
    return len(revoked)


async def spendable_link(store: EventStore, prefix: str, token: str | None, query: str,
                         at: datetime, *, missing: Exception, gone: Exception
                         ) -> tuple[TokenRef, asyncpg.Record]:
    """A single-use link's row (a portal password link, a rating link), found by
    ``query`` (tenant, digest) in a read-only transaction of the token's tenant:
    ``missing`` for a forged or unknown token, ``gone`` for a spent or expired one. The
    caller locks it and checks it again where it spends it."""
    ref = parse_token(prefix, token)
    if ref is None:
        raise missing
    async with store.unit_of_work(ref.tenant_id, readonly=True) as uow:
        found = await uow.conn.fetchrow(query, ref.tenant_id, ref.digest)
    if found is None:
        raise missing
    if found["spent_at"] is not None or found["expires_at"] <= at:
        raise gone
    return ref, found


def _author(contact_id: UUID | None) -> Actor:
    """The domain actor of a contact's own action: the customer, named by contact id."""
    return Actor(kind=ActorKind.CUSTOMER, id=str(contact_id))


def ticket_document(t: Ticket | Any, catalog: FieldCatalog | None = None
                    ) -> dict[str, Any]:
    """What a customer sees of a ticket (a ``Ticket`` or a row of ``own_tickets``): no
    assignee, group or tags, which are the staff's. Given the tenant's ``catalog``, the
    values of the fields open to customers too (``customer_values``)."""
    get = (lambda k: getattr(t, k)) if isinstance(t, Ticket) else t.__getitem__
    doc = {"id": get("id"), "subject": get("subject"), "state": str(get("state")),
           "created_at": get("created_at"), "updated_at": get("updated_at")}
    if catalog is not None:
        doc["fields"] = customer_values(get("fields"), catalog)
    return doc


def customer_values(values: Mapping[str, Any], catalog: FieldCatalog) -> dict[str, Any]:
    """The values of the fields a customer may see: those the tenant opened to intake
    (a field's ``intake`` flag); a customer may set those not ``customer_read_only``.
    Staff-only values stay with the staff."""
    return {k: v for k, v in values.items() if (d := catalog.get(k)) is not None and d.intake}


async def customer_fields(uow: UnitOfWork) -> list[dict[str, Any]]:
    """The fields open to customers: active, open to intake, in key order, with their
    active options, whether opening needs a value from the customer, and whether they
    only read it (``read_only``: shown on their tickets, never in their forms)."""
    catalog = await load_catalog(uow.conn, uow.tenant_id)
    return [{"key": d.key, "title": d.title, "type": d.type.value,
             "options": [{"value": o.value, "title": o.title} for o in d.options if o.active],
             "required": d.required_on is RequiredOn.OPEN and customer_settable(d),
             "read_only": not customer_settable(d)}
            for d in catalog.values() if d.active and d.intake]


def _no_ticket(ticket_id: UUID) -> Missing:
    return Missing("not_found", f"no ticket {ticket_id}")


async def open_ticket(uow: UnitOfWork, contact_id: UUID, ticket_id: TicketId, subject: str,
                      body: str, at: datetime, files: Sequence[UUID] = (),
                      fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Open a ticket whose requester is the signed-in contact, its opening message
    carrying the uploads ``files``, with ``fields`` values: the domain checks them as
    it checks staff-set ones, acting as the customer (fields open to intake only,
    required ones enforced). Returns the ticket as the customer sees it."""
    requester = await requester_of_contact(uow, contact_id)
    result = await run_command(uow, ticket_id, OpenTicket(
        ticket_id=ticket_id, subject=subject, body=body, requester=requester,
        source=Source.PORTAL, actor=_author(contact_id), at=at, fields=dict(fields or {})),
        files=files)
    return ticket_document(result.ticket, await load_catalog(uow.conn, uow.tenant_id))


async def reply(uow: UnitOfWork, contact_id: UUID, ticket_id: TicketId, message_id: MessageId,
                body: str, at: datetime, files: Sequence[UUID] = ()
                ) -> tuple[Ticket, dict[str, Any]]:
    """A public reply by the contact on their own ticket (another's is ``Missing``, as
    row-level security does not let the transaction see it; one it is only copied on is
    ``copied_only``). A reply on a closed ticket opens a follow-up, which is returned
    instead. Returns (ticket, message)."""
    await _requested_ticket(uow, contact_id, ticket_id)
    ticket, message, _ = await customer_reply(uow, contact_id, ticket_id, message_id, body,
                                              at, files)
    return ticket, message


async def customer_reply(uow: UnitOfWork, contact_id: UUID | None, ticket_id: TicketId,
                         message_id: MessageId, body: str, at: datetime,
                         files: Sequence[UUID]) -> tuple[Ticket, dict[str, Any], bool]:
    """A customer's public reply, once the caller has found the ticket theirs (the
    portal by its contact, the widget by its session): the ticket it landed on (a
    follow-up, for a closed one), the message as the customer sees it, and whether it
    opened a follow-up."""
    result = await post_message(uow, PostMessage(
        ticket_id=ticket_id, message_id=message_id, body=body, visibility=Visibility.PUBLIC,
        at=at, author=_author(contact_id), attachments=tuple(files)))
    ticket = result.follow_up or result.ticket
    message = {"id": message_id, "ticket_id": ticket.id, "author_kind": "customer",
               "body": body, "created_at": at,
               "attachments": message_files(result.events, message_id)}
    return ticket, message, result.follow_up is not None


async def rate(uow: UnitOfWork, contact_id: UUID, ticket_id: TicketId, rating: Rating,
               comment: str | None, at: datetime) -> dict[str, Any]:
    """The contact rates their own solved ticket (another's is ``Missing``, one they are
    only copied on ``copied_only``, as for a reply); a later rating replaces this one
    until the ticket closes. Returns the ticket as the customer sees it, with its
    rating."""
    await _requested_ticket(uow, contact_id, ticket_id)
    result = await run_command(uow, ticket_id, RateSatisfaction(
        rating=rating, comment=comment, via="portal", actor=_author(contact_id), at=at))
    return rated_document(result.ticket)


def rated_document(t: Ticket) -> dict[str, Any]:
    """A ticket as the customer sees it, with its satisfaction rating when it has one."""
    doc = ticket_document(t)
    if t.satisfaction is not None:
        doc["satisfaction"] = t.satisfaction.model_dump()
    return doc


async def own_tickets(uow: UnitOfWork, contact_id: UUID, after: tuple[datetime, UUID] | None,
                      limit: int) -> list[Any]:
    """The contact's tickets, newest first, after a keyset position."""
    at, after_id = after if after is not None else (None, None)
    return list(await uow.conn.fetch(Q["own_tickets"], uow.tenant_id, contact_id, at,
                                     after_id, limit))


async def _read_ticket(uow: UnitOfWork, contact_id: UUID, ticket_id: UUID) -> Any:
    """The row of a ticket the contact reads (``own_ticket``): theirs, or one they are
    copied on; ``Missing`` for any other, like a ticket that does not exist."""
    row = await uow.conn.fetchrow(Q["own_ticket"], uow.tenant_id, contact_id, ticket_id)
    if row is None:
        raise _no_ticket(ticket_id)
    return row


async def _requested_ticket(uow: UnitOfWork, contact_id: UUID, ticket_id: UUID) -> Any:
    """The row of a ticket the contact is the requester of, for what only the requester
    does (reply, rate): ``copied_only`` for one they are only copied on."""
    row = await _read_ticket(uow, contact_id, ticket_id)
    if not row["own"]:
        raise Forbidden("copied_only", "you are copied on this ticket: only its requester "
                                       "replies to it and rates it")
    return row


async def own_ticket(uow: UnitOfWork, contact_id: UUID, ticket_id: UUID) -> dict[str, Any]:
    """The contact's ticket (theirs, or one they are copied on) as the customer sees it,
    with the customers it copies (their e-mails and names) when it copies any, its
    satisfaction rating when rated, and ``copied`` when the contact is only copied on it
    (what they may not do, the page does not offer)."""
    row = await _read_ticket(uow, contact_id, ticket_id)
    shown = ticket_document(row, await load_catalog(uow.conn, uow.tenant_id))
    if row["ccs"]:
        shown["ccs"] = [{"email": c["email"], "name": c.get("name")} for c in row["ccs"]]
    if row["satisfaction"]:
        shown["satisfaction"] = row["satisfaction"]
    if not row["own"]:
        shown["copied"] = True
    return shown


async def public_messages(uow: UnitOfWork, contact_id: UUID, ticket_id: UUID,
                          after: tuple[datetime, UUID] | None, limit: int) -> list[Any]:
    """A ticket's public messages, with those of the tickets merged into it, oldest
    first; ``Missing`` for a ticket the contact does not read."""
    row = await _read_ticket(uow, contact_id, ticket_id)
    return await thread_messages(uow, [row["id"], *row["merged_from"]], after, limit)


async def thread_messages(uow: UnitOfWork, thread: list[UUID],
                          after: tuple[datetime, UUID] | None, limit: int) -> list[Any]:
    """The public messages of a thread (a ticket, then those merged into it), oldest
    first, after a keyset position: the portal's and the widget's read."""
    at, after_id = after if after is not None else (None, None)
    if len(thread) == 1:  # its own index order: no merge to interleave
        return list(await uow.conn.fetch(Q["public_messages"], uow.tenant_id, thread[0],
                                         at, after_id, limit))
    return list(await uow.conn.fetch(Q["public_thread_messages"], uow.tenant_id, thread,
                                     at, after_id, limit))


__all__ = [
    "LINK_PREFIX",
    "PORTAL",
    "REFRESH_PREFIX",
    "customer_actor",
    "customer_fields",
    "customer_values",
    "issue_link",
    "open_ticket",
    "own_ticket",
    "own_tickets",
    "public_messages",
    "reply",
    "revoke_merged",
    "session_open",
    "set_password",
    "sign_out",
    "thread_messages",
    "ticket_document",
]
