"""The asyncpg pool: one per process, with a jsonb codec installed on each connection."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import asyncpg
import orjson

from eventstore.errors import StoreUnavailable
from eventstore.literal import execute, prepare, prepared_name, statement

# The statements a unit of work sends in its COMMIT's message: query text and arguments.
Statements = Sequence[tuple[str, Sequence[Any]]]


def _encode_jsonb(value: Any) -> bytes:
    # jsonb's binary format is a version byte followed by the JSON text.
    return b"\x01" + orjson.dumps(value)


def _decode_jsonb(data: bytes) -> Any:
    return orjson.loads(data[1:])


async def init_connection(conn: asyncpg.Connection) -> None:
    """Install the codecs every connection of ours needs."""
    await conn.set_type_codec(
        "jsonb", schema="pg_catalog", encoder=_encode_jsonb, decoder=_decode_jsonb,
        format="binary",
    )
    await conn.set_type_codec(
        "json", schema="pg_catalog", encoder=lambda v: orjson.dumps(v).decode(),
        decoder=orjson.loads, format="text",
    )


def _text_literal(value: str) -> str:
    """``value`` as an SQL text expression made of hex digits only: nothing in it can
    end a literal, whatever the server's quoting settings."""
    return f"convert_from(decode('{value.encode('utf-8').hex()}', 'hex'), 'UTF8')"


def arm_statement(tenant_id: str, actor_kind: str | None, actor_id: str | None) -> str:
    """The ``arm`` query (eventstore/queries.sql) with its values written in: for the
    one place it cannot take parameters, in the same message as ``BEGIN``."""
    return (f"SELECT set_config('app.tenant_id', {_text_literal(tenant_id)}, true), "
            f"set_config('app.actor_kind', {_text_literal(actor_kind or '')}, true), "
            f"set_config('app.actor_id', {_text_literal(actor_id or '')}, true);")


class StoreConnection(asyncpg.Connection):  # type: ignore[misc]  # asyncpg is untyped
    """A connection that can arm a transaction in the same round trip as its BEGIN.

    A unit of work used to pay a round trip for ``BEGIN`` and another for arming
    tenant and actor (one of four for a command's append; sending them together
    measured +8-12% session appends/s, docs/performance.md). ``begin_armed`` stages
    the arming statement; the next ``BEGIN`` that asyncpg's
    ``Connection.transaction()`` sends carries it in the same simple query, so the
    transaction is armed from its first statement on, and nested
    blocks (savepoints) work as before. Fails closed: if a BEGIN ever went out
    without it, the transaction would simply have no tenant (no rows, no writes), and
    ``EventStore.unit_of_work`` checks that the staged statement was sent.
    """

    __slots__ = ("_armed_begin", "_commit_with", "_prepared", "_recount", "prepares")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._armed_begin: str | None = None
        self._commit_with: Statements | None = None
        # The names this connection has PREPAREd (eventstore/literal.py ``prepare``);
        # False for a connection through a transaction-pooling PgBouncer, where the
        # next transaction may run on a server connection that never saw them.
        self._prepared: set[str] = set()
        # A batch failed in a transaction it left aborted: which of its PREPAREs ran is
        # asked of the server in the next transaction that sends one.
        self._recount = False
        self.prepares = True

    def begin_armed(self, statement: str | None) -> None:
        """Stage ``statement`` to follow the next BEGIN (None: unstage)."""
        self._armed_begin = statement

    @property
    def armed_begin_pending(self) -> bool:
        return self._armed_begin is not None

    def commit_with(self, statements: Statements | None) -> None:
        """Stage ``statements`` (query, arguments) to run ahead of the next top-level
        COMMIT, in its message (None: unstage). The server then runs them and commits
        back to back; if one fails, the COMMIT is skipped, the transaction is rolled
        back here and the error raised (eventstore/literal.py says why appends go this
        way).

        Each goes as ``EXECUTE`` of a statement this connection prepared, with its
        values written in, the ``PREPARE`` itself in the same message the first time:
        the server parses a deferred statement once per connection and plans it once
        it has a generic plan, where SQL text with its values written in was parsed
        and planned at every commit (docs/performance.md, "Where a write's database
        time goes"). Without ``prepares``, the statements go as that text."""
        self._commit_with = statements

    async def run_batch(self, statements: Statements) -> None:
        """Run ``statements`` (query, arguments) in one round trip, inside the current
        transaction, as the COMMIT's message would send them (without the COMMIT): the
        deferred writes of a unit of work that reads after them
        (eventstore/staging.py ``flush_writes``). A failure leaves the transaction
        aborted, as any failed statement does, and is raised."""
        if not statements:
            return
        if self._recount:
            await self._recount_prepared()
        message, new = self._commit_message(statements, commit=False)
        try:
            await super().execute(message)
        except asyncpg.PostgresError:
            if new:
                self._recount = True
            raise
        self._prepared.update(new)

    def _commit_message(self, statements: Statements, *, commit: bool = True
                        ) -> tuple[str, list[str]]:
        """The COMMIT's message for ``statements``, and the names it prepares
        (``commit`` False: the same without the COMMIT)."""
        end = ["COMMIT;"] if commit else []
        if not self.prepares:
            return "\n".join([*(statement(q, a) for q, a in statements), *end]), []
        parts: list[str] = []
        new: list[str] = []
        for query, _ in statements:
            name = prepared_name(query)
            if name not in self._prepared and name not in new:
                new.append(name)
                parts.append(prepare(query))
        parts += [execute(q, a) for q, a in statements]
        parts += end
        return "\n".join(parts), new

    async def execute(self, query: str, *args: Any, timeout: float | None = None) -> str:
        staged = self._armed_begin
        if staged is not None and not args and query.startswith("BEGIN"):
            self._armed_begin = None
            query = f"{query} {staged}"
        final = self._commit_with
        if final is not None and not args and query == "COMMIT;":
            # asyncpg's Transaction sends exactly "COMMIT;" for a top-level commit
            # ("RELEASE SAVEPOINT ..." for a nested one, which is left alone).
            self._commit_with = None
            if self._recount:
                await self._recount_prepared()
            message, new = self._commit_message(final)
            try:
                status: str = await super().execute(message, timeout=timeout)
            except asyncpg.PostgresError:
                # The statements failed, so the COMMIT after them never ran: leave the
                # connection out of the aborted transaction before reporting. A
                # PREPARE outlives a rollback, and how far the message got is not
                # known: ask the server which statements it holds.
                await super().execute("ROLLBACK;")
                if new:
                    await self._recount_prepared()
                raise
            self._prepared.update(new)
            return status
        status = await super().execute(query, *args, timeout=timeout)
        return status

    async def _recount_prepared(self) -> None:
        rows = await super().fetch(
            "SELECT name FROM pg_prepared_statements WHERE name LIKE 'hd\\_%'")
        self._prepared = {r["name"] for r in rows}
        self._recount = False


