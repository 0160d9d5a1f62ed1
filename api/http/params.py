"""Query parameter types the routes share."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated

from pydantic import AwareDatetime, BeforeValidator

_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")


def _not_a_number(value: object) -> object:
    """Refuse a bare number where a date or time is asked for.

    pydantic reads a number as a Unix timestamp, so ``to=0`` would quietly mean
    1970-01-01 and ``created_after=1700000000`` a moment in 2023; the API documents
    ISO 8601 only, and says so when it gets something else.
    """
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number or (isinstance(value, str) and _NUMBER.fullmatch(value)):
        raise ValueError("expected an ISO 8601 date or date-time, not a number")
    return value


IsoDate = Annotated[date, BeforeValidator(_not_a_number)]
"""A calendar day, ``YYYY-MM-DD``."""

IsoDateTime = Annotated[datetime, BeforeValidator(_not_a_number)]
"""An ISO 8601 date-time; without an offset it is read as UTC by the route."""

IsoAwareDateTime = Annotated[AwareDatetime, BeforeValidator(_not_a_number)]
"""An ISO 8601 date-time with its offset."""
