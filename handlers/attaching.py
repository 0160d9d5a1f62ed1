"""Attaching uploads to a message, inside a ticket command's unit of work.

``claim`` locks the uploads (``FOR UPDATE``: two commands cannot both attach one),
refuses one that is unknown to the caller (404: another tenant's or customer's is not
seen through row-level security) or already attached (409), and gives the command the
files' identity for its event; ``attach`` (after the command decided) marks them
attached to the message and seals each blob to the ticket's requester: its key is
re-wrapped by the requester contact's data key, or, when that contact already holds the
same bytes, the upload shares that blob (deduplication, per tenant and data subject: a
blob is never shared between two contacts, so erasing one never depends on another). A
command that fails rolls all of it back: the uploads stay unattached. Openings of many
tickets in one unit of work (a mail run, an import's batch) claim and attach in one
round trip each (``claim_openings``, ``for_owners``, ``attach_many``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.attachment import AttachmentRef, check_attachments
from domain.errors import ValidationFailed
from eventstore.blobs import wrap_for_subject
from eventstore.store import UnitOfWork
from handlers.attachments import Q, limits_of
from handlers.errors import Conflict, Invalid, Missing


@dataclass(frozen=True, slots=True)
class Claimed:
    """Uploads a command is about to attach, locked until it commits."""

    refs: tuple[AttachmentRef, ...]
    blobs: tuple[tuple[UUID, UUID, bytes, UUID | None, bytes, str | None], ...]
    """(upload, blob, sha256, subject, wrapped key, kek) of each."""
    owner: UUID | None = None
    """The requester contact of the ticket named when claiming (None: none, or a new
    ticket)."""
    shared: Mapping[bytes, UUID] = field(default_factory=dict)
    """By sha256, a blob ``owner`` holds already with those bytes."""


async def claim(uow: UnitOfWork, ids: Sequence[UUID], ticket_id: UUID | None = None
                ) -> Claimed:
    """Lock the uploads ``ids`` for attaching to one message on ``ticket_id`` (None: a
    ticket being opened), see the module's docstring; refuses more than the tenant's
    ``attachments.per_message``, the same one twice, one the caller cannot see (404
    ``upload_not_found``) and one already attached (409 ``upload_attached``)."""
    _distinct(ids)
    fetched = await uow.conn.fetch(Q["uploads_claim"], uow.tenant_id, list(ids), ticket_id)
    rows = {r["id"]: r for r in fetched if r["id"] is not None}
    return _claimed(ids, rows, fetched[0])


async def claim_openings(uow: UnitOfWork, groups: Sequence[Sequence[UUID]]
                         ) -> list[Claimed]:
    """``claim`` of each of ``groups`` (the uploads of one message each, on tickets being
    opened in this unit of work: a mail run's openings, an import's batch), refused as
    there, in one round trip for all of them; one group refused refuses the lot."""
    every = [u for ids in groups for u in ids]
    _distinct(every)
    fetched = await uow.conn.fetch(Q["uploads_claim"], uow.tenant_id, every, None)
    rows = {r["id"]: r for r in fetched if r["id"] is not None}
    return [_claimed(ids, rows, fetched[0]) for ids in groups]


def _distinct(ids: Sequence[UUID]) -> None:
    if len(set(ids)) != len(ids):
        raise Invalid("duplicate_attachment", "the same upload is attached twice",
                      field="attachments")


def _claimed(ids: Sequence[UUID], rows: Mapping[UUID, Any], first: Any) -> Claimed:
    """The claim of ``ids`` from the rows ``uploads_claim`` locked (by id), ``first``
    its first row (the limits and owner)."""
    try:
        check_attachments(list(ids), limits_of(first["limits"]).per_message)
    except ValidationFailed as exc:
        raise Invalid("too_many_attachments", exc.message, field="attachments") from exc
    refs: list[AttachmentRef] = []
    blobs = []
    shared = {}
    for upload_id in ids:
        row = rows.get(upload_id)
        if row is None:
            raise Missing("upload_not_found", f"no upload {upload_id}")
        if row["ticket_id"] is not None:
            raise Conflict("upload_attached", f"upload {upload_id} is attached already")
        refs.append(AttachmentRef(id=row["id"], name=row["name"], size=row["size"],
                                  type=row["content_type"], sha256=bytes(row["sha256"]).hex()))
        blobs.append((row["id"], row["blob_id"], bytes(row["sha256"]), row["subject_id"],
                      bytes(row["wrapped_key"]), row["kek"]))
        if row["shared"]:
            shared[bytes(row["sha256"])] = row["shared"]
    return Claimed(tuple(refs), tuple(blobs), first["owner"], shared)


async def for_owners(uow: UnitOfWork, claims: Sequence[tuple[Claimed, UUID, bool]]
                     ) -> list[Claimed]:
    """Claims of new tickets' openings (``claim_openings``) with the requester contact
    each will seal its files to as their owner, and the blobs of the same bytes each
    contact holds already (``Claimed.shared``), so ``attach`` looks none up: one round
    trip for all, none when every contact is new (``True``: created by this unit of
    work, so it holds no blobs). The blobs are those held before any of the claims is
    attached: two of the claims sealed to one contact (two e-mails of one contact after
    a merge) do not share the bytes they both carry with each other, each keeps its own
    blob (still sealed to that contact alone)."""
    wanted = [(owner, b[2]) for c, owner, new in claims if not new for b in c.blobs]
    held: dict[tuple[UUID, bytes], UUID] = {}
    if wanted:
        held = {(r["subject_id"], bytes(r["sha256"])): r["id"] for r in await uow.conn.fetch(
            Q["subjects_blobs"], uow.tenant_id, [w[0] for w in wanted],
            [w[1] for w in wanted])}
    return [replace(c, owner=owner, shared={b[2]: held[owner, b[2]] for b in c.blobs
                                            if (owner, b[2]) in held})
            for c, owner, _ in claims]


@dataclass(frozen=True, slots=True)
class Placed:
    """Where a command put its files: the ticket (a follow-up, perhaps), the message,
    its visibility, and the ticket's requester contact (None: no contact)."""

    ticket_id: UUID
    message_id: UUID
    visibility: str
    subject: UUID | None


