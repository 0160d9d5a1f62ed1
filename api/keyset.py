"""Opaque, tamper-evident cursors for lists ordered by an integer (seq, version).

``api.pagination`` signs ``(created_at, id)`` positions; the audit lists walk by seq or
version instead. These cursors use the same signing secret and the same scope bytes
(tenant, list, filters), so a cursor edited, truncated or taken from another list,
filter set or tenant is a 400 ``invalid_cursor`` here too.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

from api.bootstrap import Services
from api.pagination import MAX_CURSOR_LENGTH, cursor_codec
from api.problems import Problem


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(secret: bytes, scope: bytes, raw: bytes) -> bytes:
    # A distinct label keeps these MACs apart from api.pagination's over the same scope.
    return hmac.new(secret, b"seq\n" + scope + b"\n" + raw, hashlib.sha256).digest()[:16]


async def signing_secret(services: Services) -> bytes:
    """The secret every API process on this database shares for cursors."""
    return (await cursor_codec(services)).secret


def encode(secret: bytes, scope: bytes, position: int) -> str:
    """A cursor that resumes the list named by ``scope`` after ``position``."""
    raw = str(position).encode()
    return f"{_b64(raw)}.{_b64(_mac(secret, scope, raw))}"


def decode(secret: bytes, scope: bytes, cursor: str) -> int:
    """The position a cursor names; 400 for a malformed, edited or foreign cursor."""
    try:
        if len(cursor) > MAX_CURSOR_LENGTH:
            raise ValueError("too long")
        raw_text, dot, mac_text = cursor.partition(".")
        if not dot:
            raise ValueError("no signature")
        raw, mac = _unb64(raw_text), _unb64(mac_text)
        if not hmac.compare_digest(mac, _mac(secret, scope, raw)):
            raise ValueError("bad signature")
        position = int(raw.decode("ascii"))
        if position < 0:
            raise ValueError("negative")
        return position
    except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
        raise Problem(400, "invalid_cursor",
                      "the cursor is malformed or does not belong to this list "
                      "and filter set") from exc
