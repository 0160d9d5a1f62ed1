"""The asyncpg pool: one per process, with a jsonb codec installed on each connection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import orjson

from eventstore.errors import StoreUnavailable


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
        conn: asyncpg.Connection = await asyncpg.connect(dsn, timeout=timeout)
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
        )
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        raise StoreUnavailable(f"cannot connect to Postgres: {exc}") from exc
    return pool
