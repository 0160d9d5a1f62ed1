"""Opaque, tamper-evident keyset cursors: over ``(created_at, id)`` for most lists,
over an integer (seq, version) for the audit lists.

A cursor is ``base64url(position) "." base64url(mac)``: the position is the last row
of the page, and the MAC is HMAC-SHA256 over the
position *and the list's scope* (tenant, list name, filters). So a cursor that was
edited, truncated, or taken from another list, another filter set or another tenant
fails the MAC check and is answered 400 ``invalid_cursor``.

The signing key is ``CURSOR_SECRET`` when set; otherwise the random secret that the
migrations stored in ``instance_secrets`` (one per database), so every API process on
one database agrees on it without configuration (``api.root.load_cursor_codec``). A
per-process random key would break cursors as soon as a load balancer sent the next
page to another process.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, TypeVar
from uuid import UUID

import orjson
from fastapi import Query

from api.http.problems import Problem
from domain.ids import TenantId
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import StoreActor

MAX_CURSOR_LENGTH = 512
DEFAULT_LIMIT = 25
MAX_LIMIT = 100

PageLimit = Annotated[int, Query(ge=1, le=MAX_LIMIT)]
"""The ``limit`` query parameter of every list: 1 to ``MAX_LIMIT`` rows a page."""
PageCursor = Annotated[str | None, Query(max_length=MAX_CURSOR_LENGTH)]
"""The ``cursor`` query parameter of every list: a longer one is no cursor the codec
signed, so it is refused before it is decoded."""

Position = tuple[datetime, UUID]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class PageAsked:
    """The page a list is asked for: at most ``limit`` rows, after ``cursor`` (None: the
    first page)."""

    limit: int
    cursor: str | None


async def page_asked(limit: PageLimit = DEFAULT_LIMIT, cursor: PageCursor = None) -> PageAsked:
    """The ``limit`` and ``cursor`` query parameters of a list, as one value (the
    ``Paging`` dependency of ``api.http.deps``)."""
    return PageAsked(limit, cursor)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    # validate: a character outside the alphabet is an error, not silently skipped (a
    # cursor with junk inserted must not decode as the cursor it was).
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def scope_of(tenant_id: UUID, list_name: str, filters: dict[str, Any]) -> bytes:
    """Canonical bytes naming one list under one filter set for one tenant."""
    return orjson.dumps([str(tenant_id), list_name, filters],
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)


_INVALID = ("the cursor is malformed or does not belong to this list and filter set")


@dataclass(frozen=True, slots=True)
class CursorCodec:
    """Signs and checks cursors with one secret.

    Lists ordered by ``(created_at, id)`` use ``encode``/``decode``; lists ordered by
    an integer (seq, version) use ``encode_int``/``decode_int``. The two kinds are MAC'd
    under different labels, so one can never be passed off as the other.
    """

    secret: bytes

    def _mac(self, label: bytes, scope: bytes, raw: bytes) -> bytes:
        message = label + scope + b"\n" + raw
        return hmac.new(self.secret, message, hashlib.sha256).digest()[:16]

    def _seal(self, label: bytes, scope: bytes, raw: bytes) -> str:
        return f"{_b64(raw)}.{_b64(self._mac(label, scope, raw))}"

    def _open(self, label: bytes, scope: bytes, cursor: str) -> bytes:
        if len(cursor) > MAX_CURSOR_LENGTH:
            raise ValueError("too long")
        raw_text, dot, mac_text = cursor.partition(".")
        if not dot:
            raise ValueError("no signature")
        raw, mac = _unb64(raw_text), _unb64(mac_text)
        if not hmac.compare_digest(mac, self._mac(label, scope, raw)):
            raise ValueError("bad signature")
        return raw

    def encode(self, scope: bytes, position: Position) -> str:
        """The cursor for the page after ``position`` in the list named by ``scope``."""
        at, row_id = position
        return self._seal(b"", scope, orjson.dumps([at.isoformat(), str(row_id)]))

    def decode(self, scope: bytes, cursor: str) -> Position:
        """The position a cursor names; ``Problem(400, invalid_cursor)`` if it is not one
        this list handed out."""
        try:
            at_text, id_text = orjson.loads(self._open(b"", scope, cursor))
            at = datetime.fromisoformat(at_text)
            if at.tzinfo is None:
                raise ValueError("naive time")
            return at, UUID(id_text)
        except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
            raise Problem(400, "invalid_cursor", _INVALID) from exc

    def encode_rank(self, scope: bytes, position: tuple[float, UUID]) -> str:
        """The cursor after ``position`` in a list ordered by (rank, id), search's."""
        rank, row_id = position
        return self._seal(b"rank\n", scope, orjson.dumps([repr(float(rank)), str(row_id)]))

    def decode_rank(self, scope: bytes, cursor: str) -> tuple[float, UUID]:
        """The (rank, id) a cursor names; 400 ``invalid_cursor`` otherwise."""
        try:
            rank_text, id_text = orjson.loads(self._open(b"rank\n", scope, cursor))
            return float(rank_text), UUID(id_text)
        except (ValueError, TypeError, binascii.Error, orjson.JSONDecodeError) as exc:
            raise Problem(400, "invalid_cursor", _INVALID) from exc

    def encode_int(self, scope: bytes, position: int) -> str:
        """The cursor after ``position`` in a list ordered by an integer."""
        return self._seal(b"int\n", scope, str(position).encode("ascii"))

    def decode_int(self, scope: bytes, cursor: str) -> int:
        """The integer position a cursor names; 400 ``invalid_cursor`` otherwise."""
        try:
            position = int(self._open(b"int\n", scope, cursor).decode("ascii"))
            if position < 0:
                raise ValueError("negative")
            return position
        except (ValueError, UnicodeDecodeError, binascii.Error) as exc:
            raise Problem(400, "invalid_cursor", _INVALID) from exc


