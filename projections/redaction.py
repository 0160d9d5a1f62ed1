"""Redaction of an erased contact's personal data from the inline read models.

The events keep their sealed fields (unreadable once the key is gone); the read
models held the same data in the clear for reads, so erasure overwrites it there:
the contact's tickets keep their state, with an empty subject, a requester that
names the contact id only and empty values of the personal fields its key sealed, and
their messages keep everything but their bodies (and their files' names, in the
messages and in the ticket's list of files). A ticket moved to or from the contact
(a merge) loses what the contact's key sealed. An
empty text is also what a replay of an erased field gives (domain/mapper.py), so a
rebuild agrees with a redacted row.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from domain.personal import LISTED, field_at, paths_in
from domain.ticket.events import (
    FieldValuesChanged,
    MessageAdded,
    RequesterChanged,
    TicketOpened,
    TicketSplitFrom,
)
from domain.values import Requester
from eventstore.sealing import is_sealed
from eventstore.sqlfile import load_queries
from eventstore.types import RecordedEvent
from projections.inline import state_from_json, state_to_json
from projections.ticket_versions import redact_versions
from projections.views import message_document, ticket_json

Q = load_queries(Path(__file__).with_name("people.sql"))


async def lock_tickets_copying(conn: asyncpg.Connection, tenant_id: TenantId,
                               contact_ids: Collection[UUID], but: Collection[UUID]
                               ) -> list[UUID]:
    """The ids of the tickets that copy one of these contacts (``ticket_contacts``), but
    for those in ``but`` (locked already), their rows locked until commit (in id order)."""
    rows = await conn.fetch(Q["lock_tickets_copying"], tenant_id, list(contact_ids),
                            list(but))
    return [r["id"] for r in rows]


async def forget_readers(conn: asyncpg.Connection, tenant_id: TenantId,
                         contact_ids: Collection[UUID]) -> None:
    """An erasure: these contacts read no ticket in the portal any more (their
    ``ticket_contacts`` rows go)."""
    await conn.execute(Q["forget_ticket_contacts"], tenant_id, list(contact_ids))


async def lock_tickets_naming(conn: asyncpg.Connection, tenant_id: TenantId,
                              contact_ids: Collection[UUID]) -> list[UUID]:
    """The ids of the tickets whose requester is or was one of these contacts, their
    rows locked until commit (in id order)."""
    rows = await conn.fetch(Q["lock_tickets_naming"], tenant_id, list(contact_ids))
    return [r["id"] for r in rows]


_OPENINGS = frozenset({TicketOpened.TYPE, TicketSplitFrom.TYPE})
"""The events a ticket stream starts with: each names the subject, requester and fields."""
_NAMING_REQUESTER = _OPENINGS | {RequesterChanged.TYPE}


def erased_parts(events: Sequence[RecordedEvent], erased: Collection[UUID],
                 contact_id: UUID | None) -> tuple[bool, bool, list[int], set[str]]:
    """What an erasure of ``erased`` takes from a ticket, from its stream as stored (in
    version order): its subject, its requester, the versions of the events that wrote
    its messages, and the keys of the ticket fields whose value now is one an erased
    contact's key sealed (a personal field). A field is whose its seal names; a field
    written in the clear, whose the requester was when it was written (the ticket's
    ``contact_id`` for events from before contacts). A ticket moved between contacts
    (a merge) so loses only what was written while an erased contact was its
    requester, as a replay does."""
    requester = contact_id
    subject = False
    versions: list[int] = []
    fields: dict[str, bool] = {}

    def owner(event: RecordedEvent, path: tuple[str, ...]) -> UUID | None:
        value = field_at(event.data, path)
        return UUID(value["subject"]) if is_sealed(value) else requester

    for e in events:
        if e.type in _NAMING_REQUESTER:
            named = (e.data.get("requester") or {}).get("contact_id")
            requester = UUID(named) if named else contact_id
        if e.type in _OPENINGS:
            subject = owner(e, ("subject",)) in erased
        if e.type in (TicketOpened.TYPE, MessageAdded.TYPE) and owner(e, ("body",)) in erased:
            versions.append(e.version)
        if e.type == TicketSplitFrom.TYPE and subject:
            versions.append(e.version)  # the moved messages' files, sealed with its subject
        values = (e.data.get("fields") if e.type in _OPENINGS else
                  e.data.get("values") if e.type == FieldValuesChanged.TYPE else None)
        for key, value in (values or {}).items():
            # Only sealed values were personal: one in the clear is not the subject's.
            fields[key] = is_sealed(value) and UUID(value["subject"]) in erased
    return subject, requester in erased, versions, {k for k, gone in fields.items() if gone}


def erased_ccs(events: Sequence[RecordedEvent], erased: Collection[UUID]) -> bool:
    """Whether a CC of the ticket was written sealed with an erased contact's key (the
    requester's then: CCs are sealed as its messages are, domain/personal.py)."""
    return any(is_sealed(field_at(e.data, path)) and UUID(field_at(e.data, path)["subject"])
               in erased for e in events for path in paths_in(e.type, e.data)
               if e.type in LISTED)


