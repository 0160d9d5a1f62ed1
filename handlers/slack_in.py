"""Slack events taken in: a message in the connected channel becomes a ticket or a
message on one, once per Slack ``event_id``.

``take_event`` is the one path of every ``event_callback`` the Events API route
verified. In one transaction, in order:

1. the event's row is claimed by its ``event_id`` (unique per tenant). Slack retries an
   event it got no quick answer for; a retry finds the row and does nothing again, and a
   retry arriving while the first is still being written waits on the row, then finds it;
2. noise (``domain.slack.read_message``: another channel, edits, bots, the desk's own
   bot) is recorded as ``ignored`` and goes no further;
3. a top-level message opens a ticket (``source: slack``) for the Slack user's contact,
   and records its thread (the message's ``ts``); a reply in a thread the desk opened is
   a public customer message on that ticket (a closed one gets a follow-up, which takes
   the thread over); a reply in any other thread is ignored;
4. the row is settled with what became of the event, committing with it.

A Slack user is a contact whose external id is ``slack:<user id>``: found by it, or
made with it (and an address no one has, ``domain.slack.contact_email``, since Slack
does not tell the desk a person's e-mail). Two events of one new user at once make one
contact: the second's insert waits on the first's external id, and finds it.

An event the desk refuses (an erased contact's, say) is recorded as ``ignored`` with the
reason rather than refused, so Slack does not send it again and again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.contact import ContactFields
from domain.errors import DomainError
from domain.ids import MessageId, TenantId, TicketId
from domain.slack import SlackMessage, contact_email, external_id, read_message, subject_of
from domain.ticket.commands import OpenTicket
from domain.values import Actor, ActorKind, Requester, Source, Visibility
from eventstore.keys import SubjectErased
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers.contacts import NewContact, create_contact
from handlers.errors import Conflict, HandlerError
from handlers.requesters import requester_of_contact
from handlers.ticket_state import merged_target
from handlers.tickets import PostMessage, post_message, run_command
from projections import people

Q = load_queries(Path(__file__).with_name("slack.sql"))

ACTOR = StoreActor("system", "slack")
NO_TEXT = "(a file shared in Slack)"


@dataclass(frozen=True, slots=True)
class EventTaken:
    """What became of one event: ``outcome`` is ``ticket``, ``reply``, ``follow_up``,
    ``ignored`` or ``duplicate``."""

    outcome: str
    reason: str | None = None
    ticket_id: UUID | None = None
    message_id: UUID | None = None


class _Settled(Exception):
    """The event came to nothing after its row was claimed: undo the work, keep why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def take_event(store: EventStore, tenant_id: TenantId, payload: dict[str, Any],
                     at: datetime) -> EventTaken:
    """Take in one verified ``event_callback`` (module docstring).

    Takes the store, not a unit of work: a refused event is settled as ``ignored`` in a
    transaction of its own, after the one that tried it rolled back."""
    event_id = payload.get("event_id")
    if not isinstance(event_id, str) or not event_id or len(event_id) > 200:
        return EventTaken("ignored", "an event without an event_id")
    try:
        async with store.unit_of_work(tenant_id, ACTOR) as uow:
            return await _take(uow, event_id, payload, at)
    except (_Settled, DomainError, HandlerError, SubjectErased) as exc:
        reason = exc.reason if isinstance(exc, _Settled) else (
            f"refused: {getattr(exc, 'message', None) or exc}")
        async with store.unit_of_work(tenant_id, ACTOR) as uow:
            if await uow.conn.fetchval(Q["event_claim"], tenant_id, event_id, at) is None:
                return await _seen(uow, event_id)
            await uow.conn.execute(Q["event_settle"], tenant_id, event_id, "ignored",
                                   reason[:500], None, None)
        return EventTaken("ignored", reason)


async def _seen(uow: UnitOfWork, event_id: str) -> EventTaken:
    row = await uow.conn.fetchrow(Q["event_seen"], uow.tenant_id, event_id)
    assert row is not None
    return EventTaken("duplicate", f"event {event_id} was taken in before ({row['outcome']})",
                      row["ticket_id"], row["message_id"])