def paginate(codec: CursorCodec, scope: bytes, rows: Sequence[T], limit: int,
             position: Callable[[T], Position]) -> tuple[list[T], str | None]:
    """Cut ``rows`` (fetched with ``limit + 1``) to one page and sign the next cursor,
    if there is a next page."""
    page, more = _cut(rows, limit)
    return page, codec.encode(scope, position(page[-1])) if more else None


def paginate_int(codec: CursorCodec, scope: bytes, rows: Sequence[T], limit: int,
                 position: Callable[[T], int]) -> tuple[list[T], str | None]:
    """``paginate`` for a list ordered by an integer (seq, version)."""
    page, more = _cut(rows, limit)
    return page, codec.encode_int(scope, position(page[-1])) if more else None


def paginate_rank(codec: CursorCodec, scope: bytes, rows: Sequence[T], limit: int,
                  position: Callable[[T], tuple[float, UUID]]) -> tuple[list[T], str | None]:
    """``paginate`` for a list ordered by (rank, id), best first (search)."""
    page, more = _cut(rows, limit)
    return page, codec.encode_rank(scope, position(page[-1])) if more else None


def _cut(rows: Sequence[T], limit: int) -> tuple[list[T], bool]:
    page = list(rows[:limit])
    return page, len(rows) > limit and bool(page)


def row_position(row: Any) -> Position:
    """The keyset position of a row with ``created_at`` and ``id`` columns."""
    return row["created_at"], row["id"]


def record_position(record: Any) -> Position:
    """The keyset position of a row or of a record with ``created_at`` and ``id``
    attributes (an aggregate's state, before it is rendered as JSON text)."""
    if hasattr(record, "created_at"):
        return record.created_at, record.id
    return row_position(record)


__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "CursorCodec", "PageAsked", "Position", "page_asked",
           "paginate", "personal_list_page", "scope_of", "tenant_list_document", "tenant_list_page",
           "tenant_page_document"]


