"""Append and read events under a tenant and actor context.

One unit of work is one pooled connection and one transaction, with the tenant and
actor armed by ``set_config(..., true)`` so they vanish at commit and a pooled
connection never leaks a tenant. Appends are staged and sent in the COMMIT's own
message: the append takes the tenant head row lock, held until commit, and so holds
it for server time only, never while a request waits for the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import orjson

from domain.ids import TenantId
from eventstore.errors import (
    ConcurrencyError,
    EventStoreError,
    ImmutableEvents,
    MissingContext,
    StoreUnavailable,
)
from eventstore.keys import Keyring, SubjectErased
from eventstore.notifier import CommitNotifier
from eventstore.pool import arm_statement, discard, store_connection
from eventstore.sealing import Broken, Place, open_sealed, seal, subjects
from eventstore.sqlfile import load_queries
from eventstore.types import ChainReport, NewEvent, RecordedEvent, StoreActor

Q = load_queries(Path(__file__).with_name("queries.sql"))

ZERO_HASH = bytes(32)

# Driver failures that mean "the database is not there", as opposed to a bad query.
UNAVAILABLE = (
    OSError,
    TimeoutError,
    asyncpg.CannotConnectNowError,
    asyncpg.ConnectionDoesNotExistError,
    asyncpg.InterfaceError,
    asyncpg.TooManyConnectionsError,
    asyncpg.AdminShutdownError,
    # Connection-class failures (SQLSTATE 08xxx) and a server that crashed mid-query.
    asyncpg.PostgresConnectionError,
    asyncpg.CrashShutdownError,
    # asyncpg lost track of its connection's protocol state. With one task per
    # connection (always so here) this is a connection the server ended between two
    # statements: its FATAL arrived while the client was idle, and the next
    # statement finds the protocol still waiting for a ReadyForQuery that never
    # comes ("cannot switch to state 15; another operation (2) is in progress").
    asyncpg.InternalClientError,
)


@dataclass(frozen=True, slots=True)
class ChangesPage:
    """One page of ``Session.read_changes``: the event rows (``seq``, ``stream_id``,
    ``version``, ``type``, ``schema_version``, ``data_json`` (the payload's JSON text),
    ``actor_kind``, ``actor_id``, ``recorded_at``), the seq to ask after next, and the
    head they were read at."""

    events: list[Any]
    """Records, or dicts for the rows whose sealed fields were opened."""
    next_after_seq: int
    head_seq: int


def record_from_row(row: asyncpg.Record) -> RecordedEvent:
    """Build a RecordedEvent from a row with the events table's columns."""
    return RecordedEvent(
        tenant_id=TenantId(row["tenant_id"]),
        seq=row["seq"],
        stream_id=row["stream_id"],
        version=row["version"],
        type=row["type"],
        schema_version=row["schema_version"],
        data=row["data"],
        metadata=row["metadata"],
        actor_kind=row["actor_kind"],
        actor_id=row["actor_id"],
        recorded_at=row["recorded_at"],
        hash=bytes(row["hash"]),
    )


@asynccontextmanager
async def acquire(pool: asyncpg.Pool, *,
                  timeout: float | None) -> AsyncIterator[asyncpg.Connection]:
    """A pooled connection, waited for at most ``timeout`` seconds (None: no bound).

    A database that is not there, whether while waiting, in the block or when the
    connection goes back to the pool, is ``StoreUnavailable``. A connection that
    failed that way is terminated rather than returned: its state is unknown, and
    whatever transaction it had open is rolled back by the server, so a unit of work
    on it either committed before it failed or never will.
    """
    try:
        async with pool.acquire(timeout=timeout) as conn:
            try:
                yield conn
            except (*UNAVAILABLE, StoreUnavailable):
                discard(conn)
                raise
    except UNAVAILABLE as exc:
        raise StoreUnavailable(f"database unavailable: {exc}") from exc


def translate(exc: BaseException) -> EventStoreError:
    """Turn a driver error raised by the store's SQL into the store's own error."""
    if isinstance(exc, asyncpg.PostgresError):
        code = getattr(exc, "sqlstate", None)
        if code == "HD001" or code == "42501":
            return MissingContext(str(exc))
        if code == "HD003":
            return ImmutableEvents(str(exc))
    if isinstance(exc, UNAVAILABLE):
        return StoreUnavailable(f"database unavailable: {exc}")
    return EventStoreError(str(exc))


@dataclass(frozen=True, slots=True)
class StagedAppend:
    """Events a unit of work will append to one stream when it commits."""

    stream_id: UUID
    expected_version: int | None
    events: tuple[NewEvent, ...]


class Session:
    """One transaction on one connection, armed for one tenant (and maybe an actor).

    With a keyring, the personal fields of appended events (domain/personal.py) are
    sealed with their subject's data key before they are staged, and the events read
    back come with them opened (or marked erased); without one, they stay as given.
    """

    def __init__(self, conn: asyncpg.Connection, tenant_id: TenantId,
                 keyring: Keyring | None = None) -> None:
        self.conn = conn
        self.tenant_id = tenant_id
        self.keyring = keyring
        self.staged: list[StagedAppend] = []
        # Writes deferred to the COMMIT's message (``write``), in order, ahead of the
        # appends; ``deferring`` turns deferral on for this unit of work.
        self.writes: list[tuple[str, tuple[Any, ...]]] = []
        self.deferring = False
        # Data keys this unit of work holds (FOR SHARE, until commit), by subject; None
        # for an erased subject.
        self._keys: dict[UUID, bytes | None] = {}
        # Sealed fields that failed to open in this unit of work's reads: moved or
        # altered ciphertexts, reported rather than shown.
        self.broken: list[Broken] = []

    async def append(
        self,
        stream_id: UUID,
        expected_version: int | None,
        events: Sequence[NewEvent],
    ) -> None:
        """Append ``events`` to a stream that must be at ``expected_version`` when the
        unit of work commits.

        ``expected_version`` 0 means a new stream; ``None`` appends at whatever the
        stream's version is. The events go to the database in the COMMIT's own message
        (``EventStore.session``), or at ``flush``, in the order they were staged: the
        append takes the tenant head lock, which is then held for server time only.
        A stream that moved on makes the commit raise ``ConcurrencyError``. Read what
        was appended, seq and hash included, after the unit of work.

        With a keyring, each event's ``seal`` fields are sealed with its ``subject``'s
        data key. Sealing binds each field to its version, so an append with personal
        data and no expected version pins the version it reads now. Raises
        ``SubjectErased`` for personal data of an erased subject.
        """
        if not events:
            return
        if self.keyring is not None and any(e.seal and e.subject for e in events):
            if expected_version is None:
                expected_version = await self.stream_version(stream_id)
            events = await self._sealed(stream_id, expected_version, events)
        self.staged.append(StagedAppend(stream_id, expected_version, tuple(events)))

    async def write(self, query: str, *args: Any) -> str | None:
        """Run a statement whose answer nobody reads: at once, or, while ``deferring``,
        in the COMMIT's own message ahead of the appends, written out as SQL text
        (eventstore/literal.py ``statement``). A deferred write is not visible to this
        unit of work's later reads (``flush_writes`` sends what is deferred now); if it
        fails at commit, the whole unit of work rolls back and its error is raised
        there, as a failed append's is (a unique violation as ``ConcurrencyError``).
        Returns the command status of a write run at once, None for a deferred one."""
        if self.deferring:
            self.writes.append((query, args))
            return None
        status: str = await self.conn.execute(query, *args)
        return status

    async def flush_writes(self) -> None:
        """Run the deferred writes now, each in its own round trip, so this unit of
        work's next reads see them."""
        writes, self.writes = self.writes, []
        for query, args in writes:
            await self.conn.execute(query, *args)

    def mark(self) -> tuple[int, int, dict[UUID, bytes | None]]:
        """Where the staged appends and deferred writes end now, and the data keys
        held now (``undo_to``)."""
        return len(self.staged), len(self.writes), dict(self._keys)

    def undo_to(self, mark: tuple[int, int, dict[UUID, bytes | None]]) -> None:
        """Drop what was staged and deferred after ``mark``, and forget the keys taken
        since: they go with the savepoint rolled back under them (a key row made there
        is gone, and so are the locks taken there)."""
        del self.staged[mark[0]:]
        del self.writes[mark[1]:]
        self._keys = mark[2]

    def held_key(self, subject: UUID, wrapped: bytes | None, kek: str | None) -> None:
        """A subject's wrapped data key (None: erased) that a read of this unit of work
        holds FOR SHARE until commit, as ``Keyring.take`` holds it (eventstore/
        queries.sql ``data_key_hold``): appends then seal with it without reading it
        again."""
        if self.keyring is not None:
            self._keys[subject] = (None if wrapped is None
                                   else self.keyring.unwrap(self.tenant_id, subject, wrapped, kek))

    async def new_subject(self, subject: UUID) -> None:
        """Make the data key of a subject this unit of work created under a fresh id
        (a new contact), and store it by ``write``: deferred, in the COMMIT's message.
        No one else can hold a key for it, so none is looked for; if one existed all
        the same, the commit fails rather than seal with a key never stored."""
        if self.keyring is None or subject in self._keys:
            return
        key, wrapped = self.keyring.make(self.tenant_id, subject)
        await self.write(Q["data_key_new"], self.tenant_id, subject, wrapped,
                         self.keyring.fingerprint)
        self._keys[subject] = key

    async def _key(self, subject: UUID) -> bytes:
        """The subject's data key, taken once per unit of work (it stays held)."""
        assert self.keyring is not None
        if subject not in self._keys:
            self._keys[subject] = await self.keyring.take(self.conn, self.tenant_id, subject)
        key = self._keys[subject]
        if key is None:
            raise SubjectErased(subject)
        return key

    async def _sealed(self, stream_id: UUID, expected_version: int,
                      events: Sequence[NewEvent]) -> list[NewEvent]:
        assert self.keyring is not None
        out: list[NewEvent] = []
        for offset, e in enumerate(events, start=1):
            if e.subject is None or not e.seal:
                out.append(e)
                continue
            key = await self._key(e.subject)
            place = Place(self.tenant_id, stream_id, expected_version + offset)
            out.append(replace(e, data=seal(e.data, e.seal, place, e.subject, key)))
        return out

    async def opened(self, rows: Sequence[asyncpg.Record]) -> list[RecordedEvent]:
        """Records of ``rows`` with their sealed fields opened, marked erased, or marked
        unreadable (and reported in ``broken``)."""
        records = [record_from_row(r) for r in rows]
        payloads = await self._open([(r.type, r.stream_id, r.version, r.data)
                                     for r in records])
        return [r if data is None else replace(r, data=data)
                for r, data in zip(records, payloads, strict=True)]

    async def _opened_rows(self, rows: list[Any]) -> list[Any]:
        """``read_changes`` rows (payloads as JSON text) with sealed fields opened, as
        ``opened`` does for records; rows without personal data pass as they are (and
        are not decoded)."""
        # Only a payload that holds a sealed value says "sealed" in its text.
        decoded = [orjson.loads(r["data_json"]) if '"sealed"' in r["data_json"] else None
                   for r in rows]
        payloads = await self._open([(r["type"], r["stream_id"], r["version"], data)
                                     for r, data in zip(rows, decoded, strict=True)
                                     if data is not None])
        opened = iter(payloads)
        out: list[Any] = []
        for r, data in zip(rows, decoded, strict=True):
            new = None if data is None else next(opened)
            out.append(r if new is None else {**dict(r), "data_json": orjson.dumps(new).decode()})
        return out

    async def _open(self, payloads: list[tuple[str, UUID, int, Mapping[str, Any]]]
                    ) -> list[dict[str, Any] | None]:
        """Each payload (type, stream, version, data) with its sealed fields opened, or
        None for one that holds none; one key read for them all."""
        if self.keyring is None:
            return [None] * len(payloads)
        whose = [subjects(data) for _, _, _, data in payloads]
        needed: set[UUID] = set().union(*whose)
        if not needed:
            return [None] * len(payloads)
        keys = await self.keyring.read(self.conn, self.tenant_id, needed)
        out: list[dict[str, Any] | None] = []
        for (_, stream, version, data), subject in zip(payloads, whose, strict=True):
            if not subject:
                out.append(None)
                continue
            opened, broken = open_sealed(data, Place(self.tenant_id, stream, version), keys)
            self.broken += broken
            out.append(opened)
        return out

    def commit_statements(self) -> list[tuple[str, tuple[Any, ...]]]:
        """The deferred writes, then the staged appends, as (query, arguments) for the
        COMMIT's message (eventstore/pool.py ``StoreConnection.commit_with``): the
        appends take the tenant head lock, so they go last and the lock is held for
        the least time."""
        appends = [(Q["append_at_commit"],
                    (self.tenant_id, s.stream_id, s.expected_version,
                     [e.type for e in s.events], [e.schema_version for e in s.events],
                     [orjson.dumps(e.data).decode() for e in s.events],
                     [orjson.dumps(e.metadata).decode() for e in s.events]))
                   for s in self.staged]
        return [*self.writes, *appends]

    async def flush(self) -> list[RecordedEvent]:
        """Append what is staged now, each stream in its own round trip, and return the
        recorded events: for a transaction that is not a unit of work of the store
        (an operator's owner connection), where nothing waits on its commit. Deferred
        writes go first."""
        await self.flush_writes()
        staged, self.staged = self.staged, []
        recorded: list[RecordedEvent] = []
        for s in staged:
            rows = await _run_append(self.conn, self.tenant_id, s.stream_id,
                                     s.expected_version, s.events)
            recorded += await self.opened(rows)
        return recorded

    async def stream_version(self, stream_id: UUID) -> int:
        """The stream's current version (0 for a stream with no events)."""
        version: int = await self.conn.fetchval(Q["stream_version"], self.tenant_id, stream_id)
        return version

    async def read_stream(
        self, stream_id: UUID, to_version: int | None = None
    ) -> list[RecordedEvent]:
        """The stream's events in version order, up to ``to_version`` if given."""
        rows = await self.conn.fetch(Q["read_stream"], self.tenant_id, stream_id, to_version)
        return await self.opened(rows)

    async def read_tenant(self, after_seq: int, limit: int) -> list[RecordedEvent]:
        """The tenant's events with ``seq > after_seq`` in seq order, at most ``limit``."""
        rows = await self.conn.fetch(Q["read_tenant"], self.tenant_id, after_seq, limit)
        return await self.opened(rows)

    async def read_changes(self, after_seq: int, limit: int, *, window: int,
                           types: Sequence[str] | None = None) -> ChangesPage:
        """A page of the tenant's events after ``after_seq`` in seq order, looking at
        most ``window`` seqs ahead, with ``types`` only (None: all), and the cursor to
        resume from (past the events the filter skipped, never past the committed
        head)."""
        rows = await self.conn.fetch(Q["changes"], self.tenant_id, after_seq,
                                     after_seq + window, None if types is None else list(types),
                                     limit)
        head = rows[0]["head_seq"] if rows else 0
        events = await self._opened_rows([r for r in rows if r["seq"] is not None])
        if len(events) >= limit:
            next_after = events[-1]["seq"]
        else:
            next_after = max(after_seq, min(after_seq + window, head))
        return ChangesPage(events, next_after, head)

    async def stream_first_type(self, stream_id: UUID) -> str | None:
        """The type of the stream's first event (None: the stream has none), which
        tells what kind of aggregate the stream is."""
        first: str | None = await self.conn.fetchval(Q["stream_first_type"], self.tenant_id,
                                                      stream_id)
        return first

    async def read_stream_page(self, stream_id: UUID, after_version: int,
                               limit: int) -> list[RecordedEvent]:
        """At most ``limit`` of the stream's events after ``after_version``, in order."""
        rows = await self.conn.fetch(Q["stream_page"], self.tenant_id, stream_id,
                                     after_version, limit)
        return await self.opened(rows)

    async def read_stream_until(self, stream_id: UUID, at: datetime) -> list[RecordedEvent]:
        """The stream's events recorded at or before ``at``, in version order."""
        rows = await self.conn.fetch(Q["stream_until"], self.tenant_id, stream_id, at)
        return await self.opened(rows)

    async def read_feed(self, after_seq: int, limit: int, *, types: Sequence[str] | None = None,
                        stream_id: UUID | None = None, actor_id: str | None = None,
                        recorded_from: datetime | None = None,
                        recorded_before: datetime | None = None) -> list[RecordedEvent]:
        """The tenant's events after ``after_seq`` in seq order, filtered; at most
        ``limit``."""
        rows = await self.conn.fetch(
            Q["feed"], self.tenant_id, after_seq, None if types is None else list(types),
            stream_id, actor_id, recorded_from, recorded_before, limit)
        return await self.opened(rows)

    async def read_range(self, after_seq: int, to_seq: int, limit: int) -> list[RecordedEvent]:
        """At most ``limit`` events with ``after_seq < seq <= to_seq``, in seq order,
        as stored (sealed fields stay sealed): what an export carries, so that it
        verifies offline and holds no personal data in the clear."""
        rows = await self.conn.fetch(Q["export_range"], self.tenant_id, after_seq, to_seq, limit)
        return [record_from_row(r) for r in rows]

    async def read_streams_stored(self, stream_ids: Sequence[UUID]) -> list[RecordedEvent]:
        """Every event of these streams in seq order, as stored (sealed fields sealed)."""
        rows = await self.conn.fetch(Q["streams_stored"], self.tenant_id, list(stream_ids))
        return [record_from_row(r) for r in rows]

    async def hash_at(self, seq: int) -> bytes | None:
        """The chain hash stored with event ``seq`` (None: no such event)."""
        value = await self.conn.fetchval(Q["hash_at"], self.tenant_id, seq)
        return None if value is None else bytes(value)

    async def head(self) -> tuple[int, bytes]:
        """The tenant's head: last assigned seq and its hash."""
        row = await self.conn.fetchrow(Q["head"], self.tenant_id)
        if row is None:
            return 0, ZERO_HASH
        return row["seq"], bytes(row["hash"])

    async def verify_chain(self, from_seq: int = 1, to_seq: int | None = None) -> ChainReport:
        """Recompute the hash chain over ``from_seq..to_seq`` (default: to the head).

        Reports the first seq whose event was altered, removed or reordered.
        """
        head_seq, head_hash = await self.head()
        end = head_seq if to_seq is None else min(to_seq, head_seq)
        start = max(from_seq, 1)
        if end < start:
            return ChainReport(ok=True, checked=0, head_seq=head_seq, first_bad_seq=None)
        row = await self.conn.fetchrow(Q["verify_chain"], self.tenant_id, start, end)
        assert row is not None
        first_bad: int | None = row["first_bad"]
        last_seq: int | None = row["last_seq"]
        if first_bad is None and (last_seq is None or last_seq < end):
            # Rows at the end of the range are gone.
            first_bad = (last_seq or start - 1) + 1
        if (
            first_bad is None
            and end == head_seq
            and row["last_hash"] is not None
            and bytes(row["last_hash"]) != head_hash
        ):
            first_bad = head_seq
        return ChainReport(
            ok=first_bad is None,
            checked=int(row["checked"]),
            head_seq=head_seq,
            first_bad_seq=first_bad,
        )


class EventStore:
    """Hands out sessions over the process's pool."""

    def __init__(self, pool: asyncpg.Pool, *, acquire_timeout: float | None = 5.0,
                 keyring: Keyring | None = None) -> None:
        self.pool = pool
        # Seals personal data on append and opens it on read (None: neither).
        self.keyring = keyring
        # With every connection busy (a slow or hung database holds them), a unit of
        # work gives up after this long with StoreUnavailable instead of queueing on.
        self.acquire_timeout = acquire_timeout
        self.notifier = CommitNotifier(pool)
        # Told (tenant, number of events) after every unit of work that appended
        # commits: the composition root counts them for /metrics.
        self.on_committed: Callable[[TenantId, int], None] | None = None

    def connection(self) -> AbstractAsyncContextManager[asyncpg.Connection]:
        """A pooled connection under the store's acquire timeout, for reads that are
        not units of work (read models): a busy or absent database is then the same
        prompt ``StoreUnavailable`` as for a session."""
        return acquire(self.pool, timeout=self.acquire_timeout)

    @asynccontextmanager
    async def session(
        self,
        tenant_id: TenantId,
        actor: StoreActor | None = None,
        *,
        readonly: bool = False,
        isolation: str | None = None,
    ) -> AsyncIterator[Session]:
        """Open a unit of work: one connection, one transaction, tenant (and actor) armed.

        The transaction commits when the block exits normally, with the staged appends
        in the COMMIT's message, and rolls back on error. ``isolation`` is asyncpg's
        name for a level (``"repeatable_read"`` for a read whose statements must share
        one snapshot); the server's default otherwise.
        """
        async with self.connection() as conn:
            staged: list[StagedAppend] = []
            deferred = False
            try:
                async with _armed_transaction(conn, tenant_id, actor, readonly=readonly,
                                              isolation=isolation):
                    session = Session(conn, tenant_id, self.keyring)
                    yield session
                    staged = session.staged
                    deferred = bool(session.writes)
                    if staged or deferred:
                        if hasattr(conn, "commit_with"):
                            conn.commit_with(session.commit_statements())
                        else:
                            await session.flush()
            except asyncpg.PostgresError as exc:
                if staged or deferred:
                    raise _commit_error(exc, staged) from exc
                raise
            finally:
                if hasattr(conn, "commit_with"):
                    conn.commit_with(None)
        if staged:
            # After commit, never inside the transaction: see eventstore/notifier.py.
            self.notifier.committed(tenant_id)
            if self.on_committed is not None:
                self.on_committed(tenant_id, sum(len(s.events) for s in staged))


def _commit_error(exc: asyncpg.PostgresError, staged: Sequence[StagedAppend]
                  ) -> EventStoreError:
    """The store's error for an append or deferred write that failed at commit."""
    if staged and (exc.sqlstate == "HD004" or isinstance(exc, asyncpg.UniqueViolationError)):
        # HD004 names the stream and its current version (append_events); a unique
        # violation means someone appended without taking the stream's lock.
        message = str(exc)
        target = next((s for s in staged if str(s.stream_id) in message), staged[0])
        detail = getattr(exc, "detail", None) if exc.sqlstate == "HD004" else None
        actual = int(detail) if detail and detail.isdigit() else None
        return ConcurrencyError(target.stream_id, target.expected_version, actual)
    return translate(exc)


async def _run_append(
    conn: asyncpg.Connection,
    tenant_id: TenantId,
    stream_id: UUID,
    expected_version: int | None,
    events: Sequence[NewEvent],
) -> list[asyncpg.Record]:
    try:
        rows: list[asyncpg.Record] = await conn.fetch(
            Q["append"], tenant_id, stream_id, expected_version,
            [e.type for e in events], [e.schema_version for e in events],
            [e.data for e in events], [e.metadata for e in events],
        )
    except asyncpg.PostgresError as exc:
        if exc.sqlstate == "HD004":
            detail = getattr(exc, "detail", None)
            actual = int(detail) if detail and detail.isdigit() else None
            raise ConcurrencyError(stream_id, expected_version, actual) from exc
        if isinstance(exc, asyncpg.UniqueViolationError):
            # Someone appended to the stream without taking its lock: same meaning.
            raise ConcurrencyError(stream_id, expected_version, None) from exc
        raise translate(exc) from exc
    except UNAVAILABLE as exc:
        raise translate(exc) from exc
    return rows


@asynccontextmanager
async def _armed_transaction(conn: asyncpg.Connection, tenant_id: TenantId,
                             actor: StoreActor | None, *, readonly: bool,
                             isolation: str | None) -> AsyncIterator[None]:
    """A transaction armed for tenant and actor: in BEGIN's own round trip on our
    connections (eventstore/pool.py ``StoreConnection``), else by a statement after."""
    # Our own connection object, not the pool's proxy (``conn``): when the server ends
    # the connection, asyncpg detaches it from the proxy, which then has nothing to
    # forward our methods to, and the unstaging below must still work.
    own = store_connection(conn)
    if own is not None:
        own.begin_armed(arm_statement(str(tenant_id), actor.kind if actor else None,
                                      actor.id if actor else None))
    try:
        async with conn.transaction(isolation=isolation, readonly=readonly):
            if own is None:
                await arm(conn, tenant_id, actor)
            elif own.armed_begin_pending:
                raise EventStoreError("the transaction began without its tenant armed")
            yield
    finally:
        if own is not None:
            own.begin_armed(None)


async def arm(conn: asyncpg.Connection, tenant_id: TenantId, actor: StoreActor | None) -> None:
    """Arm tenant and actor for the current transaction only."""
    await conn.execute(
        Q["arm"],
        str(tenant_id),
        actor.kind if actor else None,
        actor.id if actor else None,
    )
