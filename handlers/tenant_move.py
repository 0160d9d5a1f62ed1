"""Moving a tenant to another database with its history, chain and sealed data intact
(``helpdesk tenant export`` / ``import`` / ``read-only``; docs/operations.md, "Moving
a tenant").

An export is JSON lines, written by the command line in this order:

1. a header (``header``): the format, the tenant's row, the schema version, whether its
   writes are paused, the fingerprint of the transport key, and the export's state key
   wrapped by it (handlers/export_seal.py);
2. the audit export of every event (eventstore/export.py, written by the same reader as
   ``helpdesk audit export``), so the chain travels with its hashes;
3. the state (``write_state``): every data key, unwrapped with this database's
   key-encryption key and wrapped again by the transport key given on the command line
   (bound to tenant and subject, as ``Keyring`` binds them), then every row of every
   tenant table, in an order that puts a row after those it refers to, in batches
   sealed by the state key: the read models hold names, addresses and bodies as text,
   and the file must show none of them without the transport key. Values sealed
   by the key-encryption key itself (a file's key while it is on nobody's ticket, a
   mailbox's passwords, quarantined mail) are wrapped again the same way; file chunks
   stay sealed by their file's key, which moves wrapped: those kept in Postgres as
   ``file_chunks`` rows, those kept in a directory (``FILE_STORAGE_DIR``) read from it
   after the rows;
4. an end line with the head and the number of lines, so a cut-short file is refused.

An import (``import_tenant``) runs in one transaction as the owner role: the tenant's
row and head, the events as they were recorded (migrations 0655, 0950 and 0995 have a
statement trigger check every row's tenant and compute every hash anew and compare,
once a statement of 1,000 events, and no row trigger run for them; the lines go to
Postgres as the file holds them, one batch in flight while the next is read), the
data keys wrapped by the target's key-encryption key, the rows; nothing of it is
visible until all of it is in. No webhook, mail or rule fires: the events go in before
the tables that would make them (webhooks, mailboxes), and the rule engine's checkpoint
arrives with the rows.

The read models arrive as rows too, the async ones (analytics) with their projection
checkpoints: the export reads every row in one snapshot, at the head its events reach
(it refuses a tenant written meanwhile), so each checkpoint names the seq its rows were
built to, and the target's projector carries on from there as the source's would have.
Verdicts do not move (DESIGN.md), so a rebuild from the events makes the same rows; it
is an operator's choice after the import (``rebuild_projections``, ``helpdesk tenant
import --rebuild``), not part of it: it ran at a third to a fifth of the rate of the
rest of the move (docs/performance.md, "Moving a tenant").
"""

from __future__ import annotations

import asyncio
import base64
import graphlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.blobs import Storage, chunk_count
from eventstore.chain import format_recorded_at
from eventstore.export import FORMAT as AUDIT_FORMAT
from eventstore.keys import Keyring
from eventstore.sqlfile import load_queries
from eventstore.store import arm
from handlers.export_seal import SealBroken, StateSeal
from handlers.sealed_values import REWRAPPED
from handlers.tenants import operator_actor
from projections import admin
from projections.projector import Projector

Q = load_queries(Path(__file__).with_name("tenant_move.sql"))

FORMAT = "helpdesk-tenant-export/2"
EVENT_BATCH = 1_000
ROW_BATCH = 500
CHUNK_BATCH = 16
REBUILD_BATCH = 2_000

SPECIAL = frozenset({"events", "tenant_heads", "tenants", "data_keys"})
"""Tenant tables that travel in a form of their own, not as rows."""

