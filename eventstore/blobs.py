"""Stored files (blobs): their bytes sealed in chunks, kept in Postgres or a directory.

A blob has a key of its own (32 random bytes). Its bytes are cut into chunks of
``CHUNK_BYTES`` and each chunk is sealed on its own with AES-256-GCM, the nonce being
the chunk's number and the associated data binding the tenant, the blob, the number
and whether it is the last: a chunk moved to another place, another blob, or a file cut
short after a chunk, fails to open. So a download can begin at any chunk (``Range``),
and nothing is ever held whole in memory.

The blob's key is kept only wrapped: by the key-encryption key while the blob is on no
contact's ticket (``Keyring.wrap`` bound to the blob's id), and by a data subject's
data key once it is (``wrap_for_subject``), so destroying that data key (erasure)
leaves the blob's bytes unreadable, in backups too.

Where the sealed chunks go is a ``Storage``: ``PostgresStorage`` writes ``file_chunks``
rows (each chunk in a short transaction of its own, so a slow upload holds no
connection between chunks), ``DirectoryStorage`` one file per blob under a directory
(written under ``tmp/`` and renamed into place once complete). A directory that is not
there or not writable is ``StorageUnavailable``, at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from domain.ids import TenantId
from eventstore.errors import EventStoreError
from eventstore.store import EventStore
from eventstore.types import StoreActor

CHUNK_BYTES = 256 * 1024
"""Plain bytes per sealed chunk."""
TAG_BYTES = 16
KEY_BYTES = 32
NONCE_BYTES = 12
READ_BATCH = 8
"""Chunks read from Postgres per transaction while a download streams."""
WRITE_BATCH = 4
"""Sealed chunks an upload hands to its storage at once (one transaction in Postgres)."""


class StorageUnavailable(EventStoreError):
    """The file storage cannot be reached or written: uploads and downloads answer
    503; nothing else needs it."""

    code = "storage_unavailable"


class BrokenBlob(EventStoreError):
    """A chunk did not open with its blob's key: moved, cut short or altered."""

    code = "broken_blob"


def new_key() -> bytes:
    return os.urandom(KEY_BYTES)


def _aad(tenant_id: UUID, blob_id: UUID, n: int, last: bool) -> bytes:
    return f"helpdesk/file|{tenant_id}|{blob_id}|{n}|{int(last)}".encode()


def seal_chunk(key: bytes, tenant_id: UUID, blob_id: UUID, n: int, last: bool,
               data: bytes) -> bytes:
    """Chunk ``n`` of a blob, sealed. The key is the blob's own, never reused for
    another blob, so the chunk number is a safe nonce."""
    return AESGCM(key).encrypt(n.to_bytes(NONCE_BYTES, "big"), data,
                               _aad(tenant_id, blob_id, n, last))


def open_chunk(key: bytes, tenant_id: UUID, blob_id: UUID, n: int, last: bool,
               sealed: bytes) -> bytes:
    try:
        return AESGCM(key).decrypt(n.to_bytes(NONCE_BYTES, "big"), sealed,
                                   _aad(tenant_id, blob_id, n, last))
    except InvalidTag as exc:
        raise BrokenBlob(f"chunk {n} of blob {blob_id} does not open") from exc


def _subject_aad(tenant_id: UUID, blob_id: UUID, subject_id: UUID) -> bytes:
    return f"helpdesk/file-key|{tenant_id}|{blob_id}|{subject_id}".encode()


def wrap_for_subject(data_key: bytes, tenant_id: UUID, blob_id: UUID, subject_id: UUID,
                     key: bytes) -> bytes:
    """A blob's key wrapped by its subject's data key."""
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(data_key).encrypt(nonce, key,
                                            _subject_aad(tenant_id, blob_id, subject_id))


def unwrap_for_subject(data_key: bytes, tenant_id: UUID, blob_id: UUID, subject_id: UUID,
                       wrapped: bytes) -> bytes:
    try:
        return AESGCM(data_key).decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:],
                                        _subject_aad(tenant_id, blob_id, subject_id))
    except InvalidTag as exc:
        raise BrokenBlob(f"the key of blob {blob_id} does not open") from exc