async def attach(uow: UnitOfWork, claimed: Claimed, placed: Placed, at: datetime) -> None:
    """Mark the claimed uploads attached where the command put them, and seal their
    blobs to the ticket's requester (module docstring). Written by ``uow.write``: after
    the command's own rows, in the COMMIT's message when it defers."""
    await attach_many(uow, [(claimed, placed, at)])


async def attach_many(uow: UnitOfWork, items: Sequence[tuple[Claimed, Placed, datetime]]
                      ) -> None:
    """``attach`` of each (claimed, placed, at) in turn, as commands of one unit of work
    would attach them one after the other. The blobs each subject holds already come
    from the claim when the subject is the owner it was claimed for (``Claimed.shared``),
    else are read once for all the items (one round trip), and are kept as the items
    seal more; the writes by ``uow.write``."""
    tenant, keyring = uow.tenant_id, uow.keyring
    held: dict[UUID, dict[bytes, UUID]] = {}
    wanted: dict[UUID, set[bytes]] = {}
    for claimed, placed, _ in items:
        subject = placed.subject
        unsealed = {b[2] for b in claimed.blobs if b[3] is None}
        if subject is None or keyring is None or not unsealed:
            continue
        if subject == claimed.owner:  # looked up when claiming
            mine = held.setdefault(subject, {})
            for sha, blob in claimed.shared.items():
                mine.setdefault(sha, blob)
        else:  # a new ticket's requester, or one changed since
            wanted.setdefault(subject, set()).update(unsealed)
    pairs = [(s, sha) for s, shas in wanted.items() for sha in sorted(shas)]
    if pairs:
        for r in await uow.conn.fetch(Q["subjects_blobs"], tenant, [s for s, _ in pairs],
                                      [sha for _, sha in pairs]):
            held.setdefault(r["subject_id"], {}).setdefault(bytes(r["sha256"]), r["id"])
    for claimed, placed, at in items:
        await uow.write(Q["uploads_attach"], tenant, [r.id for r in claimed.refs],
                        placed.ticket_id, placed.message_id, placed.visibility, at)
        subject = placed.subject
        unsealed_blobs = [b for b in claimed.blobs if b[3] is None]
        if subject is None or keyring is None or not unsealed_blobs:
            continue
        data_key = await uow.subject_key(subject)
        mine = held.setdefault(subject, {})
        for upload_id, blob_id, sha, _, wrapped, kek in unsealed_blobs:
            # Sealed to the contact either way, so an erasure of the contact reaches it.
            key = keyring.unwrap(tenant, blob_id, wrapped, kek)
            await uow.write(Q["blob_seal"], tenant, blob_id, subject,
                            wrap_for_subject(data_key, tenant, blob_id, subject, key))
            shared = mine.get(sha)
            if shared is not None:
                # The contact holds these bytes already: the upload shares that blob,
                # and its own, no longer held, is the purge job's.
                await uow.write(Q["upload_share_blob"], tenant, upload_id, shared)
            else:
                mine[sha] = blob_id


async def move(uow: UnitOfWork, message_ids: Sequence[UUID], ticket_id: UUID) -> None:
    """The files of ``message_ids`` belong to ``ticket_id`` now (a split moved the
    messages there); sealed to the same requester, so their blobs stay as they are."""
    await uow.write(Q["uploads_move"], uow.tenant_id, list(message_ids), ticket_id)


def placed_files(events: Sequence[Any], ticket_ids: Mapping[Any, UUID | None]
                 ) -> Placed | None:
    """Where a command's files went: the event of its that carries them (stored
    events, ``PendingEvent``), and ``ticket_ids`` mapping each ticket the command wrote
    to its requester contact."""
    for e in events:
        if e.data.get("attachments"):
            return Placed(ticket_id=e.stream_id, message_id=UUID(str(e.data["message_id"])),
                          visibility=str(e.data.get("visibility", "public")),
                          subject=ticket_ids.get(e.stream_id))
    return None


def message_files(events: Sequence[Any], message_id: UUID) -> list[dict[str, Any]]:
    """The files a command's event recorded on message ``message_id``, as answers show
    them (none: ``[]``)."""
    for e in events:
        if e.data.get("message_id") == str(message_id):
            return list(e.data.get("attachments", []))
    return []


__all__ = ["Claimed", "Placed", "attach", "attach_many", "claim", "claim_openings",
           "for_owners", "message_files", "move", "placed_files"]
