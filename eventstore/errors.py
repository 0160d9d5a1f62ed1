"""Errors raised by the event store.

Driver errors never leave this package raw: they become one of these, raised
``from`` the original so the cause stays visible in tracebacks.
"""

from __future__ import annotations


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


class StoreUnavailable(EventStoreError):
    """Postgres could not be reached or did not answer in time."""

    code = "database_unavailable"
