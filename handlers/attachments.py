"""Files on messages: receiving an upload, giving a file back, and what erasure, export
and audit do with them; attaching uploads to a message is handlers/attaching.py.

**Receiving** (``receive``) streams the body into a new blob (eventstore/blobs.py):
chunk by chunk, sealed, counted against the tenant's ``attachments.max_file_bytes`` as
it comes, its sha256 computed on the way and its type read from its first bytes. The
blob's row is written first ('receiving'), each chunk in a short transaction of its
own, and the upload's row with the blob marked 'stored' last, in one transaction
(``record_upload``, with the request's Idempotency-Key record): an upload cut off half
way leaves no upload, and its partial blob is deleted at once (or,
if the process dies meanwhile, by the ``uploads.purge`` job after a day).

**Attaching** happens inside a ticket command's unit of work (handlers/attaching.py).

**Giving back** (``open_file``) is authorized by row-level security as the ticket and
message are: a customer or widget session sees the files of public messages on its
own tickets, and its own unattached uploads; staff see the tenant's attached files and
their own unattached uploads.

Nothing here runs for a command without files.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.attachment import (
    SNIFF_BYTES,
    FileLimits,
    check_name,
    check_type,
    settle_type,
)
from domain.errors import ValidationFailed
from domain.ids import TenantId
from eventstore.blobs import (
    CHUNK_BYTES,
    WRITE_BATCH,
    Storage,
    StorageUnavailable,
    chunk_count,
    new_key,
    open_chunk,
    seal_chunk,
    unwrap_for_subject,
)
from eventstore.errors import TenantReadOnly
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor
from handlers.errors import Conflict, Gone, Invalid, Missing, TooLarge

Q = load_queries(Path(__file__).with_name("attachments.sql"))


@dataclass(frozen=True, slots=True)
class Storages:
    """Where new blobs go (``new``) and every storage a blob may be in, by kind."""

    new: Storage
    by_kind: Mapping[str, Storage]

    def of(self, kind: str) -> Storage:
        found = self.by_kind.get(kind)
        if found is None:
            raise StorageUnavailable(f"files are kept in {kind} storage, which this "
                                     "process is not configured for")
        return found


async def limits(conn: asyncpg.Connection, tenant_id: TenantId) -> FileLimits:
    """The tenant's file limits (the defaults where its settings say nothing)."""
    return limits_of(await conn.fetchval(Q["limits"], tenant_id))


def limits_of(doc: Any) -> FileLimits:
    """File limits from the settings document's ``attachments`` (None: the defaults)."""
    if not isinstance(doc, dict):
        return FileLimits()
    return FileLimits(**{k: int(v) for k, v in doc.items()
                         if k in ("max_file_bytes", "per_message")})


# --- receiving -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiveFile:
    """One upload: its name, the type the caller declared (None: none), by whom."""

    name: str
    declared_type: str | None
    uploader: StoreActor
    at: datetime


def upload_document(row: Mapping[str, Any]) -> dict[str, Any]:
    """An upload or attachment as the API shows it."""
    sha = row["sha256"]
    return {"id": row["id"], "name": row["name"], "size": row["size"],
            "type": row["content_type"],
            "sha256": sha if isinstance(sha, str) else bytes(sha).hex(),
            "created_at": row["created_at"]}


def _checked_name(name: str) -> str:
    try:
        return check_name(name)
    except ValidationFailed as exc:
        raise Invalid("invalid_file_name", exc.message, field="name") from exc


def _checked_type(declared: str | None, head: bytes) -> str:
    try:
        return settle_type(declared, head)
    except ValidationFailed as exc:
        raise Invalid("type_mismatch", exc.message, field="content_type") from exc


async def check_upload(store: EventStore, tenant_id: TenantId, command: ReceiveFile,
                       declared_size: int | None) -> FileLimits:
    """The name and type checked, and the tenant's limits, before any byte is read; a
    declared size over the limit is refused at once (413).

    Takes the store, not a unit of work: the limits are read in a read-only transaction
    that ends before the body is, so no transaction waits on the client's bytes."""
    _checked_name(command.name)
    try:
        check_type(command.declared_type)
    except ValidationFailed as exc:
        raise Invalid("invalid_content_type", exc.message, field="content_type") from exc
    if store.keyring is None:
        raise Conflict("files_unavailable", "files need sealing, which this store lacks")
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        found = await limits(uow.conn, tenant_id)
    if declared_size is not None and declared_size > found.max_file_bytes:
        raise _too_large(found)
    return found


