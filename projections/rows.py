"""Records of the tenant read back from the rows that hold them.

Contacts, organizations, groups, rules, calendars, SLA policies, macros and saved views
each keep their current state as a row whose columns are the domain model's fields;
reading them back (one, locked for a change or not, or a list) is the same step for
all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar
from uuid import UUID

import asyncpg
from pydantic import BaseModel

from domain.ids import TenantId

M = TypeVar("M", bound=BaseModel)


async def record_of_row(conn: asyncpg.Connection, model: type[M], query: str,
                        *args: object) -> M | None:
    """The ``model`` the row of ``query`` holds, or None when there is no row."""
    row = await conn.fetchrow(query, *args)
    return None if row is None else model.model_validate(dict(row))


async def records_of_rows(conn: asyncpg.Connection, model: type[M], query: str,
                          *args: object) -> list[M]:
    """The ``model`` of each row of ``query``, in the rows' order."""
    return [model.model_validate(dict(r)) for r in await conn.fetch(query, *args)]


@dataclass(frozen=True, slots=True)
class RecordRows(Generic[M]):
    """A table of one row per record of ``model``, read by id with ``read``, or with
    ``locked`` when a change is decided on the row (locked until commit); both take
    ``$1`` tenant_id and ``$2`` the record's id."""

    model: type[M]
    read: str
    locked: str

    async def load(self, conn: asyncpg.Connection, tenant_id: TenantId, record_id: UUID, *,
                   for_update: bool = False) -> M | None:
        """The record as its row holds it; ``for_update`` locks the row until commit."""
        return await record_of_row(conn, self.model, self.locked if for_update else self.read,
                                   tenant_id, record_id)


__all__ = ["RecordRows", "record_of_row", "records_of_rows"]
