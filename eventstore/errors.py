"""Errors raised by the event store.

Driver errors never leave this package raw: they become one of these, raised
``from`` the original so the cause stays visible in tracebacks.
"""

from __future__ import annotations

import asyncpg


class EventStoreError(Exception):
    """Base class of every error the event store raises."""

    code = "event_store_error"


class ConcurrencyError(EventStoreError):
    """The stream moved on: the caller's expected version is not the current one."""

    code = "version_conflict"

    def __init__(self, stream_id: object, expected: int | None, actual: int | None) -> None:
        super().__init__(
            f"stream {stream_id}: expected version {expected}, found {actual}"
        )
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class MissingContext(EventStoreError):
    """A write was attempted without a tenant or actor armed in the transaction."""

    code = "missing_context"


class ImmutableEvents(EventStoreError):
    """Something tried to update, delete or truncate stored events."""

    code = "immutable_events"


class TenantReadOnly(EventStoreError):
    """The tenant's writes are paused (it is being moved to another database): retry
    after ``retry_after`` seconds. Reads go on as usual."""

    code = "tenant_read_only"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class StoreUnavailable(EventStoreError):
    """Postgres could not be reached or did not answer in time."""

    code = "database_unavailable"


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


def translate(exc: BaseException) -> EventStoreError:
    """Turn a driver error raised by the store's SQL into the store's own error."""
    if isinstance(exc, asyncpg.PostgresError):
        code = getattr(exc, "sqlstate", None)
        if code == "HD001" or code == "42501":
            return MissingContext(str(exc))
        if code == "HD003":
            return ImmutableEvents(str(exc))
        if code == "HD005":
            detail = getattr(exc, "detail", None) or ""
            return TenantReadOnly(str(exc), int(detail) if detail.isdigit() else 60)
    if isinstance(exc, UNAVAILABLE):
        return StoreUnavailable(f"database unavailable: {exc}")
    return EventStoreError(str(exc))