class MoveRefused(Exception):
    """An export or import that cannot go on, said for the operator (never an HTTP
    answer: these run from the command line only)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


REWRAPPED_TABLES = frozenset(name for name, _, _ in REWRAPPED)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    refers_to: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Imported:
    tenant_id: TenantId
    events: int
    data_keys: int
    rows: int
    head_seq: int


def _bytea(value: bytes) -> str:
    """A bytea as ``row_to_json`` writes it (and ``json_populate_record`` reads it)."""
    return "\\x" + value.hex()


def _unbytea(text: str) -> bytes:
    if not text.startswith("\\x"):
        raise MoveRefused("bad_export", "a bytea value of the export is not hex")
    return bytes.fromhex(text[2:])


async def arm_owner(conn: asyncpg.Connection, tenant_id: TenantId) -> None:
    """The owner role under the tenant's context with the operator as actor, for the
    current transaction."""
    await conn.execute("SET LOCAL ROLE helpdesk_owner")
    await arm(conn, tenant_id, operator_actor())


async def set_read_only(conn: asyncpg.Connection, tenant_id: TenantId,
                        retry_after: int | None) -> None:
    """Pause the tenant's writes (``retry_after`` seconds for refused clients) or let
    them go on (None); ``conn`` is an owner connection in a transaction."""
    if retry_after is not None and not 1 <= retry_after <= 86_400:
        raise MoveRefused("bad_retry_after", "Retry-After is 1 to 86400 seconds")
    await arm_owner(conn, tenant_id)
    if await conn.fetchval(Q["pause"], tenant_id, retry_after) is None:
        raise MoveRefused("unknown_tenant", f"no tenant {tenant_id}")


async def tables(conn: asyncpg.Connection) -> list[Table]:
    """The tenant tables that travel as rows, each after every table it refers to."""
    found = {r["name"]: Table(r["name"], tuple(r["refers_to"]), tuple(r["columns"]))
             for r in await conn.fetch(Q["tables"])}
    order = graphlib.TopologicalSorter(
        {name: [t for t in table.refers_to if t in found] for name, table in found.items()})
    return [found[name] for name in order.static_order() if name not in SPECIAL]


async def header(conn: asyncpg.Connection, tenant_id: TenantId, transport: Keyring,
                 seal: StateSeal) -> dict[str, Any]:
    """The first line of a tenant export (``conn`` armed by ``arm_owner``); ``seal`` is
    the state key the rows will be sealed by."""
    row = await conn.fetchrow(Q["tenant"], tenant_id)
    if row is None:
        raise MoveRefused("unknown_tenant", f"no tenant {tenant_id}")
    return {"export": FORMAT, "schema_version": await conn.fetchval(Q["schema_version"]),
            "tenant": {"id": str(row["id"]), "name": row["name"], "slug": row["slug"],
                       "created_at": format_recorded_at(row["created_at"])},
            "head_seq": row["seq"], "head_hash": bytes(row["hash"]).hex(),
            "paused_retry_after": row["paused_retry_after"],
            "transport_kek": transport.fingerprint, "state_key": seal.wrapped(transport)}


def _rewrap(table: str, row: dict[str, Any], tenant_id: TenantId, opener: Keyring,
            sealer: Keyring) -> dict[str, Any]:
    for name, value, kek in REWRAPPED:
        if name == table and row.get(value) is not None and row.get(kek) is not None:
            row_id = UUID(row["id"])
            plain = opener.unwrap(tenant_id, row_id, _unbytea(row[value]), row[kek])
            row[value] = _bytea(sealer.wrap(tenant_id, row_id, plain))
            row[kek] = sealer.fingerprint
    return row


async def write_state(conn: asyncpg.Connection, tenant_id: TenantId, keyring: Keyring,
                      transport: Keyring, seal: StateSeal, out: IO[bytes],
                      files: Storage | None = None) -> int:
    """Write the data keys, every tenant row (sealed by ``seal``, the header's) and the
    chunks of files kept outside Postgres, read from ``files`` (section 3 of the module
    docstring); returns the lines written. ``conn`` is armed by ``arm_owner``, in one
    snapshot."""
    written = 0
    for r in await conn.fetch(Q["data_keys"], tenant_id):
        wrapped = None
        if r["wrapped"] is not None:
            key = keyring.unwrap(tenant_id, r["subject_id"], bytes(r["wrapped"]), r["kek"])
            wrapped = transport.wrap(tenant_id, r["subject_id"], key).hex()
        out.write(orjson.dumps({
            "part": "data_key", "subject_id": str(r["subject_id"]), "wrapped": wrapped,
            "created_at": format_recorded_at(r["created_at"]),
            "erased_at": None if r["erased_at"] is None else format_recorded_at(r["erased_at"]),
        }) + b"\n")
        written += 1
    for table in await tables(conn):
        # json, not jsonb: a json column (a ticket's rendered document) keeps its text.
        query = f'SELECT row_to_json(t)::text FROM "{table.name}" t WHERE t.tenant_id = $1'
        batch: list[bytes] = []
        async for rec in conn.cursor(query, tenant_id, prefetch=ROW_BATCH):
            text: str = rec[0]
            if table.name in REWRAPPED_TABLES:
                row = _rewrap(table.name, orjson.loads(text), tenant_id, keyring, transport)
                text = orjson.dumps(row).decode()
            batch.append(text.encode())
            if len(batch) >= ROW_BATCH:
                out.write(_sealed_rows(seal, table.name, written, batch))
                written, batch = written + 1, []
        if batch:
            out.write(_sealed_rows(seal, table.name, written, batch))
            written += 1
    for blob in await conn.fetch(Q["blobs_elsewhere"], tenant_id):
        if files is None or blob["storage"] != files.kind:
            raise MoveRefused("files_unreachable", f"files of the tenant are kept in "
                              f"{blob['storage']} storage: set FILE_STORAGE_DIR to export them")
        n = 0
        async for sealed in files.read(tenant_id, None, blob["id"], 0,
                                       chunk_count(blob["size"]) - 1, blob["size"]):
            out.write(orjson.dumps({"part": "file_chunk", "blob_id": str(blob["id"]), "n": n,
                                    "data": base64.b64encode(sealed).decode()}) + b"\n")
            n += 1
            written += 1
    return written


def _sealed_rows(seal: StateSeal, table: str, line: int, rows: list[bytes]) -> bytes:
    """One state line: a JSON array of ``rows`` of ``table``, sealed for its place."""
    plain = b"[" + b",".join(rows) + b"]"
    return orjson.dumps({"part": "rows", "table": table, "rows": len(rows),
                         "sealed": seal.seal(table, line, plain)}) + b"\n"


async def head_of(conn: asyncpg.Connection, tenant_id: TenantId) -> tuple[int, bytes]:
    """The tenant's head seq and hash."""
    row = await conn.fetchrow(Q["head"], tenant_id)
    if row is None:
        raise MoveRefused("unknown_tenant", f"no tenant {tenant_id}")
    return row["seq"], bytes(row["hash"])


def end_line(head_seq: int, head_hash: bytes, lines: int) -> bytes:
    """The last line: the head the events reached and how many state lines came."""
    return orjson.dumps({"part": "end", "head_seq": head_seq, "head_hash": head_hash.hex(),
                         "state_lines": lines}) + b"\n"


class _Reader:
    """The lines of an export as objects (blank lines skipped). While ``raws`` is a
    list, each line's bytes are kept in it too: the events go to Postgres as they came,
    with no second encoding."""

    def __init__(self, lines: Iterable[bytes]) -> None:
        self._lines = iter(lines)
        self.raws: list[bytes] | None = None

    def __iter__(self) -> _Reader:
        return self

    def __next__(self) -> dict[str, Any]:
        raw = next(self._lines)
        while not raw.strip():
            raw = next(self._lines)
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise MoveRefused("bad_export", "a line of the export is not JSON") from exc
        if not isinstance(obj, dict):
            raise MoveRefused("bad_export", "a line of the export is not an object")
        if self.raws is not None:
            self.raws.append(raw)
        return obj


async def import_tenant(conn: asyncpg.Connection, lines: Iterable[bytes], keyring: Keyring,
                        transport: Keyring, files: Storage | None = None) -> Imported:
    """Import an export into this database, in the transaction ``conn`` is in (it
    commits or rolls back as one). ``keyring`` is this database's key-encryption key,
    ``transport`` the key the export was wrapped by, ``files`` this database's file
    directory (None: files kept in a directory there come into ``file_chunks``).
    ``MoveRefused`` for a file that is not a whole export of this schema, or a tenant
    (or slug) already here.
    """
    try:
        return await _import(conn, _Reader(lines), keyring, transport, files)
    except (KeyError, TypeError, ValueError) as exc:
        raise MoveRefused("bad_export", f"the export is malformed: {exc!r}") from exc


async def _import(conn: asyncpg.Connection, reader: _Reader, keyring: Keyring,
                  transport: Keyring, files: Storage | None) -> Imported:
    first = next(reader, None)
    if first is None or first.get("export") != FORMAT:
        raise MoveRefused("bad_export", "the file does not start with a tenant export header")
    tenant = first["tenant"]
    tenant_id = TenantId(UUID(tenant["id"]))
    await arm_owner(conn, tenant_id)
    ours = await conn.fetchval(Q["schema_version"])
    if first["schema_version"] != ours:
        raise MoveRefused("schema_mismatch", f"the export is of schema version "
                          f"{first['schema_version']} and this database is at {ours}: "
                          "migrate both to the same version first")
    if first["transport_kek"] != transport.fingerprint:
        raise MoveRefused("wrong_transport_key", "the transport key is not the one the "
                          "export was made with")
    try:
        seal = StateSeal.unwrapped(tenant_id, transport, first["state_key"])
    except SealBroken as exc:
        raise MoveRefused("bad_export", str(exc)) from exc
    if await conn.fetchval(Q["tenant_taken"], tenant_id, tenant["slug"]) is not None:
        raise MoveRefused("tenant_exists", f"this database has tenant {tenant_id} or the "
                          f"slug {tenant['slug']!r} already")
    await conn.execute(Q["insert_tenant"], tenant_id, tenant["name"], tenant["slug"],
                       _instant(tenant["created_at"]))
    await conn.execute(Q["insert_head"], tenant_id, first["paused_retry_after"])
    audit = next(reader, None)
    if audit is None or audit.get("export") != AUDIT_FORMAT or audit.get("from_seq") != 1:
        raise MoveRefused("bad_export", "the events of the export are missing")
    await conn.execute(Q["arm_import"])
    sender = _EventSender(conn)
    try:
        obj, last = await _send_events(sender, reader, tenant_id)
    finally:
        await sender.settle()
    events = sender.sent
    if last is not None and await conn.fetchval(Q["import_head"], tenant_id, *last) is None:
        raise MoveRefused("broken_chain", "the imported events do not end at their last seq")
    data_keys, rows = await _import_state(conn, tenant_id, obj, reader, keyring, transport,
                                          seal, files)
    head_seq, _ = await head_of(conn, tenant_id)
    return Imported(tenant_id, events, data_keys, rows, head_seq)


async def _send_events(sender: _EventSender, reader: _Reader, tenant_id: TenantId
                       ) -> tuple[dict[str, Any] | None, tuple[int, bytes] | None]:
    """Send the event lines that follow the audit header; returns the first line after
    them (None at the end of the file) and the last event's seq and hash."""
    # The events' lines go to Postgres as they are, a batch at a time.
    raws: list[bytes] = []
    reader.raws = raws
    tenant_text = str(tenant_id)
    last: tuple[int, bytes] | None = None
    obj: dict[str, Any] | None = None
    for obj in reader:
        if "part" in obj:
            break
        if obj.get("tenant_id") != tenant_text:
            raise MoveRefused("bad_export", f"event {obj.get('seq')} belongs to another tenant")
        last = (obj["seq"], bytes.fromhex(obj["hash"]))
        if len(raws) >= EVENT_BATCH:
            await sender.send(raws)
            raws = reader.raws = []
    else:
        obj = None
    reader.raws = None
    if obj is not None:
        raws.pop()  # the first line of the state, not an event
    await sender.send(raws)
    await sender.settle()
    return obj, last


class _EventSender:
    """Inserts batches of event lines with one batch in flight: Postgres checks and
    writes a batch (most of an import's time) while the next one is read and parsed."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.conn = conn
        self.pending: asyncio.Task[None] | None = None
        self.sent = 0

    async def send(self, lines: list[bytes]) -> None:
        """Insert ``lines`` once the batch before them is in."""
        await self.settle()
        if lines:
            self.pending = asyncio.create_task(self._insert(lines))
            self.sent += len(lines)
            await asyncio.sleep(0)  # the batch goes out before the next is read

    async def settle(self) -> None:
        """Wait for the batch in flight (its refusal raised here)."""
        task, self.pending = self.pending, None
        if task is not None:
            await task

    async def _insert(self, lines: list[bytes]) -> None:
        try:
            await self.conn.execute(Q["insert_events"], lines)
        except asyncpg.PostgresError as exc:
            if exc.sqlstate == "HD006":
                raise MoveRefused("broken_chain", str(exc)) from exc
            raise


class _StateWriter:
    """Writes the state lines of an import in batches: data keys, rows, file chunks."""

    def __init__(self, conn: asyncpg.Connection, tenant_id: TenantId, known: dict[str, Table],
                 keyring: Keyring, transport: Keyring, files: Storage | None) -> None:
        self.conn, self.tenant_id, self.known = conn, tenant_id, known
        self.keyring, self.transport, self.files = keyring, transport, files
        self.keys: list[tuple[UUID, bytes | None, datetime, datetime | None]] = []
        self.rows: list[dict[str, Any]] = []
        self.table: str | None = None
        self.chunks: list[tuple[UUID, int, bytes]] = []
        self.open_blob: UUID | None = None  # a blob being written into ``files``
        self.data_keys = self.row_count = 0

    async def data_key(self, obj: dict[str, Any]) -> None:
        subject = UUID(obj["subject_id"])
        wrapped = None
        if obj["wrapped"] is not None:
            key = self.transport.unwrap(self.tenant_id, subject, bytes.fromhex(obj["wrapped"]))
            wrapped = self.keyring.wrap(self.tenant_id, subject, key)
        self.keys.append((subject, wrapped, _instant(obj["created_at"]),
                          None if obj["erased_at"] is None else _instant(obj["erased_at"])))
        if len(self.keys) >= ROW_BATCH:
            await self.flush()

    async def row_batch(self, obj: dict[str, Any], rows: list[Any]) -> None:
        """A batch of rows of one table (a ``rows`` line, opened)."""
        name = obj["table"]
        if name not in self.known:
            raise MoveRefused("schema_mismatch", f"this database has no table {name!r}")
        await self.flush()
        self.table = name
        tenant = str(self.tenant_id)
        for row in rows:
            if not isinstance(row, dict) or row.get("tenant_id") != tenant:
                raise MoveRefused("bad_export", f"a row of {name} belongs to another tenant")
            if name in REWRAPPED_TABLES:
                row = _rewrap(name, row, self.tenant_id, self.transport, self.keyring)
            if name == "file_blobs" and row["storage"] != "postgres":
                # Files kept in a directory: their chunks follow the rows, into this
                # database's directory when it has one, else into file_chunks rows.
                row["storage"] = "postgres" if self.files is None else self.files.kind
            self.rows.append(row)
        self.row_count += len(rows)
        await self.flush()

    async def chunk(self, obj: dict[str, Any]) -> None:
        await self.flush()
        blob, n, data = UUID(obj["blob_id"]), int(obj["n"]), base64.b64decode(obj["data"])
        if self.files is None:
            self.chunks.append((blob, n, data))
            if len(self.chunks) >= CHUNK_BATCH:
                await self.flush()
            return
        if self.open_blob is not None and self.open_blob != blob:
            await self.files.complete(self.tenant_id, self.open_blob)
        self.open_blob = blob
        await self.files.put(self.tenant_id, operator_actor(), blob, n, [data])

    async def flush(self) -> None:
        if self.keys:
            k = self.keys
            await self.conn.execute(Q["insert_data_keys"], self.tenant_id, [x[0] for x in k],
                                    [x[1] for x in k], self.keyring.fingerprint,
                                    [x[2] for x in k], [x[3] for x in k])
            self.data_keys += len(k)
            self.keys = []
        if self.rows and self.table is not None:
            table = self.table
            cols = ", ".join(f'"{c}"' for c in self.known[table].columns)
            await self.conn.execute(f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM '
                                    f'json_populate_recordset(NULL::"{table}", $1::json)',
                                    self.rows)
            self.rows = []
        if self.chunks:
            c = self.chunks
            await self.conn.execute(Q["insert_chunks"], self.tenant_id, [x[0] for x in c],
                                    [x[1] for x in c], [x[2] for x in c])
            self.chunks = []

    async def finish(self) -> None:
        await self.flush()
        if self.open_blob is not None and self.files is not None:
            await self.files.complete(self.tenant_id, self.open_blob)
            self.open_blob = None


async def _import_state(conn: asyncpg.Connection, tenant_id: TenantId,
                        first: dict[str, Any] | None, reader: Iterator[dict[str, Any]],
                        keyring: Keyring, transport: Keyring, seal: StateSeal,
                        files: Storage | None) -> tuple[int, int]:
    known = {t.name: t for t in await tables(conn)}
    writer = _StateWriter(conn, tenant_id, known, keyring, transport, files)
    for lines, obj in enumerate(_chain(first, reader)):
        part = obj.get("part")
        if part == "end":
            await writer.finish()
            if obj.get("state_lines") != lines:
                raise MoveRefused("bad_export", "the export is cut short")
            seq, last = await head_of(conn, tenant_id)
            if seq != obj["head_seq"] or last.hex() != obj["head_hash"]:
                raise MoveRefused("broken_chain", "the events do not reach the exported head")
            return writer.data_keys, writer.row_count
        if part == "data_key":
            await writer.data_key(obj)
        elif part == "rows":
            await writer.row_batch(obj, _opened_rows(seal, obj, lines))
        elif part == "file_chunk":
            await writer.chunk(obj)
        else:
            raise MoveRefused("bad_export", f"unknown part {part!r} in the export")
    raise MoveRefused("bad_export", "the export is cut short (no end line)")


def _opened_rows(seal: StateSeal, obj: dict[str, Any], line: int) -> list[Any]:
    """The rows a ``rows`` line sealed at state line ``line``."""
    try:
        rows = orjson.loads(seal.open(obj["table"], line, obj["sealed"]))
    except SealBroken as exc:
        raise MoveRefused("bad_export", str(exc)) from exc
    if not isinstance(rows, list) or len(rows) != obj["rows"]:
        raise MoveRefused("bad_export", f"state line {line} does not hold its rows")
    return rows


def _chain(first: dict[str, Any] | None, rest: Iterator[dict[str, Any]]
           ) -> Iterator[dict[str, Any]]:
    if first is not None:
        yield first
    yield from rest


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def rebuild_projections(pool: asyncpg.Pool, tenant_id: TenantId,
                              progress: Callable[[str, int, int], None] | None = None
                              ) -> dict[str, int]:
    """Rebuild every async read model of the imported tenant from its events (the
    projector's own rebuild); returns the seq each reached. The rule engine is not
    among them: its checkpoint came with the rows, so no rule acts on history again."""
    projector = Projector(pool, batch_size=REBUILD_BATCH)
    reached: dict[str, int] = {}
    for name in projector.projections:
        def step(done: int, head: int, name: str = name) -> None:
            if progress is not None:
                progress(name, done, head)

        reached[name] = await admin.rebuild(projector, name, tenant_id, step)
    return reached


__all__ = ["FORMAT", "Imported", "MoveRefused", "arm_owner", "end_line", "head_of", "header",
           "import_tenant", "rebuild_projections", "set_read_only", "tables", "write_state"]