def _too_large(found: FileLimits) -> TooLarge:
    return TooLarge("file_too_large",
                    f"a file is at most {found.max_file_bytes} bytes (the tenant's "
                    "attachments.max_file_bytes)", limit="attachments.max_file_bytes",
                    max_file_bytes=found.max_file_bytes)


@dataclass(frozen=True, slots=True)
class Received:
    """A file streamed into its blob, not yet an upload (``record_upload``)."""

    blob_id: UUID
    name: str
    content_type: str
    size: int
    sha256: bytes
    storage: Storage

    def payload(self) -> dict[str, Any]:
        """What an Idempotency-Key record compares a retry with: the file itself."""
        return {"name": self.name, "type": self.content_type, "size": self.size,
                "sha256": self.sha256.hex()}


async def receive(store: EventStore, storages: Storages, tenant_id: TenantId,
                  command: ReceiveFile, body: AsyncIterator[bytes],
                  found: FileLimits) -> Received:
    """Stream ``body`` into a new blob (module docstring); ``record_upload`` then makes
    it an upload, or ``discard`` forgets it.

    Takes the store, not a unit of work: each chunk is written in a short transaction of
    its own while the body streams in."""
    assert store.keyring is not None
    name = _checked_name(command.name)
    declared = check_type(command.declared_type)
    storage = storages.new
    blob_id, key = uuid.uuid4(), new_key()
    actor = command.uploader
    async with store.unit_of_work(tenant_id, actor) as uow:
        paused = await uow.conn.fetchval(Q["writes_paused"], tenant_id)
        if paused is not None:
            # A file taken now would be left behind by the move (docs/operations.md).
            raise TenantReadOnly(f"tenant {tenant_id} is read-only while it moves", paused)
        await uow.conn.execute(Q["blob_begin"], tenant_id, blob_id, storage.kind, CHUNK_BYTES,
                               store.keyring.wrap(tenant_id, blob_id, key),
                               store.keyring.fingerprint, actor.kind, actor.id, command.at)
    writer = _Writer(storage, tenant_id, actor, blob_id)
    try:
        digest, size, n = hashlib.sha256(), 0, 0
        buffer = bytearray()
        sealed: list[bytes] = []  # sealed chunks not yet handed to the writer
        content_type: str | None = None
        async for piece in body:
            size += len(piece)
            if size > found.max_file_bytes:
                raise _too_large(found)
            digest.update(piece)
            buffer += piece
            if content_type is None and len(buffer) >= SNIFF_BYTES:
                content_type = _checked_type(declared, bytes(buffer[:SNIFF_BYTES]))
            # Strictly more than a chunk: the last chunk is sealed as the last, so one
            # is held back until the body ends.
            while len(buffer) > CHUNK_BYTES:
                sealed.append(seal_chunk(key, tenant_id, blob_id, n + len(sealed), False,
                                         bytes(buffer[:CHUNK_BYTES])))
                del buffer[:CHUNK_BYTES]
                if len(sealed) == WRITE_BATCH:
                    await writer.put(n, sealed)
                    n, sealed = n + len(sealed), []
        if size == 0:
            raise Invalid("empty_file", "the file is empty", field="file")
        if content_type is None:
            content_type = _checked_type(declared, bytes(buffer))
        sealed.append(seal_chunk(key, tenant_id, blob_id, n + len(sealed), True,
                                 bytes(buffer)))
        await writer.put(n, sealed)
        await writer.done()
        await storage.complete(tenant_id, blob_id)
    except BaseException:
        await writer.abandon()
        await _forget(store, storage, tenant_id, blob_id)
        raise
    return Received(blob_id=blob_id, name=name, content_type=content_type, size=size,
                    sha256=digest.digest(), storage=storage)


@dataclass(frozen=True, slots=True)
class WholeFile:
    """A file whose bytes are all in hand (a mail's), checked by ``check_whole``."""

    name: str
    content_type: str
    data: bytes


def check_whole(name: str, declared_type: str | None, data: bytes, found: FileLimits
                ) -> WholeFile:
    """A file in hand checked as ``receive`` checks one it streams: its name, its type
    (the declared one, unless its bytes contradict it), its size; refused as there."""
    checked = _checked_name(name)
    try:
        declared = check_type(declared_type)
    except ValidationFailed as exc:
        raise Invalid("invalid_content_type", exc.message, field="content_type") from exc
    if not data:
        raise Invalid("empty_file", "the file is empty", field="file")
    if len(data) > found.max_file_bytes:
        raise _too_large(found)
    return WholeFile(checked, _checked_type(declared, data[:SNIFF_BYTES]), data)