def chunk_count(size: int) -> int:
    return max(1, -(-size // CHUNK_BYTES))


class Storage(Protocol):
    """Where sealed chunks are kept."""

    kind: str
    """``postgres`` or ``filesystem``, as ``file_blobs.storage`` names it."""

    async def put(self, tenant_id: TenantId, actor: StoreActor, blob_id: UUID, n: int,
                  sealed: Sequence[bytes]) -> None:
        """Keep chunks ``n``, ``n + 1``, ... (chunks come in order, from 0)."""

    async def put_many(self, tenant_id: TenantId, actor: StoreActor,
                       blobs: Sequence[tuple[UUID, Sequence[bytes]]]) -> None:
        """Keep several whole blobs' chunks (from 0 each) at once."""

    async def complete(self, tenant_id: TenantId, blob_id: UUID) -> None:
        """Every chunk is in: make the blob durable where it is kept."""

    async def discard(self, tenant_id: TenantId, blob_id: UUID) -> None:
        """Forget what ``put`` kept of a blob that will not be completed (files only:
        chunk rows go with their blob's row)."""

    def read(self, tenant_id: TenantId, actor: StoreActor | None, blob_id: UUID, first: int,
             last: int, size: int) -> AsyncIterator[bytes]:
        """The sealed chunks ``first`` to ``last`` (inclusive), in order."""

    async def delete(self, tenant_id: TenantId, blob_ids: Sequence[UUID]) -> None:
        """Remove blobs' bytes kept outside Postgres (chunk rows go with their rows)."""


class PostgresStorage:
    """Chunks as ``file_chunks`` rows, under row-level security like every tenant row."""

    kind = "postgres"

    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def put(self, tenant_id: TenantId, actor: StoreActor, blob_id: UUID, n: int,
                  sealed: Sequence[bytes]) -> None:
        async with self.store.unit_of_work(tenant_id, actor) as uow:
            # Not flushed at this commit: the upload's own commit, synchronous and after
            # these in the WAL, makes them durable with it (a crash before it leaves a
            # 'receiving' blob, which the purge deletes), so a file costs one flush.
            await uow.conn.execute("SET LOCAL synchronous_commit TO off")
            await uow.conn.executemany(
                "INSERT INTO file_chunks (tenant_id, blob_id, n, data) VALUES ($1, $2, $3, $4)",
                [(tenant_id, blob_id, n + i, data) for i, data in enumerate(sealed)])

    async def put_many(self, tenant_id: TenantId, actor: StoreActor,
                       blobs: Sequence[tuple[UUID, Sequence[bytes]]]) -> None:
        # One transaction for them all, made durable as ``put``'s are.
        async with self.store.unit_of_work(tenant_id, actor) as uow:
            await uow.conn.execute("SET LOCAL synchronous_commit TO off")
            await uow.conn.executemany(
                "INSERT INTO file_chunks (tenant_id, blob_id, n, data) VALUES ($1, $2, $3, $4)",
                [(tenant_id, blob_id, i, data) for blob_id, sealed in blobs
                 for i, data in enumerate(sealed)])

    async def complete(self, tenant_id: TenantId, blob_id: UUID) -> None:
        return None

    async def discard(self, tenant_id: TenantId, blob_id: UUID) -> None:
        return None

    async def read(self, tenant_id: TenantId, actor: StoreActor | None, blob_id: UUID,
                   first: int, last: int, size: int) -> AsyncIterator[bytes]:
        n = first
        while n <= last:
            upto = min(last, n + READ_BATCH - 1)
            async with self.store.unit_of_work(tenant_id, actor, readonly=True) as uow:
                rows = await uow.conn.fetch(
                    "SELECT n, data FROM file_chunks WHERE tenant_id = $1 AND blob_id = $2 "
                    "AND n BETWEEN $3 AND $4 ORDER BY n", tenant_id, blob_id, n, upto)
            if [r["n"] for r in rows] != list(range(n, upto + 1)):
                raise BrokenBlob(f"blob {blob_id} is missing chunks {n} to {upto}")
            for r in rows:
                yield bytes(r["data"])
            n = upto + 1

    async def delete(self, tenant_id: TenantId, blob_ids: Sequence[UUID]) -> None:
        return None


class DirectoryStorage:
    """One file per blob: ``<root>/<tenant>/<blob id>``, its sealed chunks one after
    another (every chunk but the last is ``CHUNK_BYTES + TAG_BYTES`` long, so chunk
    ``n`` is found by seeking). Written under ``<root>/tmp/`` and renamed into place."""

    kind = "filesystem"

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, tenant_id: UUID, blob_id: UUID) -> Path:
        return self.root / str(tenant_id) / str(blob_id)

    def _partial(self, blob_id: UUID) -> Path:
        return self.root / "tmp" / f"{blob_id}.part"

    async def put(self, tenant_id: TenantId, actor: StoreActor, blob_id: UUID, n: int,
                  sealed: Sequence[bytes]) -> None:
        await self._io(self._append, self._partial(blob_id), b"".join(sealed), n == 0)

    async def put_many(self, tenant_id: TenantId, actor: StoreActor,
                       blobs: Sequence[tuple[UUID, Sequence[bytes]]]) -> None:
        for blob_id, sealed in blobs:
            await self.put(tenant_id, actor, blob_id, 0, sealed)

    async def complete(self, tenant_id: TenantId, blob_id: UUID) -> None:
        await self._io(self._finish, self._partial(blob_id), self.path(tenant_id, blob_id))

    async def discard(self, tenant_id: TenantId, blob_id: UUID) -> None:
        for path in (self._partial(blob_id), self.path(tenant_id, blob_id)):
            await self._io(_unlink, path)

    async def read(self, tenant_id: TenantId, actor: StoreActor | None, blob_id: UUID,
                   first: int, last: int, size: int) -> AsyncIterator[bytes]:
        path = self.path(tenant_id, blob_id)
        count = chunk_count(size)
        for n in range(first, last + 1):
            length = (CHUNK_BYTES if n < count - 1 else size - CHUNK_BYTES * (count - 1))
            yield await self._io(_read_at, path, n * (CHUNK_BYTES + TAG_BYTES),
                                 length + TAG_BYTES)

    async def delete(self, tenant_id: TenantId, blob_ids: Sequence[UUID]) -> None:
        for blob_id in blob_ids:
            await self.discard(tenant_id, blob_id)

    async def stored(self, tenant_id: TenantId) -> list[UUID]:
        """The blobs a tenant has files of, complete ones (not those under ``tmp/``)."""
        folder = self.root / str(tenant_id)
        names: list[str] = await self._io(lambda: [p.name for p in folder.iterdir()]
                                          if folder.is_dir() else [])
        out = []
        for name in names:
            try:
                out.append(UUID(name))
            except ValueError:
                continue
        return out

    @staticmethod
    def _append(path: Path, data: bytes, first: bool) -> None:
        if first:
            path.parent.mkdir(exist_ok=True)
        with open(path, "wb" if first else "ab") as f:
            f.write(data)

    @staticmethod
    def _finish(partial: Path, final: Path) -> None:
        with open(partial, "rb+") as f:
            os.fsync(f.fileno())
        final.parent.mkdir(exist_ok=True)
        os.replace(partial, final)

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run blocking file work off the event loop; an OS error is the storage being
        unavailable (a missing root, a full or read-only disk), said at once."""
        if not self.root.is_dir():
            raise StorageUnavailable(f"the file storage directory {self.root} is not there")
        try:
            return await asyncio.to_thread(fn, *args)
        except FileNotFoundError as exc:
            raise BrokenBlob(f"a stored file is missing: {exc.filename}") from exc
        except OSError as exc:
            raise StorageUnavailable(f"file storage: {exc.strerror}") from exc


def _unlink(path: Path) -> None:
    path.unlink(missing_ok=True)


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    if len(data) != length:
        raise BrokenBlob(f"{path} is cut short")
    return data


def directory_usable(root: Path) -> bool:
    """Whether a storage directory is there and has room (for readiness)."""
    try:
        return root.is_dir() and shutil.disk_usage(root).free > 0
    except OSError:
        return False


__all__ = ["CHUNK_BYTES", "WRITE_BATCH", "BrokenBlob", "DirectoryStorage", "PostgresStorage",
           "Storage", "StorageUnavailable", "chunk_count", "directory_usable", "new_key",
           "open_chunk", "seal_chunk", "unwrap_for_subject", "wrap_for_subject"]
