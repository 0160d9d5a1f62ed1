"""The console: the pages people use, served by the API at ``/console/``.

Plain files shipped in the package (``static/``: HTML, CSS and JavaScript modules, no
build step); the browser talks to the same API as every client, with the credential
a person signs in with. Every answer carries a strict Content-Security-Policy: the
pages load and connect to this origin only, run no inline script or style, and
cannot be framed, so a key pasted into the page goes nowhere but the API.

A static mount, not an API route: it is in neither the OpenAPI document nor the
authorization table (the files hold no data; the API behind them checks every call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from fastapi import FastAPI
from starlette.responses import PlainTextResponse
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).with_name("static")
PREFIX = "/console"

def page_policy(images: str) -> str:
    """The Content-Security-Policy of a mount of pages: self only, but for the image
    sources ``images`` (besides ``'self'``)."""
    return ("default-src 'none'; script-src 'self'; style-src 'self'; "
            f"img-src 'self' {images}; connect-src 'self'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")


CSP = page_policy("blob:")
"""The console's: ``connect-src 'self'`` covers the API and its WebSocket on this
origin; ``blob:`` images are the thumbnails of attached files, fetched with the
session's credential (api/console/static/js/views/files.js)."""

def security_headers(csp: str = CSP) -> tuple[tuple[bytes, bytes], ...]:
    """The headers of every answer of a mount of pages, under the policy ``csp``."""
    return ((b"content-security-policy", csp.encode()), *HEADERS[1:])


HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    # Revalidated on every load (ETag and Last-Modified make that a 304): an upgraded
    # server's pages are never mixed with a cached older script.
    (b"cache-control", b"no-cache"),
)


@dataclass(frozen=True, slots=True)
class _Route:
    """What the request metrics label a mount's requests with (one label for every
    file, so the label set stays bounded)."""

    path: str = PREFIX + "/{path}"


TENANT_SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")
"""A tenant's slug or id as the first segment of a path (``/portal/<tenant>/``)."""


class PageFiles:
    """Static files with the pages' security headers on every answer: the console's
    own by default; ``packages`` adds the files of installed packages
    (``(package, folder)``) under ``prefix`` (the API reference at ``/docs``).

    ``tenant_segment``: the first segment of the path names a tenant and is no part of
    the file's path, so every tenant's pages are the same files (``/portal/acme/``
    and ``/portal/acme/js/main.js`` are ``index.html`` and ``js/main.js``); the page
    reads its tenant from its own address. A segment that cannot be a slug or an id
    is a 404."""

    def __init__(self, directory: Path = STATIC, *, prefix: str = PREFIX,
                 packages: list[str | tuple[str, str]] | None = None,
                 csp: str = CSP, tenant_segment: bool = False) -> None:
        self.files: ASGIApp = StaticFiles(directory=directory, packages=packages, html=True)
        self.route = _Route(prefix + ("/{tenant}/{path}" if tenant_segment else "/{path}"))
        self.headers = security_headers(csp)
        self.tenant_segment = tenant_segment

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self.route
        if self.tenant_segment and scope["type"] == "http":
            root, path = scope.get("root_path", ""), scope["path"]
            tenant, _, _ = path.removeprefix(root).lstrip("/").partition("/")
            if not TENANT_SEGMENT.fullmatch(tenant):
                await PlainTextResponse("Not Found", 404,
                                        headers=dict(_decoded(self.headers)))(
                    scope, receive, send)
                return
            scope = {**scope, "root_path": scope.get("root_path", "") + "/" + tenant}

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in self.headers}
                message["headers"] = [
                    *(h for h in message.get("headers", []) if h[0].lower() not in names),
                    *self.headers]
            await send(message)

        await self.files(scope, receive, with_headers)


def _decoded(headers: tuple[tuple[bytes, bytes], ...]) -> list[tuple[str, str]]:
    return [(k.decode(), v.decode()) for k, v in headers]


def mount(app: FastAPI) -> None:
    """Serve the console at ``/console/`` (``/console`` redirects there)."""
    app.mount(PREFIX, PageFiles(), name="console")


__all__ = ["CSP", "STATIC", "PageFiles", "mount", "page_policy", "security_headers"]
