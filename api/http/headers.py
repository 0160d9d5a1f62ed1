"""Request headers that several routes declare, typed once, and how ``Authorization``
is read."""

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


def bearer_token(header: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer <credential>`` header (the scheme
    in any case, surrounding spaces dropped), or None for a missing header, another
    scheme or an empty credential."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()
