"""The file of a ``multipart/form-data`` body, streamed: its part's headers, then its
bytes as they arrive, never the whole body in memory.

Only what an upload needs: the first part that has a ``filename`` is the file; parts
before it (form fields) are skipped, and what follows it is not read. A body that ends
before the file's closing boundary is ``MultipartError`` (an upload cut off: nothing is
stored).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from email.message import Message

HEADERS_MAX = 16 * 1024
"""Bytes a part's headers (or a skipped field) may take."""


class MultipartError(ValueError):
    """The body is not the multipart/form-data it says it is (or is cut short)."""


@dataclass(frozen=True, slots=True)
class FilePart:
    """The file's name and declared type, and its bytes as they arrive."""

    filename: str
    content_type: str | None
    data: AsyncIterator[bytes]


def boundary_of(content_type: str) -> bytes | None:
    """The boundary of a ``multipart/form-data`` Content-Type (None: not one)."""
    message = Message()
    message["content-type"] = content_type
    if message.get_content_type() != "multipart/form-data":
        return None
    boundary = message.get_param("boundary")
    if not isinstance(boundary, str) or not 1 <= len(boundary) <= 70:
        raise MultipartError("a multipart/form-data body needs a boundary of 1 to 70 "
                             "characters")
    return boundary.encode("latin-1")


class _Reader:
    def __init__(self, body: AsyncIterator[bytes]) -> None:
        self.body = body
        self.buffer = bytearray()
        self.ended = False

    async def more(self) -> None:
        if self.ended:
            raise MultipartError("the body ended before its closing boundary")
        try:
            self.buffer += await anext(self.body)
        except StopAsyncIteration:
            self.ended = True
            raise MultipartError("the body ended before its closing boundary") from None

    async def until(self, marker: bytes, limit: int) -> bytes:
        """Everything up to ``marker`` (consumed, not returned), at most ``limit``."""
        while (i := self.buffer.find(marker)) < 0:
            if len(self.buffer) > limit + len(marker):
                raise MultipartError("a part's headers are too long")
            await self.more()
        if i > limit:
            raise MultipartError("a part's headers are too long")
        out = bytes(self.buffer[:i])
        del self.buffer[:i + len(marker)]
        return out


def _headers(raw: bytes) -> Message:
    message = Message()
    for line in raw.decode("utf-8", "replace").split("\r\n"):
        name, sep, value = line.partition(":")
        if not sep:
            raise MultipartError("a part's header line has no colon")
        message[name.strip()] = value.strip()
    return message


async def file_part(body: AsyncIterator[bytes], boundary: bytes) -> FilePart:
    """The first file of the body (see the module's docstring)."""
    reader = _Reader(body)
    delimiter = b"--" + boundary
    await reader.until(delimiter, HEADERS_MAX)  # the preamble
    separator = b"\r\n" + delimiter
    while True:
        while len(reader.buffer) < 2:
            await reader.more()
        if reader.buffer[:2] == b"--":
            raise MultipartError("the body holds no file part")
        if reader.buffer[:2] != b"\r\n":
            raise MultipartError("a boundary must end its line")
        del reader.buffer[:2]
        headers = _headers(await reader.until(b"\r\n\r\n", HEADERS_MAX))
        disposition = Message()
        disposition["content-disposition"] = headers.get("content-disposition", "")
        filename = disposition.get_param("filename", header="content-disposition")
        if isinstance(filename, tuple):  # RFC 2231 (filename*=): decoded
            filename = str(filename[2])
        if filename is None:
            await reader.until(separator, HEADERS_MAX)  # a form field: skipped
            continue
        declared = headers.get("content-type")
        return FilePart(str(filename), declared, _data(reader, separator))


async def _data(reader: _Reader, separator: bytes) -> AsyncIterator[bytes]:
    """The part's bytes up to the separator; a tail as long as the separator is held
    back until the next read shows whether it begins the separator."""
    keep = len(separator) - 1
    while True:
        i = reader.buffer.find(separator)
        if i >= 0:
            if i:
                yield bytes(reader.buffer[:i])
            return
        if len(reader.buffer) > keep:
            cut = len(reader.buffer) - keep
            yield bytes(reader.buffer[:cut])
            del reader.buffer[:cut]
        await reader.more()


__all__ = ["FilePart", "MultipartError", "boundary_of", "file_part"]
