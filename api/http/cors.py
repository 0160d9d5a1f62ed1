"""Cross-origin calls from browsers (CORS): two kinds, never mixed.

- **The widget's routes** (``/v1/widget/{tenant_id}/...``) answer the origins the
  path's tenant lists in ``widget_origins`` (tenant settings), **without
  credentials**: never ``Access-Control-Allow-Credentials``, the widget sends its
  session token in ``Authorization``, no cookie. A preflight (``OPTIONS`` with
  ``Access-Control-Request-Method``) from a listed origin is a 204 naming it; from any
  other origin, or with none, a 403 ``origin_not_allowed`` with no CORS header. The
  actual calls carry ``Access-Control-Allow-Origin`` when their route found the origin
  allowed (``request.state.allowed_widget_origin``, api/http/widget.py), errors included.
- **Every other route** answers only the front ends of ``CORS_ORIGINS`` (a process
  setting, empty by default), **with credentials** (the refresh cookie): a preflight
  from one of them is a 204, and their calls' answers carry
  ``Access-Control-Allow-Origin`` and ``Access-Control-Allow-Credentials: true``.
  Other origins get no CORS header, so browsers keep their pages from reading answers.

Every answer that depends on ``Origin`` says so with ``Vary: Origin``.
"""

from __future__ import annotations

import re
from uuid import UUID

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http import problems
from api.http.widget import check_call, origin_not_allowed
from domain.ids import TenantId

WIDGET_PATH = re.compile(r"^/v1/widget/(?P<tenant>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-"
                         r"[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?:/|$)")
MAX_AGE = "600"
WIDGET_METHODS = "GET, POST"
WIDGET_HEADERS = "Authorization, Content-Type, Idempotency-Key"
FRONT_END_METHODS = "GET, POST, PUT, PATCH, DELETE"
FRONT_END_HEADERS = "Authorization, Content-Type, Idempotency-Key, If-Match"
EXPOSED = "ETag, Location, Retry-After, RateLimit, RateLimit-Policy"


def _headers(origin: str, *, credentials: bool) -> list[tuple[bytes, bytes]]:
    out = [(b"access-control-allow-origin", origin.encode("latin-1")),
           (b"access-control-expose-headers", EXPOSED.encode())]
    if credentials:
        out.append((b"access-control-allow-credentials", b"true"))
    return out


def _preflight(origin: str, methods: str, headers: str, *, credentials: bool
               ) -> list[tuple[bytes, bytes]]:
    return [(b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-methods", methods.encode()),
            (b"access-control-allow-headers", headers.encode()),
            (b"access-control-max-age", MAX_AGE.encode()),
            (b"vary", b"Origin"),
            *([(b"access-control-allow-credentials", b"true")] if credentials else [])]


async def _send_empty(send: Send, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 204, "headers": headers})
    await send({"type": "http.response.body", "body": b""})


class Cors:
    """ASGI middleware answering preflights and marking answers, as the module says."""

    def __init__(self, app: ASGIApp, front_ends: frozenset[str]) -> None:
        self.app = app
        self.front_ends = front_ends

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        raw = headers.get(b"origin")
        origin = raw.decode("latin-1") if raw else None
        preflight = (scope.get("method") == "OPTIONS"
                     and b"access-control-request-method" in headers)
        path: str = scope.get("path", "")
        match = WIDGET_PATH.match(path)
        if match is not None:
            if preflight:
                await self._widget_preflight(scope, receive, send, match.group("tenant"),
                                             origin)
                return
            await self.app(scope, receive, self._marking(scope, send, None))
            return
        if origin is None or origin not in self.front_ends:
            await self.app(scope, receive, send)
            return
        if preflight:
            await _send_empty(send, _preflight(origin, FRONT_END_METHODS, FRONT_END_HEADERS,
                                               credentials=True))
            return
        await self.app(scope, receive, self._marking(scope, send, origin))

    async def _widget_preflight(self, scope: Scope, receive: Receive, send: Send,
                                tenant: str, origin: str | None) -> None:
        services = scope["state"]["services"]
        listed = origin is not None and (await check_call(
            services, TenantId(UUID(tenant)), origin, None,
            services.clock.now())).origin_listed
        if origin is None or not listed:
            refused = origin_not_allowed(origin)
            await problems.problem_response(
                refused.status, refused.code, refused.detail, instance=scope.get("path"),
                headers={"Vary": "Origin"},
            )(scope, receive, send)
            return
        await _send_empty(send, _preflight(origin, WIDGET_METHODS, WIDGET_HEADERS,
                                           credentials=False))

    @staticmethod
    def _marking(scope: Scope, send: Send, front_end: str | None) -> Send:
        """``send``, adding the CORS headers to the answer's head: a front end's (with
        credentials), or on a widget route the origin its route allowed (without)."""

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                allowed = front_end or (scope.get("state") or {}).get("allowed_widget_origin")
                extra = [(b"vary", b"Origin")]
                if allowed:
                    extra += _headers(allowed, credentials=front_end is not None)
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        return marked


__all__ = ["WIDGET_PATH", "Cors"]