def erased_by_version(events: Sequence[RecordedEvent], erased: Collection[UUID],
                      contact_id: UUID | None) -> dict[int, tuple[bool, frozenset[str]]]:
    """What an erasure of ``erased`` takes from each version of a ticket (the state
    after each event of its stream): whether its requester then was an erased contact,
    and the keys of the fields whose value then was one an erased contact's key sealed.
    A kept version (``ticket_versions``) so loses what it held of the contact even when
    the ticket has since moved to another requester or its value was changed or
    cleared, as ``erased_parts`` finds it for the current version."""
    requester = contact_id
    fields: dict[str, bool] = {}
    out: dict[int, tuple[bool, frozenset[str]]] = {}
    for e in events:
        if e.type in _NAMING_REQUESTER:
            named = (e.data.get("requester") or {}).get("contact_id")
            requester = UUID(named) if named else contact_id
        values = (e.data.get("fields") if e.type in _OPENINGS else
                  e.data.get("values") if e.type == FieldValuesChanged.TYPE else None)
        for key, value in (values or {}).items():
            fields[key] = is_sealed(value) and UUID(value["subject"]) in erased
        out[e.version] = (requester in erased,
                          frozenset(k for k, gone in fields.items() if gone))
    return out


async def redact_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                         streams: Mapping[UUID, Sequence[RecordedEvent]],
                         erased: Collection[UUID]) -> list[UUID]:
    """Blank what ``erased_parts`` finds in these (locked) tickets' rows, documents and
    messages; the ids of the tickets redacted."""
    redacted: list[UUID] = []
    for row in await conn.fetch(Q["tickets_to_redact"], tenant_id, list(streams)):
        subject, requester, versions, fields = erased_parts(streams[row["id"]], erased,
                                                            row["contact_id"])
        # Its kept versions: one made while an erased contact was the requester, or
        # holding a personal value since changed, is redacted though the row is not.
        by_version = erased_by_version(streams[row["id"]], erased, row["contact_id"])
        ccs = erased_ccs(streams[row["id"]], erased)
        ticket = state_from_json(row["state_json"])
        # An erased contact copied on the ticket is copied no more.
        copied = any(c.contact_id in erased for c in ticket.ccs)
        if not (subject or requester or versions or fields or ccs or copied
                or any(r or f for r, f in by_version.values())):
            continue
        if copied:
            ticket = ticket.model_copy(update={
                "ccs": tuple(c for c in ticket.ccs if c.contact_id not in erased)})
        changes: dict[str, Any] = {"subject": ""} if subject else {}
        # A file's name is sealed with its message's body, and goes with it.
        nameless = {str(a["id"]) for e in streams[row["id"]] if e.version in versions
                    for a in e.data.get("attachments") or ()}
        if nameless:
            changes["files"] = tuple(f.model_copy(update={"name": ""})
                                     if str(f.id) in nameless else f for f in ticket.files)
        if requester:
            changes["requester"] = Requester(email="", name=None,
                                             contact_id=ticket.requester.contact_id)
        if fields:
            changes["fields"] = {k: "" if k in fields else v
                                 for k, v in ticket.fields.items()}
        if ccs:  # each CC keeps its contact (if any), as an erased requester does
            changes["ccs"] = tuple(c.model_copy(update={"email": "", "name": None})
                                   for c in ticket.ccs)
        ticket = ticket.model_copy(update=changes)
        stored = state_to_json(ticket)
        await conn.execute(Q["redact_ticket"], tenant_id, row["id"], ticket.subject,
                           ticket.requester.model_dump(mode="json"), stored,
                           ticket_json(ticket).decode(), stored["fields"])
        # By id: a message split off to another ticket is found where it went.
        await conn.execute(Q["redact_messages"], tenant_id, [
            e.data["message_id"] for e in streams[row["id"]]
            if e.version in versions and "message_id" in e.data])
        await redact_versions(conn, tenant_id, row["id"], subject=subject,
                              requester=requester, fields=fields, nameless=nameless,
                              by_version=by_version, erased=erased)
        redacted.append(row["id"])
    return redacted


async def contact_tickets(conn: asyncpg.Connection, tenant_id: TenantId, contact_id: UUID
                          ) -> tuple[list[UUID], list[bytes], list[dict[str, Any]]]:
    """The contact's ticket ids, their stored documents, and their messages (for an
    export of everything held about the contact)."""
    rows = await conn.fetch(Q["contact_ticket_views"], tenant_id, contact_id)
    ids = [r["id"] for r in rows]
    views = [(r["view"] or "null").encode() for r in rows]
    messages = [message_document(m) for m in
                await conn.fetch(Q["contact_messages"], tenant_id, ids)]
    return ids, views, messages


__all__ = ["contact_tickets", "erased_by_version", "erased_ccs", "erased_parts",
           "forget_readers", "lock_tickets_copying", "lock_tickets_naming",
           "redact_tickets"]
