"""Just enough IMAP (RFC 9051, IDLE from RFC 2177) over asyncio to wait for new mail.

The poller (handlers/mail_poll.py) fetches with the standard library's ``imaplib``,
which blocks and has no IDLE before Python 3.14; a session that sits in IDLE for
minutes must be cancellable at once (a stopping worker, a lost lease), so it is a
coroutine here. It logs in, reads the capabilities, ``EXAMINE``s the folder (read-only:
waiting marks nothing) and then idles, answering each untagged ``EXISTS``. It never
fetches a message.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from dataclasses import dataclass

from handlers.mailboxes import ImapAccess

LINE_LIMIT = 64 * 1024
_TAGGED = re.compile(rb"^(A\d+) (OK|NO|BAD)\b(.*)", re.IGNORECASE | re.DOTALL)
_CODE = re.compile(rb"\[(UIDVALIDITY|UIDNEXT) (\d+)\]", re.IGNORECASE)
_EXISTS = re.compile(rb"^\* (\d+) EXISTS", re.IGNORECASE)
_LITERAL = re.compile(rb"\{(\d+)\}\r\n$")


class ImapRefused(Exception):
    """The server said NO or BAD, or closed the connection."""


@dataclass(frozen=True, slots=True)
class Folder:
    """What ``EXAMINE`` told of the folder."""

    uidvalidity: int | None
    uidnext: int | None
    exists: int


class IdleSession:
    """One connection, logged in, one folder examined; ``wait`` idles on it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.capabilities: set[str] = set()
        self._tag = 0

    @classmethod
    async def open(cls, access: ImapAccess, timeout: float) -> IdleSession:
        context = ssl.create_default_context()
        reader, writer = await asyncio.wait_for(asyncio.open_connection(
            access.host, access.port, ssl=context if access.security == "tls" else None,
            limit=LINE_LIMIT), timeout)
        session = cls(reader, writer)
        try:
            async with asyncio.timeout(timeout):
                greeting = await session._line()
                if not greeting.upper().startswith(b"* OK"):
                    raise ImapRefused(f"greeting {greeting[:100]!r}")
                if access.security == "starttls":
                    await session.command(b"STARTTLS")
                    await writer.start_tls(context)
                await session.command(b"LOGIN " + _astring(access.username) + b" "
                                      + _astring(access.password))
                for line in await session.command(b"CAPABILITY"):
                    if line.upper().startswith(b"* CAPABILITY"):
                        session.capabilities = {
                            w.upper() for w in line[12:].decode("ascii", "replace").split()}
        except BaseException:
            session.close()
            raise
        return session

    async def examine(self, folder: str, timeout: float) -> Folder:
        async with asyncio.timeout(timeout):
            lines = await self.command(b"EXAMINE " + _astring(folder))
        codes = {m.group(1).upper(): int(m.group(2)) for ln in lines
                 for m in [_CODE.search(ln)] if m}
        exists = next((int(m.group(1)) for ln in lines for m in [_EXISTS.match(ln)] if m), 0)
        return Folder(codes.get(b"UIDVALIDITY"), codes.get(b"UIDNEXT"), exists)

    async def idle(self, seconds: float, arrived: asyncio.Event, timeout: float) -> None:
        """Idle for ``seconds`` (then end it with ``DONE``), setting ``arrived`` at each
        ``EXISTS``: the caller re-issues IDLE, as RFC 2177 asks every 29 minutes."""
        tag = self._next_tag()
        await self._send(tag + b" IDLE\r\n")
        async with asyncio.timeout(timeout):
            while not (line := await self._line()).startswith(b"+"):
                self._untagged(line, tag, arrived)
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while (left := until - loop.time()) > 0:
            try:
                async with asyncio.timeout(left):
                    line = await self._line()
            except TimeoutError:
                break
            self._untagged(line, tag, arrived)
        await self._send(b"DONE\r\n")
        async with asyncio.timeout(timeout):
            while not self._untagged(await self._line(), tag, arrived):
                pass

    async def command(self, text: bytes) -> list[bytes]:
        """Send one command; its untagged lines, or ImapRefused."""
        tag = self._next_tag()
        await self._send(tag + b" " + text + b"\r\n")
        lines: list[bytes] = []
        while True:
            line = await self._line()
            done = _TAGGED.match(line)
            if done and done.group(1) == tag:
                if done.group(2).upper() != b"OK":
                    raise ImapRefused(line[:300].decode("ascii", "replace").strip())
                return lines
            lines.append(line)

    def close(self) -> None:
        self.writer.close()

    def _untagged(self, line: bytes, tag: bytes, arrived: asyncio.Event) -> bool:
        """Note an ``EXISTS``; True at the tagged end of ``tag``."""
        if _EXISTS.match(line):
            arrived.set()
        done = _TAGGED.match(line)
        if done and done.group(1) == tag:
            if done.group(2).upper() != b"OK":
                raise ImapRefused(line[:300].decode("ascii", "replace").strip())
            return True
        if line.upper().startswith(b"* BYE"):
            raise ImapRefused(line[:300].decode("ascii", "replace").strip())
        return False

    def _next_tag(self) -> bytes:
        self._tag += 1
        return b"A%d" % self._tag

    async def _send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def _line(self) -> bytes:
        line = await self.reader.readline()
        if not line:
            raise ImapRefused("the server closed the connection")
        while m := _LITERAL.search(line):  # a literal: its bytes, then the rest of the line
            line += await self.reader.readexactly(int(m.group(1)))
            line += await self.reader.readline()
        return line


def _astring(value: str) -> bytes:
    """A quoted string, or for what a quoted one cannot hold (line breaks, UTF-8) a
    non-synchronizing literal (RFC 7888), which needs no wait for the server's ``+``."""
    raw = value.encode("utf-8")
    if b"\r" in raw or b"\n" in raw or any(b > 0x7E for b in raw):
        return b"{%d+}\r\n" % len(raw) + raw
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


__all__ = ["Folder", "IdleSession", "ImapRefused"]
