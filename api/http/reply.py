"""``JsonReply``: what a route's work answers, before it becomes a response.

Every route shapes its answer as a ``JsonReply``; a command's answer goes through
``api.http.idempotency``, which records its bytes and may replay them, and a read's
becomes a response at once. Either way the bytes are made once, by ``content``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import Response

from api.http.problems import Problem
from projections.views import dumps


@dataclass(frozen=True, slots=True)
class JsonReply:
    """An answer a route produced, before it becomes a response.

    ``secret_lost`` marks an answer that holds a secret: its record keeps the answer
    only sealed, and a replay that cannot open the seal answers this problem instead
    (it should name what the first request created, so the client can undo it).
    """

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)
    secret_lost: Problem | None = None

    def content(self) -> bytes:
        return dumps(self.body)

    def response(self) -> Response:
        return json_response(self.status, self.content(), self.headers)


def json_response(status: int, content: bytes, headers: dict[str, str], *,
                  replayed: bool = False) -> Response:
    """A JSON response of bytes already made (``Idempotent-Replayed`` on a replay)."""
    headers = dict(headers)
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    return Response(content, status_code=status, media_type="application/json",
                    headers=headers)


__all__ = ["JsonReply", "json_response"]
