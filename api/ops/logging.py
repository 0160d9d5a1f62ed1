"""Structured logs: one JSON object per line, with request id, tenant and actor.

A request's context lives in a context variable holding a small mutable dict: the
request middleware creates it (with the request id, taken from ``X-Request-Id`` or
made up, and returned in the response), authentication adds the tenant and actor
with ``bind``, and every log line written while serving the request carries them,
whichever logger wrote it. Background loops may ``bind`` their own fields too.
"""

from __future__ import annotations

import logging
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_context: ContextVar[dict[str, Any] | None] = ContextVar("helpdesk_log_context", default=None)

# A client-supplied id is echoed into logs and headers: keep it short and plain.
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

access_log = logging.getLogger("helpdesk.access")


def bind(**fields: Any) -> None:
    """Add fields to the current context (a request's, or a loop's ``context``)."""
    current = _context.get()
    if current is not None:
        current.update({k: v for k, v in fields.items() if v is not None})


def current() -> dict[str, Any]:
    """A copy of the current context's fields."""
    return dict(_context.get() or {})


@contextmanager
def context(**fields: Any) -> Iterator[dict[str, Any]]:
    """Run a block with its own log context (a job, a loop iteration)."""
    token = _context.set({k: v for k, v in fields.items() if v is not None})
    try:
        yield _context.get() or {}
    finally:
        _context.reset(token)


class JsonFormatter(logging.Formatter):
    """Formats a record as one JSON line with the current context's fields."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        line.update(current())
        extra = getattr(record, "fields", None)
        if isinstance(extra, dict):
            line.update(extra)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure(level: str = "info", *, json: bool = True) -> None:
    """Send every logger's lines to stderr, as JSON unless ``json`` is false."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json else logging.Formatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # uvicorn's own access log would duplicate ours, without the context.
    logging.getLogger("uvicorn.access").disabled = True
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


class RequestContext:
    """ASGI middleware: a request id and log context for each request, and one
    access line when it is done."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        supplied = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = supplied if _SAFE_ID.match(supplied) else uuid.uuid4().hex
        started = time.perf_counter()
        status = 0

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"x-request-id", request_id.encode())]}
            await send(message)

        with context(request_id=request_id):
            try:
                await self.app(scope, receive, send_with_id)
            finally:
                access_log.info(
                    "%s %s %s", scope.get("method", "WS"), scope.get("path", ""), status,
                    extra={"fields": {
                        "method": scope.get("method", "WS"), "path": scope.get("path", ""),
                        "status": status,
                        "duration_ms": round((time.perf_counter() - started) * 1000, 2),
                    }},
                )