async def receive_all(store: EventStore, storages: Storages, tenant_id: TenantId,
                      actor: StoreActor, files: Sequence[WholeFile],
                      at: datetime | Sequence[datetime]) -> list[Received]:
    """Files in hand into new blobs, as ``receive`` makes one, with one transaction for
    all their blob rows and one ``put_many`` for their bytes (a transaction for each
    file costs more than the file). Chunked and sealed as ``receive`` chunks a stream.
    ``at``: when they were received, or when each was (an import's, one per file)."""
    assert store.keyring is not None
    if not files:
        return []
    storage = storages.new
    keys = [(uuid.uuid4(), new_key()) for _ in files]
    ats = [at] * len(files) if isinstance(at, datetime) else list(at)
    assert len(ats) == len(files)
    async with store.unit_of_work(tenant_id, actor) as uow:
        paused = await uow.conn.fetchval(Q["writes_paused"], tenant_id)
        if paused is not None:
            raise TenantReadOnly(f"tenant {tenant_id} is read-only while it moves", paused)
        await uow.conn.executemany(Q["blob_begin"], [
            (tenant_id, blob_id, storage.kind, CHUNK_BYTES,
             store.keyring.wrap(tenant_id, blob_id, key), store.keyring.fingerprint,
             actor.kind, actor.id, when) for (blob_id, key), when in zip(keys, ats,
                                                                        strict=True)])
    try:
        sealed = []
        for (blob_id, key), f in zip(keys, files, strict=True):
            count = chunk_count(len(f.data))
            sealed.append((blob_id, [
                seal_chunk(key, tenant_id, blob_id, n, n == count - 1,
                           f.data[n * CHUNK_BYTES:(n + 1) * CHUNK_BYTES])
                for n in range(count)]))
        await storage.put_many(tenant_id, actor, sealed)
        for blob_id, _ in keys:
            await storage.complete(tenant_id, blob_id)
    except BaseException:
        for blob_id, _ in keys:
            await _forget(store, storage, tenant_id, blob_id)
        raise
    return [Received(blob_id=blob_id, name=f.name, content_type=f.content_type,
                     size=len(f.data), sha256=hashlib.sha256(f.data).digest(),
                     storage=storage)
            for (blob_id, _), f in zip(keys, files, strict=True)]


class _Writer:
    """Writes an upload's sealed batches in a task of its own, one batch behind the
    body: the next batch is received and sealed while the last is being written (two
    batches held at most), so the client's sending and the storage's writing overlap."""

    def __init__(self, storage: Storage, tenant_id: TenantId, actor: StoreActor,
                 blob_id: UUID) -> None:
        self.storage, self.tenant_id, self.actor, self.blob_id = (storage, tenant_id, actor,
                                                                 blob_id)
        self.writing: asyncio.Task[None] | None = None

    async def put(self, n: int, batch: list[bytes]) -> None:
        await self.done()
        self.writing = asyncio.create_task(
            self.storage.put(self.tenant_id, self.actor, self.blob_id, n, batch))

    async def done(self) -> None:
        """Wait for the batch being written (its error is raised here)."""
        if self.writing is not None:
            task, self.writing = self.writing, None
            await task

    async def abandon(self) -> None:
        """Stop the batch being written, and wait until it has stopped."""
        if self.writing is not None:
            task, self.writing = self.writing, None
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def record_upload(uow: UnitOfWork, received: Received, command: ReceiveFile
                        ) -> dict[str, Any]:
    """Make a received blob an upload, in the caller's unit of work (by its ``write``:
    deferred to the COMMIT when it defers); its document."""
    upload_id, tenant, actor = uuid.uuid4(), uow.tenant_id, command.uploader
    await uow.write(Q["blob_stored"], tenant, received.blob_id, received.sha256,
                    received.size)
    await uow.write(Q["upload_insert"], tenant, upload_id, received.blob_id,
                    received.name, received.content_type, received.size,
                    received.sha256, actor.kind, actor.id, command.at)
    return upload_document({"id": upload_id, "name": received.name, "size": received.size,
                            "content_type": received.content_type,
                            "sha256": received.sha256, "created_at": command.at})


