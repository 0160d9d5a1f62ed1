"""Files on messages: what an attachment is, and the rules its name and type keep.

An attachment is an upload attached to one message. Its events carry its identity
(``AttachmentRef``: id, name, size, type, sha256), never its bytes, so the hash chain
covers which file a message had, and the stored bytes can be checked against it.

Pure: the name rules, the type read from a file's first bytes (its magic numbers),
and which types may ever be shown inline (safe raster images, never SVG or HTML).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from uuid import UUID

from domain.errors import ValidationFailed
from domain.frozen import Frozen

NAME_MAX = 255
"""The longest file name kept, in characters."""
TYPE_MAX = 127

DEFAULT_MAX_FILE_BYTES = 20 * 1024 * 1024
DEFAULT_PER_MESSAGE = 20

MAX_FILE_BYTES_CAP = 1024 * 1024 * 1024
"""The largest ``max_file_bytes`` a tenant may set (1 GiB)."""
PER_MESSAGE_CAP = 100

OCTET_STREAM = "application/octet-stream"

INLINE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The only types ever sent inline: raster images a browser cannot run."""


@dataclass(frozen=True, slots=True)
class FileLimits:
    """A tenant's limits on files (its settings' ``attachments``): a file's size, and
    how many files one message carries."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    per_message: int = DEFAULT_PER_MESSAGE

    def __post_init__(self) -> None:
        if not 1 <= self.max_file_bytes <= MAX_FILE_BYTES_CAP:
            raise ValidationFailed(f"max_file_bytes is 1 to {MAX_FILE_BYTES_CAP}",
                                   field="attachments.max_file_bytes")
        if not 0 <= self.per_message <= PER_MESSAGE_CAP:
            raise ValidationFailed(f"per_message is 0 to {PER_MESSAGE_CAP}",
                                   field="attachments.per_message")

    def document(self) -> dict[str, int]:
        return {"max_file_bytes": self.max_file_bytes, "per_message": self.per_message}


class AttachmentRef(Frozen):
    """One file on a message, as its event records it."""

    id: UUID
    name: str
    size: int
    type: str
    sha256: str
    """Hex digest of the file's bytes."""


class TicketFile(AttachmentRef):
    """A file on one of a ticket's messages, as the ticket lists it: its message's
    ``AttachmentRef`` and that message's id."""

    message_id: UUID


# Characters a file name may not hold: control characters (C0, C1, DEL) and the
# bidirectional overrides and isolates that make "gpj.exe" read as "exe.jpg".
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"
                  "\u061c")


def check_name(name: str) -> str:
    """A file name as it is kept: NFC, trimmed; refused (``ValidationFailed`` on
    ``name``) when empty, longer than ``NAME_MAX``, holding a path (a slash or
    backslash, or being ``.`` or ``..``), a control character or a bidirectional
    override."""
    value = unicodedata.normalize("NFC", name).strip()
    if not value:
        raise ValidationFailed("a file needs a name", field="name")
    if len(value) > NAME_MAX:
        raise ValidationFailed(f"a file name is at most {NAME_MAX} characters", field="name")
    if "/" in value or "\\" in value or value in (".", ".."):
        raise ValidationFailed("a file name cannot hold a path", field="name")
    for ch in value:
        if ch in _BIDI:
            raise ValidationFailed("a file name cannot hold a bidirectional override",
                                   field="name")
        if unicodedata.category(ch) == "Cc":
            raise ValidationFailed("a file name cannot hold control characters",
                                   field="name")
    return value


_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")


def check_type(declared: str | None) -> str | None:
    """A declared media type in its canonical form (lower case, no parameters); None
    when none was declared; ``ValidationFailed`` on ``content_type`` when malformed."""
    if declared is None:
        return None
    value = declared.split(";", 1)[0].strip().lower()
    if not value:
        return None
    if len(value) > TYPE_MAX or not _TYPE.match(value):
        raise ValidationFailed(f"{declared[:40]!r} is not a media type", field="content_type")
    return value


_MAGIC: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"%PDF-", 0, "application/pdf"),
    (b"PK\x03\x04", 0, "application/zip"),
    (b"\x1f\x8b", 0, "application/gzip"),
)
SNIFFED = frozenset({t for _, _, t in _MAGIC} | {"image/webp"})
"""The types the bytes themselves say: a file declared as one of them must be one."""

SNIFF_BYTES = 16
"""How many leading bytes ``sniff`` reads."""


def sniff(head: bytes) -> str | None:
    """The type a file's first bytes announce (None: none that is known)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    for magic, offset, type_ in _MAGIC:
        if head[offset:offset + len(magic)] == magic:
            return type_
    return None


def settle_type(declared: str | None, head: bytes) -> str:
    """The type a file is kept as: what its bytes say, else what was declared, else
    ``application/octet-stream``. A declared type the bytes contradict (an image that
    is not one, a PNG declared as text) is refused (``ValidationFailed`` on
    ``content_type``): a type is never taken on trust where the bytes can tell."""
    found = sniff(head)
    if found is not None:
        if declared not in (None, found, OCTET_STREAM):
            raise ValidationFailed(f"the file is {found}, not {declared}",
                                   field="content_type")
        return found
    if declared in SNIFFED:
        raise ValidationFailed(f"the file's bytes are not {declared}", field="content_type")
    return declared or OCTET_STREAM


def safe_name(name: str) -> str:
    """An ASCII fallback of a file name for ``Content-Disposition``'s ``filename``
    (the exact name travels as ``filename*``): letters, digits and ``._-`` kept, the
    rest ``_``."""
    ascii_ = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    out = re.sub(r"[^A-Za-z0-9._-]", "_", ascii_).strip("._") or "file"
    return out[:NAME_MAX]


def check_attachments(ids: list[UUID] | tuple[UUID, ...], per_message: int) -> None:
    """A message's upload ids: none twice, at most ``per_message``."""
    if len(set(ids)) != len(ids):
        raise ValidationFailed("the same upload is attached twice", field="attachments")
    if len(ids) > per_message:
        raise ValidationFailed(
            f"a message holds at most {per_message} attachments (the tenant's "
            "attachments.per_message)", field="attachments")


__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_PER_MESSAGE",
    "INLINE_TYPES",
    "MAX_FILE_BYTES_CAP",
    "NAME_MAX",
    "OCTET_STREAM",
    "PER_MESSAGE_CAP",
    "SNIFFED",
    "SNIFF_BYTES",
    "AttachmentRef",
    "FileLimits",
    "TicketFile",
    "check_attachments",
    "check_name",
    "check_type",
    "safe_name",
    "settle_type",
    "sniff",
]
