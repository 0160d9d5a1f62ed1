"""``JsonReply``: what a route's work answers, before it becomes a response.

Every route shapes its answer as a ``JsonReply``; a command's answer goes through
``api.http.idempotency``, which records its bytes and may replay them, and a read's
becomes a response at once. Either way the bytes are made once, by ``content``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from fastapi import Response

from api.http.problems import Problem
from projections.views import dumps

T = TypeVar("T")


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


def versioned(status: int, body: Any, version: int, location: str | None = None
              ) -> JsonReply:
    """The answer of one record at ``version``: its ``ETag``, and the ``Location`` of one
    just created."""
    headers = {"ETag": f'"{version}"'}
    if location is not None:
        headers["Location"] = location
    return JsonReply(status, body, headers)


class Record(Protocol):
    @property
    def version(self) -> int: ...


V = TypeVar("V", bound=Record)


@dataclass(frozen=True, slots=True)
class RecordAnswers(Generic[V]):
    """How a route answers one kind of versioned record: ``document`` renders it,
    ``location`` is where one just created is read."""

    document: Callable[[V], Any]
    location: Callable[[V], str]

    def reply(self, record: V) -> JsonReply:
        """The record at its version: 200 with its ``ETag``."""
        return versioned(200, self.document(record), record.version)

    def created(self, record: V) -> JsonReply:
        """The record just created: 201 with its ``ETag`` and ``Location``."""
        return versioned(201, self.document(record), record.version, self.location(record))


def present(record: T | None, detail: str) -> T:
    """The record read, or the 404 problem saying it is not there."""
    if record is None:
        raise Problem(404, "not_found", detail)
    return record


__all__ = ["JsonReply", "RecordAnswers", "json_response", "present", "versioned"]
