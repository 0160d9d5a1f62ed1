"""Append and read events under a tenant and actor context.

One unit of work is one pooled connection and one transaction, with the tenant and
actor armed by ``set_config(..., true)`` so they vanish at commit and a pooled
connection never leaks a tenant. Appends are staged and sent in the COMMIT's own
message: the append takes the tenant head row lock, held until commit, and so holds
it for server time only, never while a request waits for the event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.errors import UNAVAILABLE, EventStoreError, StoreUnavailable
from eventstore.keys import Keyring
from eventstore.memo import TenantMemo
from eventstore.notifier import CommitNotifier
from eventstore.pool import arm_statement, discard, store_connection
from eventstore.reads import Reads
from eventstore.sealing import Broken
from eventstore.sqlfile import load_queries
from eventstore.staging import StagedAppend, Staging, commit_error
from eventstore.subject_keys import SubjectKeys
from eventstore.types import StoreActor
from eventstore.verification import ChainVerification

Q = load_queries(Path(__file__).with_name("queries.sql"))

ZERO_HASH = bytes(32)



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


class UnitOfWork(Staging, SubjectKeys, Reads, ChainVerification):
    """One transaction on one connection, armed for one tenant (and maybe an actor):
    the unit of work, made of one part per job, each a module of its own: staging and
    commit (eventstore/staging.py), data keys and sealing (eventstore/subject_keys.py),
    reads (eventstore/reads.py) and chain verification (eventstore/verification.py).

    With a keyring, the fields each appended event names (``NewEvent.seal``) are
    sealed with their subject's data key before they are staged, and the events read
    back come with them opened (or marked erased); without one, they stay as given.
    With a memo (eventstore/memo.py), what its work derives from the tenant's rows may
    be kept for the next unit of work of the process; without one, it is derived anew.
    """

    def __init__(self, conn: asyncpg.Connection, tenant_id: TenantId,
                 keyring: Keyring | None = None, memo: TenantMemo | None = None) -> None:
        self.conn = conn
        self.tenant_id = tenant_id
        self.keyring = keyring
        self.memo = memo
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
        self.stamp: dict[str, Any] = {}


class EventStore:
    """Opens units of work over the process's pool."""

    def __init__(self, pool: asyncpg.Pool, *, acquire_timeout: float | None = 5.0,
                 keyring: Keyring | None = None, memo: TenantMemo | None = None) -> None:
        self.pool = pool
        # Seals personal data on append and opens it on read (None: neither).
        self.keyring = keyring
        # What units of work derive from a tenant's rows, kept by revision for the next.
        self.memo = memo if memo is not None else TenantMemo()
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
        prompt ``StoreUnavailable`` as for a unit of work."""
        return acquire(self.pool, timeout=self.acquire_timeout)

    @asynccontextmanager
    async def unit_of_work(
        self,
        tenant_id: TenantId,
        actor: StoreActor | None = None,
        *,
        readonly: bool = False,
        isolation: str | None = None,
    ) -> AsyncIterator[UnitOfWork]:
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
                    uow = UnitOfWork(conn, tenant_id, self.keyring, self.memo)
                    yield uow
                    staged = uow.staged
                    deferred = bool(uow.writes)
                    if staged or deferred:
                        if hasattr(conn, "commit_with"):
                            conn.commit_with(uow.commit_statements())
                        else:
                            await uow.flush()
            except asyncpg.PostgresError as exc:
                if staged or deferred:
                    raise commit_error(exc, staged) from exc
                raise
            finally:
                if hasattr(conn, "commit_with"):
                    conn.commit_with(None)
        if staged:
            # After commit, never inside the transaction: see eventstore/notifier.py.
            self.notifier.committed(tenant_id)
            if self.on_committed is not None:
                self.on_committed(tenant_id, sum(len(s.events) for s in staged))


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