async def record_uploads(uow: UnitOfWork, received: Sequence[Received], uploader: StoreActor,
                         at: Sequence[datetime]) -> list[UUID]:
    """``record_upload`` of several received blobs by one uploader, made at ``at`` (one
    time each, by position), in two statements for all of them (by ``write``); the
    uploads' ids, in the order given."""
    ids = [uuid.uuid4() for _ in received]
    if not received:
        return ids
    tenant = uow.tenant_id
    await uow.write(Q["blobs_stored"], tenant, [r.blob_id for r in received],
                    [r.sha256.hex() for r in received], [r.size for r in received])
    await uow.write(Q["uploads_insert"], tenant, ids, [r.blob_id for r in received],
                    [r.name for r in received], [r.content_type for r in received],
                    [r.size for r in received], [r.sha256.hex() for r in received],
                    uploader.kind, uploader.id, [t.isoformat() for t in at])
    return ids


async def discard(store: EventStore, tenant_id: TenantId, received: Received) -> None:
    """Forget a received blob that did not become an upload (a refused or replayed
    request).

    Takes the store, not a unit of work: it runs after the request's own unit of work
    refused or replayed the upload."""
    await _forget(store, received.storage, tenant_id, received.blob_id)


async def _forget(store: EventStore, storage: Storage, tenant_id: TenantId,
                  blob_id: UUID) -> None:
    """Remove what an incomplete upload kept. Best effort: what is left (the process
    died, the database went away) is the purge job's."""
    try:
        await storage.discard(tenant_id, blob_id)
        # No actor: a customer may not delete blob rows (row-level security), and the
        # row is this request's own.
        async with store.unit_of_work(tenant_id) as uow:
            await uow.conn.execute(Q["blob_forget"], tenant_id, blob_id)
    except Exception:
        return


# --- giving back -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OpenFile:
    """A file ready to be read: what it is, and how to read its bytes."""

    document: dict[str, Any]
    size: int
    sha256: str
    content_type: str
    name: str
    blob_id: UUID
    storage: Storage
    key: bytes


async def open_file(store: EventStore, storages: Storages, tenant_id: TenantId,
                    actor: StoreActor, upload_id: UUID) -> OpenFile:
    """The file of upload ``upload_id`` as ``actor`` may read it (module docstring):
    ``Missing`` when it may not (or there is none), ``Gone`` once its contact was
    erased.

    Takes the store, not a unit of work: the row is read and authorized in a read-only
    transaction, and the bytes stream after it ends."""
    assert store.keyring is not None
    async with store.unit_of_work(tenant_id, actor, readonly=True) as uow:
        row = await uow.conn.fetchrow(Q["download"], tenant_id, upload_id)
        if row is None or (row["ticket_id"] is None and (
                row["uploaded_by_kind"], row["uploaded_by_id"]) != (actor.kind, actor.id)):
            raise Missing("not_found", f"no attachment {upload_id}")
        if row["blob_id"] is None:
            raise Gone("attachment_erased", "the file was erased with its contact")
        subject = row["subject_id"]
        wrapped = bytes(row["wrapped_key"])
        if subject is None:
            key = store.keyring.unwrap(tenant_id, row["blob_id"], wrapped, row["kek"])
        else:
            data_key = (await store.keyring.read(uow.conn, tenant_id, [subject]))[subject]
            if data_key is None:
                raise Gone("attachment_erased", "the file was erased with its contact")
            key = unwrap_for_subject(data_key, tenant_id, row["blob_id"], subject, wrapped)
    document = upload_document(row)
    return OpenFile(document=document, size=row["size"], sha256=document["sha256"],
                    content_type=row["content_type"], name=row["name"],
                    blob_id=row["blob_id"], storage=storages.of(row["storage"]), key=key)


async def read_range(file: OpenFile, tenant_id: TenantId, actor: StoreActor,
                     start: int, end: int) -> AsyncIterator[bytes]:
    """The file's bytes ``start`` to ``end`` (inclusive), opened chunk by chunk."""
    count = chunk_count(file.size)
    first, last = start // CHUNK_BYTES, end // CHUNK_BYTES
    n = first
    async for sealed in file.storage.read(tenant_id, actor, file.blob_id, first, last,
                                          file.size):
        plain = open_chunk(file.key, tenant_id, file.blob_id, n, n == count - 1, sealed)
        base = n * CHUNK_BYTES
        yield plain[max(start - base, 0):end - base + 1]
        n += 1


# --- erasure, export, audit ------------------------------------------------------------


async def erase_files(uow: UnitOfWork, subjects: Sequence[UUID]
                      ) -> list[tuple[UUID, str]]:
    """Delete the blobs sealed to erased subjects (their chunk rows go with them), and
    blank their uploads' names; the blobs gone, by (id, storage kind), so the caller
    removes those kept outside Postgres once the erasure commits."""
    await uow.conn.execute(Q["erase_uploads"], uow.tenant_id, list(subjects))
    rows = await uow.conn.fetch(Q["erase_blobs"], uow.tenant_id, list(subjects))
    return [(r["id"], r["storage"]) for r in rows]


