"""What the parts of a unit of work share: its connection, tenant and keyring, and the
state one part keeps for another (eventstore/store.py ``UnitOfWork`` is made of the parts:
eventstore/staging.py, eventstore/reads.py, eventstore/subject_keys.py and
eventstore/verification.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.keys import Keyring
from eventstore.sealing import Broken
from eventstore.types import NewEvent, RecordedEvent


class UnitState:
    """One transaction on one connection, armed for one tenant: the state every part
    of a unit of work reads, and the methods one part calls on another."""

    conn: asyncpg.Connection
    tenant_id: TenantId
    keyring: Keyring | None
    staged: list[Any]
    writes: list[tuple[str, tuple[Any, ...]]]
    deferring: bool
    _keys: dict[UUID, bytes | None]
    broken: list[Broken]
    stamp: dict[str, Any]
    """Metadata merged into every event this unit of work appends from now on (empty:
    none); an importer names its source and the record's author here."""

    if TYPE_CHECKING:
        # What one part calls on another; each is defined by the part named beside it,
        # and the type checker sees them here so that every part type-checks alone.
        async def write(self, query: str, *args: Any) -> str | None: ...  # staging.py

        async def stream_version(self, stream_id: UUID) -> int: ...  # reads.py

        async def opened(self, rows: Sequence[asyncpg.Record]
                         ) -> list[RecordedEvent]: ...  # subject_keys.py

        async def _opened_rows(self, rows: list[Any]) -> list[Any]: ...  # subject_keys.py

        async def _sealed(self, stream_id: UUID, expected_version: int,
                          events: Sequence[NewEvent]) -> list[NewEvent]: ...  # subject_keys.py


__all__ = ["UnitState"]
