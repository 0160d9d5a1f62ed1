"""Records of the tenant read back from the rows that hold them.

Contacts, organizations, groups, rules, calendars, SLA policies, macros and saved views
each keep their current state as a row whose columns are the domain model's fields;
reading them back (one, locked for a change or not, or a list) is the same step for
all of them.
"""

from __future__ import annotations

from typing import TypeVar

import asyncpg
from pydantic import BaseModel

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


__all__ = ["record_of_row", "records_of_rows"]