async def forget_blobs(storages: Storages, tenant_id: TenantId,
                       blobs: Sequence[tuple[UUID, str]]) -> None:
    """Remove the bytes of deleted blobs from storages outside Postgres."""
    for kind in {k for _, k in blobs}:
        storage = storages.by_kind.get(kind)
        if storage is not None:
            await storage.delete(tenant_id, [b for b, k in blobs if k == kind])


async def ticket_files(conn: asyncpg.Connection, tenant_id: TenantId,
                       ticket_ids: Sequence[UUID]) -> list[dict[str, Any]]:
    """The files attached on these tickets, oldest first (erased ones say so)."""
    rows = await conn.fetch(Q["ticket_files"], tenant_id, list(ticket_ids))
    return [{"id": r["id"], "ticket_id": r["ticket_id"], "message_id": r["message_id"],
             "name": r["name"], "size": r["size"], "type": r["content_type"],
             "sha256": bytes(r["sha256"]).hex(), "visibility": r["visibility"],
             "attached_at": r["attached_at"], "erased": r["erased"]} for r in rows]


@dataclass(frozen=True, slots=True)
class FileCheck:
    """What checking every stored file against its recorded hash found."""

    checked: int
    erased: int
    bad: list[str]
    """Upload or blob ids whose bytes, or whose recorded hash, do not match."""


async def verify_files(store: EventStore, storages: Storages, tenant_id: TenantId,
                       recorded: Mapping[UUID, str]) -> FileCheck:
    """Read every stored blob of the tenant, open it and hash it, and compare: with
    its row's sha256, and each attached upload's with ``recorded`` (upload id -> the
    sha256 its event carries).

    Takes the store, not a unit of work: it reads the blobs in batches, a read-only
    transaction each, and hashes the bytes outside any."""
    assert store.keyring is not None
    bad: list[str] = []
    checked = erased = 0
    after = UUID(int=0)
    while True:
        async with store.unit_of_work(tenant_id, readonly=True) as uow:
            rows = await uow.conn.fetch(Q["stored_blobs"], tenant_id, after, 50)
            subjects = {r["subject_id"] for r in rows if r["subject_id"] is not None}
            keys = await store.keyring.read(uow.conn, tenant_id, subjects)
        if not rows:
            break
        for r in rows:
            after = r["id"]
            wrapped = bytes(r["wrapped_key"])
            data_key = None if r["subject_id"] is None else keys.get(r["subject_id"])
            if r["subject_id"] is None:
                key = store.keyring.unwrap(tenant_id, r["id"], wrapped, r["kek"])
            elif data_key is None:
                erased += 1
                continue
            else:
                key = unwrap_for_subject(data_key, tenant_id, r["id"], r["subject_id"],
                                         wrapped)
            if not await _hash_matches(storages.of(r["storage"]), tenant_id, r["id"], key,
                                       r["size"], bytes(r["sha256"])):
                bad.append(str(r["id"]))
            checked += 1
    async with store.unit_of_work(tenant_id, readonly=True) as uow:
        uploads = await uow.conn.fetch(Q["attached_hashes"], tenant_id)
    for u in uploads:
        want = recorded.get(u["id"])
        if want is None or want != bytes(u["sha256"]).hex() or (
                not u["erased"] and bytes(u["blob_sha256"]).hex() != want):
            bad.append(str(u["id"]))
    return FileCheck(checked=checked, erased=erased, bad=bad)


async def _hash_matches(storage: Storage, tenant_id: TenantId, blob_id: UUID, key: bytes,
                        size: int, sha: bytes) -> bool:
    digest, n, count = hashlib.sha256(), 0, chunk_count(size)
    try:
        async for sealed in storage.read(tenant_id, None, blob_id, 0, count - 1, size):
            digest.update(open_chunk(key, tenant_id, blob_id, n, n == count - 1, sealed))
            n += 1
    except StorageUnavailable:
        raise
    except Exception:
        return False
    return digest.digest() == sha


__all__ = ["FileCheck", "OpenFile", "ReceiveFile", "Received", "Storages", "WholeFile",
           "check_upload", "check_whole", "discard", "erase_files", "forget_blobs",
           "limits", "limits_of", "open_file", "read_range", "receive", "receive_all",
           "record_upload", "record_uploads", "ticket_files", "upload_document",
           "verify_files"]
