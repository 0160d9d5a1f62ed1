"""Request headers that several routes declare, typed once."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header

IdempotencyKey = Annotated[str | None, Header(
    alias="Idempotency-Key", max_length=255, pattern=r"^[\x21-\x7e]+$",
    description="Replays the first answer for 24 hours.")]
IfMatch = Annotated[str | None, Header(
    alias="If-Match", pattern=r'^(\*|(W/)?"\d{1,9}")$',
    description='Run only if the ticket is at this version (its ETag, e.g. "3"); else 412.')]


def idempotency_key(key: IdempotencyKey = None) -> str | None:
    """Declares (and checks the shape of) ``Idempotency-Key`` on a route; the header is
    honoured by ``api.http.commands.run``, which every side-effecting route calls."""
    return key
