"""Wire models of files: an upload's answer, an attachment as messages carry it, and
the ``attachments`` field of message and ticket bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

MAX_IDS = 100
"""Upload ids a body may name at all; the tenant's ``attachments.per_message`` is the
limit that counts (422 ``too_many_attachments``)."""


def attachments_field() -> list[UUID]:
    """The ``attachments`` field of a body that posts a message."""
    return Field(default_factory=list, max_length=MAX_IDS, description=(
        "Upload ids (`POST /v1/uploads`) this message carries, each attached once; at "
        "most the tenant's `attachments.per_message`."))


def recorded(body: BaseModel) -> dict[str, Any]:
    """A body as its Idempotency-Key record keeps it: without ``attachments`` when it
    names none, so a request recorded before files existed still matches its retry."""
    exclude = set() if getattr(body, "attachments", None) else {"attachments"}
    return body.model_dump(mode="json", exclude=exclude)


class AttachmentOut(BaseModel):
    """A file on a message: its identity, as the message's event records it."""

    id: UUID = Field(description="the upload's id; `GET /v1/attachments/{id}` gives it back")
    name: str
    size: int
    type: str = Field(description="the media type, checked against the file's first bytes")
    sha256: str = Field(description="hex digest of the file's bytes")


class UploadOut(BaseModel):
    id: UUID
    name: str
    size: int
    type: str
    sha256: str
    created_at: datetime


__all__ = ["MAX_IDS", "AttachmentOut", "UploadOut", "attachments_field", "recorded"]