async def _take(uow: UnitOfWork, event_id: str, payload: dict[str, Any], at: datetime
                ) -> EventTaken:
    conn, tenant = uow.conn, uow.tenant_id
    if await conn.fetchval(Q["event_claim"], tenant, event_id, at) is None:
        return await _seen(uow, event_id)
    integration = await conn.fetchrow(Q["integration_get"], tenant)
    if integration is None:
        raise _Settled("Slack is not connected")
    message = read_message(payload, integration["channel_id"], integration["bot_user_id"])
    if isinstance(message, str):
        taken = EventTaken("ignored", message)
    elif message.thread_ts is None:
        taken = await _open(uow, integration["channel_id"], message, at)
    else:
        taken = await _reply(uow, integration["channel_id"], message, at)
    await conn.execute(Q["event_settle"], tenant, event_id, taken.outcome, taken.reason,
                       taken.ticket_id, taken.message_id)
    return taken


async def slack_requester(uow: UnitOfWork, message: SlackMessage, at: datetime) -> Requester:
    """The requester of the Slack user who wrote ``message``: its contact, made when
    there is none (module docstring)."""
    conn, tenant = uow.conn, uow.tenant_id
    ext = external_id(message.user)
    found = await people.contact_by_external_id(conn, tenant, ext)
    if found is None:
        fields = ContactFields(email=contact_email(message.user), name=message.name,
                               external_id=ext)
        try:
            found = (await create_contact(uow, NewContact(fields=fields, at=at))).id
        except Conflict:
            # Made meanwhile by another event of the same user (or the address is held).
            found = await people.contact_by_external_id(conn, tenant, ext)
            if found is None:
                holder = await people.contact_by_email(conn, tenant, fields.email)
                if holder is None:
                    raise
                found = holder.id
    return await requester_of_contact(uow, found)


def _customer(requester: Requester) -> Actor:
    return Actor(kind=ActorKind.CUSTOMER, id=str(requester.contact_id))


async def _open(uow: UnitOfWork, channel: str, message: SlackMessage, at: datetime
                ) -> EventTaken:
    ticket_id = TicketId(uuid.uuid4())
    if await uow.conn.fetchval(Q["thread_insert"], uow.tenant_id, ticket_id, channel,
                               message.ts, at) is None:
        return EventTaken("ignored", f"message {message.ts} opened a ticket before")
    requester = await slack_requester(uow, message, at)
    command = OpenTicket(ticket_id=ticket_id, subject=subject_of(message.text),
                         body=message.text or NO_TEXT, requester=requester,
                         source=Source.SLACK, actor=_customer(requester), at=at)
    await run_command(uow, ticket_id, command)
    return EventTaken("ticket", None, ticket_id, command.opening_message_id())


async def _reply(uow: UnitOfWork, channel: str, message: SlackMessage, at: datetime
                 ) -> EventTaken:
    conn, tenant = uow.conn, uow.tenant_id
    assert message.thread_ts is not None
    found = await conn.fetchval(Q["thread_ticket"], tenant, channel, message.thread_ts)
    if found is None:
        return EventTaken("ignored", "a reply in a thread the desk did not open")
    ticket_id = await merged_target(conn, tenant, found)
    requester = await slack_requester(uow, message, at)
    message_id = MessageId(uuid.uuid4())
    result = await post_message(uow, PostMessage(
        ticket_id=TicketId(ticket_id), message_id=message_id, body=message.text or NO_TEXT,
        visibility=Visibility.PUBLIC, at=at, author=_customer(requester)))
    if result.follow_up is not None:
        await conn.execute(Q["thread_moved"], tenant, found, result.follow_up.id)
        return EventTaken("follow_up", None, result.follow_up.id, message_id)
    return EventTaken("reply", None, ticket_id, message_id)


__all__ = ["ACTOR", "EventTaken", "slack_requester", "take_event"]