async def tenant_list_page(
    codec: CursorCodec, store: EventStore, tenant_id: TenantId, list_name: str,
    read: Callable[[UnitOfWork, Position | None, int], Awaitable[Sequence[Any]]],
    asked: PageAsked, *,
    actor: StoreActor | None = None, filters: Mapping[str, str | None] | None = None,
    position: Callable[[Any], Position] = row_position,
) -> tuple[list[Any], str | None]:
    """The page ``asked`` of a tenant list in ``(created_at, id)`` order.

    ``read`` takes a read-only unit of work, the position after which to start (None
    for the first page) and how many rows to fetch. ``filters`` (what narrows the list:
    a contact, a ticket, a session) are part of the cursor's scope, so a cursor serves
    only the list it came from; ``actor`` is who reads (a portal contact or a widget
    session, whom row-level security scopes to their own rows).
    """
    scope = scope_of(tenant_id, list_name, dict(filters or {}))
    after = codec.decode(scope, asked.cursor) if asked.cursor is not None else None
    async with store.unit_of_work(tenant_id, actor, readonly=True) as s:
        rows = await read(s, after, asked.limit + 1)
    return paginate(codec, scope, rows, asked.limit, position)


async def tenant_page_document(
    codec: CursorCodec, store: EventStore, tenant_id: TenantId, list_name: str,
    read: Callable[[UnitOfWork, Position | None, int], Awaitable[Sequence[T]]],
    document: Callable[[T], Any], asked: PageAsked, *,
    actor: StoreActor | None = None, filters: Mapping[str, str | None] | None = None,
    position: Callable[[Any], Position] = row_position,
) -> dict[str, Any]:
    """The page ``asked`` of a tenant list (``tenant_list_page``) as
    ``{"data", "next_cursor"}``, ``document`` rendering each row."""
    page, nxt = await tenant_list_page(codec, store, tenant_id, list_name, read, asked,
                                       actor=actor, filters=filters, position=position)
    return {"data": [document(r) for r in page], "next_cursor": nxt}


async def tenant_list_document(
    codec: CursorCodec, store: EventStore, tenant_id: TenantId, list_name: str,
    rows: Callable[[Any, TenantId, Position | None, int], Awaitable[Sequence[T]]],
    document: Callable[[T], Any], asked: PageAsked, *,
    filters: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The page ``asked``, as ``{"data", "next_cursor"}``, of a tenant list (``tenant_list_page``):
    ``rows`` reads them as ``(conn, tenant, after, n)``, ``document`` renders each. The
    next cursor is taken from the record, not from its document: a document rendered
    as JSON text has its ``created_at`` as a string."""

    async def read(s: UnitOfWork, after: Position | None, n: int) -> list[Any]:
        return list(await rows(s.conn, s.tenant_id, after, n))

    return await tenant_page_document(codec, store, tenant_id, list_name, read, document, asked,
                                      filters=filters, position=record_position)


async def personal_list_page(
    codec: CursorCodec, store: EventStore, tenant_id: TenantId, reader: UUID | None,
    list_name: str,
    rows: Callable[[Any, TenantId, UUID | None, Position | None, int], Awaitable[Sequence[T]]],
    document: Callable[[T], Any], asked: PageAsked,
) -> dict[str, Any]:
    """The page ``asked``, as ``{"data", "next_cursor"}``, of a list of what the tenant shares plus
    what ``reader`` owns (macros, saved views): ``rows`` reads them as
    ``(conn, tenant, reader, after, n)``, ``document`` renders each. The reader is part
    of the cursor's scope: one agent's cursor does not page another's list."""

    def own(conn: Any, tenant: TenantId, after: Position | None, n: int
            ) -> Awaitable[Sequence[T]]:
        return rows(conn, tenant, reader, after, n)

    return await tenant_list_document(codec, store, tenant_id, list_name, own, document,
                                      asked, filters={"reader": str(reader)})