def store_connection(conn: asyncpg.Connection) -> StoreConnection | None:
    """The ``StoreConnection`` itself behind a pool's proxy (None: a connection of
    another class, or a proxy already detached from its connection).

    asyncpg detaches a proxy when its connection is lost; after that, only the
    methods asyncpg's own ``Connection`` defines still answer (with InterfaceError).
    """
    owner = getattr(getattr(conn, "begin_armed", None), "__self__", None)
    return owner if isinstance(owner, StoreConnection) else None


def discard(conn: asyncpg.Connection) -> None:
    """Terminate a pooled connection whose state is unknown, so the pool replaces it
    instead of handing it out again (the server rolls back whatever it had open)."""
    with contextlib.suppress(asyncpg.InterfaceError):  # already gone from its proxy
        conn.terminate()


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Release hook: nothing to undo, so no round trip on release.

    asyncpg's default reset runs ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *;
    RESET ALL`` on every release, a round trip that cost more than the INSERT it
    followed (bench/append.py, raw baseline: 5,230-7,870 inserts/s through a resetting
    pool, 12,565-13,095 on plain connections). Pooled connections here never carry
    session state, the same rule a transaction-pooling PgBouncer imposes: tenant, actor
    and other settings are armed with ``set_config(..., true)``, advisory locks are
    transaction locks, LISTEN has connections of its own, and no cursor outlives its
    transaction. asyncpg still rolls back a transaction left open at release.
    (tests/integration/test_event_store.py checks a released connection comes back
    clean.)
    """


async def connect(dsn: str, *, timeout: float = 5.0) -> asyncpg.Connection:
    """One standalone connection (LISTEN, migrations, operator commands)."""
    try:
        conn: asyncpg.Connection = await asyncpg.connect(
            dsn, timeout=timeout, connection_class=StoreConnection)
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise StoreUnavailable(f"cannot connect to Postgres: {exc}") from exc
    await init_connection(conn)
    return conn


async def create_pool(
    dsn: str,
    *,
    min_size: int = 1,
    max_size: int = 10,
    connect_timeout: float = 5.0,
    command_timeout: float | None = 30.0,
    pgbouncer: bool = False,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> asyncpg.Pool:
    """Create the process's pool.

    ``pgbouncer=True`` turns off asyncpg's named prepared statement cache, which a
    transaction-pooling PgBouncer cannot follow from one server connection to the next.
    """

    async def _init(conn: asyncpg.Connection) -> None:
        await init_connection(conn)
        if pgbouncer and isinstance(conn, StoreConnection):
            conn.prepares = False
        if init is not None:
            await init(conn)

    try:
        pool: asyncpg.Pool = await asyncpg.create_pool(
            dsn,
            min_size=min_size,
            max_size=max_size,
            timeout=connect_timeout,
            command_timeout=command_timeout,
            statement_cache_size=0 if pgbouncer else 256,
            init=_init,
            reset=_keep_session,
            connection_class=StoreConnection,
        )
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise StoreUnavailable(f"cannot connect to Postgres: {exc}") from exc
    return pool
