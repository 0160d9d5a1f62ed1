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
