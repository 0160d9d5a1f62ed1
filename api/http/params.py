"""Query parameter types the routes share.

Dates and times: ISO 8601 only (a bare number is refused, not read as a Unix
timestamp); a date-only parameter takes ``YYYY-MM-DD`` and nothing more (a time would
otherwise be dropped without a word); a date-time whose UTC instant falls outside the
years 1 to 9999 is refused, since no Python or database arithmetic on it is safe.
Event type names are checked against the known types, as ``PUT /v1/webhooks`` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from datetime import UTC, date, datetime
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, WithJsonSchema

from domain.event_types import EVENT_TYPES, STREAM_KINDS

_NUMBER = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


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


def _date_only(value: object) -> object:
    """Refuse a date-time where a calendar day is asked for: pydantic would take
    ``2026-12-01T00:00:00Z`` as the day and silently drop the rest."""
    if isinstance(value, str) and not _DATE_ONLY.fullmatch(value):
        raise ValueError("expected a date, YYYY-MM-DD, without a time")
    return value


def _utc_in_range(value: datetime) -> datetime:
    """Refuse an instant whose UTC reading is outside the years 1 to 9999
    (``0001-01-01T00:00:00+15:00`` is in year 0 in UTC)."""
    if value.utcoffset() is not None:
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise ValueError("the instant falls outside the years 1 to 9999 in UTC") from None
    return value


IsoDate = Annotated[date, BeforeValidator(_date_only), BeforeValidator(_not_a_number)]
"""A calendar day, ``YYYY-MM-DD``."""

IsoDateTime = Annotated[datetime, BeforeValidator(_not_a_number),
                        AfterValidator(_utc_in_range)]
"""An ISO 8601 date-time; without an offset it is read as UTC by the route."""

IsoAwareDateTime = Annotated[AwareDatetime, BeforeValidator(_not_a_number),
                             AfterValidator(_utc_in_range)]
"""An ISO 8601 date-time with its offset."""


ANY_OF = ("Any of these: a comma list (`a,b`), repeats (`x=a&x=b`) or both; "
          "every value is checked and honoured.")
"""The description of every list-valued query parameter (``api.http.routing``)."""


def _one_of(names: Collection[str], what: str) -> tuple[AfterValidator, WithJsonSchema]:
    """A check that takes one of ``names`` (and refuses anything else as an unknown
    ``what``), and the parameter as OpenAPI declares it: a string enumerating them."""

    def check(value: str) -> str:
        if value not in names:
            raise ValueError(f"unknown {what} {value!r}")
        return value

    return AfterValidator(check), WithJsonSchema({"type": "string", "enum": sorted(names)})


EventTypeName = Annotated[str, *_one_of(EVENT_TYPES, "event type")]
"""The name of an event type the service records (``TicketOpened``, ...)."""

StreamTypeName = Annotated[str, *_one_of(STREAM_KINDS, "stream type")]
"""The kind of a stream (``ticket``, ``tenant``, ...)."""



_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _id_or(*words: str) -> Callable[[str], str]:
    """A check that takes an id (a UUID) or one of ``words`` and keeps the text given,
    lower-cased. Anything else is refused in plain words, never by the regular
    expression that checks it."""
    allowed = ", ".join(f"`{w}`" for w in words)

    def check(value: str) -> str:
        text = value.strip().lower()
        if text in words or _UUID.fullmatch(text):
            return text
        raise ValueError(f"expected an id (a UUID) or one of {allowed}")

    return check


def _id_or_schema(*words: str) -> WithJsonSchema:
    """The parameter as OpenAPI declares it: one string, a UUID or one of ``words``."""
    return WithJsonSchema({"type": "string", "pattern": f"^({'|'.join(words)}|{_UUID.pattern})$",
                           "description": "a UUID or one of: " + ", ".join(words)})


IdOrNone = Annotated[str, AfterValidator(_id_or("none")), _id_or_schema("none")]
"""An id, or ``none`` (the thing is not set)."""

AgentOrMe = Annotated[str, AfterValidator(_id_or("me", "none")), _id_or_schema("me", "none")]
"""An agent id, ``me`` (the agent calling) or ``none``."""

GroupOrMine = Annotated[str, AfterValidator(_id_or("mine", "none")),
                        _id_or_schema("mine", "none")]
"""A group id, ``mine`` (the groups the calling agent is a member of) or ``none``."""
