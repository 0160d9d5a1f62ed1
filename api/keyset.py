"""Opaque, tamper-evident keyset cursors for the admin and audit lists.

A cursor is ``base64url(json) . base64url(hmac)`` over the list's scope (path and
filters) and the last row's key, so a cursor from another list or filter, or an
edited one, is a 400. The signing key lives in the process's services; a cursor
therefore does not outlive the process that issued it unless the key is shared.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from typing import Any

import orjson

from api.bootstrap import Services
from api.problems import Problem

MAX_LIMIT = 200
DEFAULT_LIMIT = 50


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signing_key(services: Services) -> bytes:
    """The process's cursor key (made on first use)."""
    key: bytes = services.extras.setdefault("keyset_cursor_key", secrets.token_bytes(32))
    return key


def encode(key: bytes, scope: str, position: list[Any]) -> str:
    """A cursor that resumes ``scope`` after ``position``."""
    body = orjson.dumps({"s": scope, "p": position})
    mac = hmac.new(key, body, hashlib.sha256).digest()[:16]
    return f"{_b64(body)}.{_b64(mac)}"


def decode(key: bytes, scope: str, cursor: str) -> list[Any]:
    """The position a cursor names; 400 for a malformed, edited or foreign cursor."""
    bad = Problem(400, "invalid_cursor", "the cursor is malformed or belongs to another list")
    body_text, dot, mac_text = cursor.partition(".")
    if not dot or len(cursor) > 1000:
        raise bad
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError) as exc:
        raise bad from exc
    if not hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest()[:16], mac):
        raise bad
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise bad from exc
    if not isinstance(data, dict) or data.get("s") != scope or not isinstance(data.get("p"), list):
        raise bad
    position: list[Any] = data["p"]
    return position
