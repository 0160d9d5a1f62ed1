"""Reading the inline read model of what is shared by the tenant or personal to one
agent: ``macros`` and ``saved_views`` (``projections.macros``,
``projections.saved_views``).

Each table's ``queries.sql`` names its statements after the record: ``get_<r>``,
``<r>_for_update``, ``list_<r>s`` and ``delete_<r>``, with the same arguments in every
table. Every read but the locked one names the reading agent: another agent's
personal record is not found, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from domain.ids import TenantId
from eventstore.types import Write
from projections.rows import record_of_row, records_of_rows

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class OwnedRows(Generic[T]):
    """The reads and the deletion of one table of owned records: ``record`` names its
    statements in ``queries``, ``model`` is the record each row validates as."""

    queries: Mapping[str, str]
    record: str
    model: type[T]

    async def load(self, conn: asyncpg.Connection, tenant_id: TenantId, record_id: UUID,
                   reader: UUID | None) -> T | None:
        """The record, if the reader may see it."""
        return await record_of_row(conn, self.model, self.queries[f"get_{self.record}"],
                                   tenant_id, record_id, reader)

    async def for_update(self, conn: asyncpg.Connection, tenant_id: TenantId,
                         record_id: UUID) -> T | None:
        """The record whoever owns it, its row locked until commit (a change's state)."""
        return await record_of_row(conn, self.model, self.queries[f"{self.record}_for_update"],
                                   tenant_id, record_id)

    async def delete(self, write: Write, tenant_id: TenantId, record_id: UUID) -> None:
        await write(self.queries[f"delete_{self.record}"], tenant_id, record_id)

    async def page(self, conn: asyncpg.Connection, tenant_id: TenantId, reader: UUID | None,
                   after: tuple[datetime, UUID] | None, limit: int) -> list[T]:
        """The shared records and the reader's own, in ``(created_at, id)`` order."""
        at, last = after if after is not None else (None, None)
        return await records_of_rows(conn, self.model, self.queries[f"list_{self.record}s"],
                                     tenant_id, reader, at, last, limit)


__all__ = ["OwnedRows"]
