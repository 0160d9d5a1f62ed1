"""A record of the tenant read back from the one row that holds it.

Contacts, organizations, groups, rules, calendars, SLA policies, macros and saved views
each keep their current state as a row whose columns are the domain model's fields;
reading one back (plain, or locked for a change) is the same step for all of them.
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


__all__ = ["record_of_row"]
